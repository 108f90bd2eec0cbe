"""`python -m backend mcp` spawned as an MCP client does it (the official `mcp` client over stdio), against
the test database with the bundled local embedding model; and its refusal to start without a key."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from backend.auth.identity import LOCAL_IDENTITY, user_identity
from tests.auth_tokens import FakeAuthServer, es256
from tests.factories import loaded_document
from tests.fake_http import serve

DOCUMENT = "# 尤金袋鼠\n\n尤金袋鼠分布在澳洲南部岛屿及西岸地区。"


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment an MCP client's configuration gives the server (no developer .env: cwd is empty)."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    return {
        **keep,
        "DATABASE_URL": database_url,
        "EMBEDDING_PROVIDER": "local",
        "LLM_PROVIDER": "extractive",
        **extra,
    }


def payload(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.slow
def test_every_tool_over_stdio_as_the_local_user(make_services, database_url, tmp_path: Path):
    from backend.embeddings import create_embedder

    services = make_services(embedder=create_embedder(_local_settings()))
    summary = services.ingestion.ingest(
        [loaded_document("wallaby", DOCUMENT, "尤金袋鼠")], identity=LOCAL_IDENTITY, atomic=True
    )
    document_id = str(summary.outcomes[0].document_id)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "backend", "mcp"], env=server_env(database_url), cwd=tmp_path
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"search", "ask", "research", "list_documents", "get_document"}
            hits = payload(await client.call_tool("search", {"query": "尤金袋鼠分布在哪些地区？"}))
            assert hits["results"][0]["document_id"] == document_id
            answer = payload(await client.call_tool("ask", {"question": "尤金袋鼠分布在哪些地区？"}))
            assert "尤金袋鼠分布在澳洲南部岛屿及西岸地区。[1]" in answer["answer"]
            assert answer["sources"][0]["external_id"] == "wallaby"
            report = payload(await client.call_tool("research", {"question": "尤金袋鼠分布在哪里？"}))
            assert "澳洲" in report["report"]
            docs = payload(await client.call_tool("list_documents", {}))
            assert [d["title"] for d in docs["items"]] == ["尤金袋鼠"]
            doc = payload(await client.call_tool("get_document", {"document_id": document_id}))
            assert doc["text"] == DOCUMENT
            bad = await client.call_tool("search", {"query": ""})
            assert bad.is_error

    asyncio.run(session())


def test_refuses_to_start_with_supabase_auth_and_no_key(database_url, tmp_path: Path):
    env = server_env(database_url, AUTH_MODE="supabase", SUPABASE_URL="http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, "-m", "backend", "mcp"],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "AUTH_MODE=supabase: set PGRAG_API_KEY" in done.stderr
    assert done.stdout == ""  # nothing on the protocol stream


def test_a_personal_key_makes_the_stdio_server_act_as_its_owner(make_services, database_url, tmp_path: Path):
    """AUTH_MODE=supabase: PGRAG_API_KEY=A's key sees A's private document; B's does not; a key that does
    not exist refuses to start. (list/get only: no query is embedded, the model never loads.)"""
    key = es256("es-stdio")
    with serve(FakeAuthServer([key]).respond) as auth_url:
        services = make_services(auth_mode="supabase", supabase_url=auth_url)
        alice, bob = user_identity(uuid.UUID(int=0xA)), user_identity(uuid.UUID(int=0xB))
        summary = services.ingestion.ingest(
            [loaded_document("secret", "A 的私人笔记：周五交报告。", "A 的笔记")], identity=alice, atomic=True
        )
        secret = str(summary.outcomes[0].document_id)
        key_a, _ = services.api_keys.create(alice, name="stdio", expires_in_days=None)
        key_b, _ = services.api_keys.create(bob, name="stdio", expires_in_days=None)
        auth = {"AUTH_MODE": "supabase", "SUPABASE_URL": auth_url}

        async def as_owner(api_key: str) -> tuple[list[str], CallToolResult]:
            env = server_env(database_url, PGRAG_API_KEY=api_key, **auth)
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "backend", "mcp"], env=env, cwd=tmp_path
            )
            async with Client(params, read_timeout_seconds=120) as client:
                docs = payload(await client.call_tool("list_documents", {}))
                return [d["title"] for d in docs["items"]], await client.call_tool(
                    "get_document", {"document_id": secret}
                )

        titles, read = asyncio.run(as_owner(key_a))
        assert titles == ["A 的笔记"]
        assert payload(read)["text"] == "A 的私人笔记：周五交报告。"
        titles, read = asyncio.run(as_owner(key_b))
        assert titles == []
        assert read.is_error
        assert read.content[0].text.endswith(f"NotFound: document {secret} does not exist")  # type: ignore[union-attr]

        env = server_env(database_url, PGRAG_API_KEY="pgr_" + "x" * 43, **auth)
        done = subprocess.run(
            [sys.executable, "-m", "backend", "mcp"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert "PGRAG_API_KEY is not accepted: the API key is unknown, revoked or expired" in done.stderr
    assert done.stdout == ""


def _local_settings() -> Any:
    from backend.config import Settings

    return Settings(_env_file=None, embedding_provider="local", llm_provider="extractive")
