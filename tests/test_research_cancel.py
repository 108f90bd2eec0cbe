"""A client that leaves a /research stream cancels the run: no more searches or model calls, and the run
row says so. Over real HTTP (uvicorn on 127.0.0.1): the test client cannot disconnect mid-stream."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from backend.api.app import create_app
from backend.testing import ScriptedLLM
from tests.test_research_api import DOCS
from tests.test_research_budget import QUESTION, never_sufficient

PORTS = range(8400, 8500)  # the range this project's helpers may listen on


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 8400-8499")


@contextmanager
def running(app: object) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="warning"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def test_leaving_the_stream_cancels_the_run_and_records_it(make_services):
    # A slow model that never finds the evidence sufficient: without the disconnect the run would go on
    # for comprehensive's whole budget.
    llm = ScriptedLLM(json_completions=never_sufficient(delay_s=0.2))
    services = make_services(llm=llm, research_max_loops=5, research_model_timeout_s=30)
    with running(create_app(services=services)) as base, httpx.Client(base_url=base, timeout=30) as http:
        assert http.post("/documents/batch", json={"documents": DOCS}).status_code == 200
        body = {"question": QUESTION, "preset": "comprehensive", "stream": True}
        with http.stream("POST", "/research", json=body) as response:
            assert response.status_code == 200
            run_id = response.headers["x-research-run-id"]
            seen = []
            for line in response.iter_lines():
                if line.startswith("event: "):
                    seen.append(line.removeprefix("event: "))
                if seen.count("sufficiency") >= 2:
                    break  # the client goes away mid-research
        deadline = time.monotonic() + 15
        while (run := http.get(f"/research/{run_id}").json())["status"] == "running":
            assert time.monotonic() < deadline, "the run went on after the client left"
            time.sleep(0.1)
        assert run["status"] == "cancelled"
        assert run["stop_reasons"] == ["the client disconnected"]
        assert run["result"] is None
        assert run["budget"]["used"]["searches"] < run["budget"]["limits"]["max_searches"]
        calls = len(llm.json_calls)
        time.sleep(1.0)
        assert len(llm.json_calls) <= calls + 1  # at most the call in flight when it was cancelled
        assert http.get("/conversations").json() == []  # nothing stored as a message
