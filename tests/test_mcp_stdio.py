"""`python -m backend mcp` spawned as an MCP client does it (the official `mcp` client over stdio), against
the test database with the bundled local embedding model; and its refusal to start without a key."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from backend.auth.identity import LOCAL_IDENTITY
from tests.factories import loaded_document

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


def _local_settings() -> Any:
    from backend.config import Settings

    return Settings(_env_file=None, embedding_provider="local", llm_provider="extractive")
