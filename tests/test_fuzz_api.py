"""Property-based fuzzing of every API operation from the OpenAPI schema (schemathesis), with auth off
and with Supabase tokens: no 5xx, and every answer - errors included - has a documented status and
matches the documented schema. Valid requests (positive) and invalid ones (negative: wrong types,
missing fields, bodies that do not parse) are both sent.

Bounded: FUZZ_EXAMPLES valid and FUZZ_EXAMPLES // 2 invalid examples per operation and auth mode
(about two minutes in all on 2 cores).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from backend.api.app import create_app
from backend.testing import ScriptedLLM
from tests.auth_tokens import FakeAuthServer, es256, mint
from tests.fake_http import serve

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "100"))
EXAMPLES = {GenerationMode.POSITIVE: FUZZ_EXAMPLES, GenerationMode.NEGATIVE: max(1, FUZZ_EXAMPLES // 2)}
CHECKS = [
    status_code_conformance,  # an undocumented status (the unparseable-body 400 was one) fails
    response_schema_conformance,
    content_type_conformance,
    response_headers_conformance,
]
SEED_DOCS = [
    {"external_id": "kangaroo", "title": "尤金袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"},
    {"external_id": "panthers", "title": "Panthers", "content": "The Panthers defense gave up 308 points."},
]


@pytest.fixture(params=["none", "supabase"])
def fuzzed_app(request, make_services) -> Iterator[tuple[Any, dict[str, str]]]:
    """The app with a small corpus; in supabase mode, with a valid token for every generated call."""
    unlimited = {f"rate_limit_{g}_per_minute": 0 for g in ("search", "chat", "research", "ingest")}
    llm = ScriptedLLM(answers=["答案[1]。"])
    if request.param == "none":
        services = make_services(llm=llm, **unlimited)
        headers: dict[str, str] = {}
        yield _seeded(services, headers), headers
        return
    key = es256("fuzz")
    with serve(FakeAuthServer([key]).respond) as url:
        services = make_services(llm=llm, auth_mode="supabase", supabase_url=url, **unlimited)
        headers = {"Authorization": f"Bearer {mint(key, issuer=f'{url}/auth/v1')}"}
        yield _seeded(services, headers), headers


def _seeded(services: Any, headers: dict[str, str]) -> Any:
    from fastapi.testclient import TestClient

    app = create_app(services=services)
    with TestClient(app, headers=headers) as client:
        assert client.post("/documents/batch", json={"documents": SEED_DOCS}).status_code == 200
    return app


def test_no_server_errors_and_every_answer_matches_the_schema(fuzzed_app):
    app, headers = fuzzed_app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = []
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result  # the schema itself must be valid
        operations.append(result.ok())
    assert len(operations) >= 10  # every route, not an empty schema

    for operation in operations:
        for mode, examples in EXAMPLES.items():
            _fuzz(operation, mode, examples, headers)


def _fuzz(operation: Any, mode: GenerationMode, examples: int, headers: dict[str, str]) -> None:
    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: schemathesis.Case) -> None:
        response = case.call(headers=headers)
        where = f"{mode.value} {case.method} {case.formatted_path}"
        assert response.status_code < 500, f"{where} -> {response.status_code}: {response.text}"
        case.validate_response(response, checks=CHECKS)

    try:
        fuzz()
    except Unsatisfiable:
        # Nothing to make invalid (no parameters, no body: /health, /metrics, /client-config).
        assert mode is GenerationMode.NEGATIVE, operation.label
        assert not list(operation.iter_parameters()), operation.label
        assert not operation.get_request_payload_content_types(), operation.label
