"""The MCP server at /mcp of the running API, driven by the official `mcp` client (AUTH_MODE=supabase):
every tool, a 401 without a credential, personal API keys, bad arguments, and one user never seeing
another's document."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult

from backend.auth.identity import user_identity
from backend.testing import ScriptedLLM
from backend.testing.llm import citing_first
from tests.auth_tokens import SERVICE_KEY, FakeAuthServer, es256, mint
from tests.fake_http import serve
from tests.page_server import running_api

A, B = uuid.UUID(int=0xA), uuid.UUID(int=0xB)
TOOLS = {"search", "ask", "research", "list_documents", "get_document"}
SECRET_A = {
    "external_id": "recipe",
    "title": "A 的秘密配方",
    "content": "紫薯芝士蛋糕需要三百克紫薯和两勺蜂蜜。",
}
SHARED = {
    "external_id": "handbook",
    "title": "员工手册",
    "content": "# 员工手册\n\n## 年假\n\n公司每年提供十五天带薪年假。\n\n"
    "## 病假\n\n病假每年十天，需要医院证明。",
}


@dataclass
class Api:
    url: str
    token_a: str
    token_b: str
    services: Any


@pytest.fixture
def api(make_services) -> Iterator[Api]:
    key = es256("es-mcp")
    server = FakeAuthServer([key])
    with serve(server.respond) as auth_url:
        services = make_services(
            llm=ScriptedLLM(answers=citing_first("公司每年提供十五天带薪年假[{n}]。")),
            auth_mode="supabase",
            supabase_url=auth_url,
            service_api_key=SERVICE_KEY,
        )
        issuer = f"{auth_url}/auth/v1"
        with running_api(services) as url:
            yield Api(
                url=url,
                token_a=mint(key, issuer=issuer, sub=str(A), email="a@example.com"),
                token_b=mint(key, issuer=issuer, sub=str(B), email="b@example.com"),
                services=services,
            )


def ingest(api: Api, token: str, doc: dict[str, str]) -> str:
    response = httpx.post(f"{api.url}/documents", json=doc, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return str(response.json()["documents"][0]["document_id"])


def connect(api: Api, token: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(f"{api.url}/mcp", http_client=http))


def payload(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == result.structured_content  # what a model reads is the same JSON
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


def test_without_a_valid_credential_mcp_is_a_401(api):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    response = httpx.post(f"{api.url}/mcp", json=initialize, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    bad = httpx.post(f"{api.url}/mcp", json=initialize, headers={**headers, "Authorization": "Bearer nope"})
    assert bad.status_code == 401
    assert 'error="invalid_token"' in bad.headers["www-authenticate"]
    assert "/mcp" not in httpx.get(f"{api.url}/openapi.json").json()["paths"]


def test_every_tool_over_http_as_the_caller(api):
    ingest(api, SERVICE_KEY, SHARED)
    mine = ingest(api, api.token_a, SECRET_A)
    stored: dict[str, str] = {}

    async def session() -> None:
        async with connect(api, api.token_a) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            described = {t.name: t.description or "" for t in listed.tools}
            assert "use `ask`" in described["search"]
            assert "[n]" in described["ask"]

            hits = payload(await client.call_tool("search", {"query": "紫薯芝士蛋糕要多少紫薯？"}))
            top = hits["results"][0]
            assert (top["title"], top["external_id"], top["document_id"]) == ("A 的秘密配方", "recipe", mine)
            assert isinstance(top["chunk_id"], int)
            assert 0 < top["score"] <= 1
            assert "三百克紫薯" in top["snippet"]

            answer = payload(await client.call_tool("ask", {"question": "每年有几天年假？"}))
            assert answer["answer"] == "公司每年提供十五天带薪年假[1]。"
            assert answer["sources"][0]["title"] == "员工手册"
            assert answer["sources"][0]["cited"]
            follow = payload(
                await client.call_tool(
                    "ask", {"question": "那病假呢？", "conversation_id": answer["conversation_id"]}
                )
            )
            assert follow["conversation_id"] == answer["conversation_id"]
            stored["conversation_id"] = answer["conversation_id"]

            docs = payload(await client.call_tool("list_documents", {}))
            assert {d["title"] for d in docs["items"]} == {"A 的秘密配方", "员工手册"}
            doc = payload(await client.call_tool("get_document", {"document_id": mine}))
            assert doc["text"] == SECRET_A["content"]
            assert doc["next_position"] is None

            steps: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                steps.append((progress, total, message))

            report = payload(
                await client.call_tool(
                    "research", {"question": "年假和病假各有几天？"}, progress_callback=on_progress
                )
            )
            assert report["report"]
            assert report["run_id"]
            assert {src["title"] for src in report["sources"]} == {"员工手册"}  # only what A may read
            assert steps
            assert steps[0][2] is not None
            assert steps[0][2].startswith("planned")
            assert steps[-1][0] == steps[-1][1]  # the last step (writing) completes the total

    asyncio.run(session())
    # ask stored its turns like /chat: the conversation is the caller's, with both exchanges
    headers = {"Authorization": f"Bearer {api.token_a}"}
    conversation = stored["conversation_id"]
    messages = httpx.get(f"{api.url}/conversations/{conversation}/messages", headers=headers).json()
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[1]["sources"][0]["title"] == "员工手册"
    other = httpx.get(
        f"{api.url}/conversations/{conversation}/messages", headers={"Authorization": f"Bearer {api.token_b}"}
    )
    assert other.status_code == 404


def test_another_users_document_does_not_exist_for_them(api):
    secret = ingest(api, api.token_a, SECRET_A)
    key, _ = api.services.api_keys.create(user_identity(B), name="mcp", expires_in_days=None)

    async def as_b(credential: str) -> None:
        async with connect(api, credential) as client:
            docs = payload(await client.call_tool("list_documents", {}))
            assert "A 的秘密配方" not in {d["title"] for d in docs["items"]}
            missing = error_text(await client.call_tool("get_document", {"document_id": secret}))
            assert missing.endswith(f"NotFound: document {secret} does not exist")
            hits = payload(
                await client.call_tool("search", {"query": "紫薯芝士蛋糕要多少紫薯？", "top_k": 10})
            )
            assert "A 的秘密配方" not in {h["title"] for h in hits["results"]}
            answer = payload(await client.call_tool("ask", {"question": "紫薯芝士蛋糕要多少紫薯？"}))
            assert "紫薯" not in answer["answer"]

    asyncio.run(as_b(api.token_b))
    asyncio.run(as_b(key))  # B's personal API key acts as B


def test_bad_arguments_are_tool_errors_with_a_message(api):
    async def session() -> None:
        async with connect(api, api.token_a) as client:
            too_many = error_text(await client.call_tool("search", {"query": "年假", "top_k": 0}))
            assert "top_k: Input should be greater than or equal to 1" in too_many
            unknown = error_text(
                await client.call_tool("search", {"query": "年假", "filters": {"colour": 1}})
            )
            assert "colour" in unknown
            not_an_id = error_text(await client.call_tool("get_document", {"document_id": "nope"}))
            assert not_an_id.startswith("invalid arguments for get_document: document_id: Input should be")
            assert "\n" not in not_an_id
            assert "nope" not in not_an_id  # the input is not echoed
            nul = error_text(await client.call_tool("ask", {"question": "年\x00假"}))
            assert "NUL" in nul
            stranger = error_text(
                await client.call_tool("ask", {"question": "年假？", "conversation_id": str(uuid.uuid4())})
            )
            assert "NotFound" in stranger
            # the server is still there
            assert payload(await client.call_tool("list_documents", {"limit": 1}))["limit"] == 1

    asyncio.run(session())


def test_tool_calls_spend_the_callers_rate_limit(make_services):
    services = make_services(rate_limit_search_per_minute=1)
    with running_api(services) as url:

        async def session() -> None:
            async with Client(f"{url}/mcp") as client:
                assert not (await client.call_tool("search", {"query": "年假"})).is_error
                limited = error_text(await client.call_tool("search", {"query": "年假"}))
                assert "too many search requests: at most 1 a minute" in limited
                assert not (await client.call_tool("list_documents", {})).is_error  # not a search

        asyncio.run(session())


def test_small_talk_through_ask_describes_only_what_the_caller_can_read(api):
    ingest(api, SERVICE_KEY, SHARED)
    ingest(api, api.token_a, SECRET_A)

    async def ask_as(token: str) -> dict[str, Any]:
        async with connect(api, token) as client:
            return payload(await client.call_tool("ask", {"question": "你能做什么？"}))

    a, b = asyncio.run(ask_as(api.token_a)), asyncio.run(ask_as(api.token_b))
    assert "2 篇文档" in a["answer"]
    assert "A 的秘密配方" in a["answer"]
    assert "1 篇文档" in b["answer"]  # RLS: B reads the shared handbook only
    assert "A 的秘密配方" not in b["answer"]
    assert b["sources"] == []
    assert "没有找到" not in b["answer"]
