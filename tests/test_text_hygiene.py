"""A NUL or an unpaired surrogate anywhere in a request is a 422 naming where, before any work starts.

Found by probing (issue 24, finding 10): such text reached PostgreSQL (which cannot store U+0000) or
UTF-8 encoding (which cannot encode a lone surrogate) and was a 500 - for /chat only after the
answer had streamed (a 200, then an `error` event, nothing stored) - or broke the error message
that quoted it.
"""

from __future__ import annotations

import json

import pytest

from backend.api.errors import error_payload, format_location
from backend.errors import InvalidInput
from backend.text.hygiene import drop_unstorable, find_unstorable, printable

DOC = {"external_id": "kangaroo", "title": "尤金袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"}
MISSING_ID = "0b7c6f1e-8d1a-4c5e-9a57-2f1d1c7e9b10"


def post_json(client, path, body):
    """The body as JSON text with \\u escapes, so a lone surrogate travels as a client would send it."""
    data = json.dumps(body, ensure_ascii=True).encode()
    return client.post(path, content=data, headers={"content-type": "application/json"})


def assert_refused(response, location: str, what: str = "NUL") -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "InvalidRequest"
    assert body["errors"][0].startswith(f"{location}: "), body["errors"]
    assert what in body["detail"]


def assert_nothing_stored(client, documents: int = 1) -> None:
    assert client.get("/documents").json()["total"] == documents
    assert client.get("/conversations").json() == []
    assert client.get("/research").json() == []


@pytest.fixture
def corpus(client):
    assert client.post("/documents", json=DOC).status_code == 200
    return client


@pytest.mark.parametrize(
    ("path", "body", "location", "what"),
    [
        # 500s on the old code:
        ("/chat", {"message": "尤金袋鼠\x00在哪"}, "message", "NUL"),
        ("/research", {"question": "尤金袋鼠\x00在哪"}, "question", "NUL"),
        ("/research", {"question": "尤金袋鼠\x00在哪", "stream": True}, "question", "NUL"),
        (
            "/search",
            {"query": "袋鼠", "filters": {"tags": {"$in": ["a", "b\x00"]}}},
            "filters.tags.$in[1]",
            "NUL",
        ),
        (
            "/chat",
            {"message": "袋鼠", "filters": {"$or": [{"lang": "zh"}, {"source": {"$nin": ["x", "\ud800"]}}]}},
            "filters.$or[1].source.$nin[1]",
            "U+D800",
        ),
        ("/documents", {"content": "袋鼠", "metadata": {"tags": ["a\udfff"]}}, "metadata.tags[0]", "U+DFFF"),
        (
            "/documents",
            {"content": "袋鼠", "metadata": {"ta\ud800gs": ["a"]}},
            'metadata["ta\\ud800gs"]',
            "key",
        ),
        # a 422 already, but its message quoted the bad key (unescaped) or said nothing useful:
        ("/search", {"query": "袋鼠", "filters": {"la\x00ng": "zh"}}, 'filters["la\\u0000ng"]', "key"),
        ("/search", {"query": "袋鼠\ud83d"}, "query", "U+D83D"),
        ("/chat", {"message": "袋鼠", "mo\udc00de": "x"}, 'body["mo\\udc00de"]', "key"),
        # stored or searched with the NUL silently dropped on the old code:
        ("/search", {"query": "袋鼠\x00"}, "query", "NUL"),
        ("/documents", {"title": "袋\x00鼠", "content": "尤金袋鼠"}, "title", "NUL"),
        ("/documents/batch", {"documents": [DOC, {"content": "x\x00"}]}, "documents[1].content", "NUL"),
        ("/chat", {"message": "袋鼠", "conversation_id": MISSING_ID[:-1] + "\x00"}, "conversation_id", "NUL"),
    ],
)
def test_unstorable_text_in_any_field_is_a_422_naming_it_and_nothing_runs(corpus, path, body, location, what):
    assert_refused(post_json(corpus, path, body), location, what)
    assert_nothing_stored(corpus)


def test_a_nul_in_a_streamed_chat_is_a_422_before_the_stream_starts(corpus):
    """On the old code: a 200, the answer streamed, then an `error` event (500), and nothing stored."""
    data = json.dumps({"message": "尤金袋鼠\x00分布在哪里？", "stream": True}).encode()
    with corpus.stream("POST", "/chat", content=data, headers={"content-type": "application/json"}) as r:
        text = "".join(r.iter_text())
        assert r.status_code == 422, text
        assert r.headers["content-type"].startswith("application/json")
    assert "event:" not in text
    assert json.loads(text)["errors"][0].startswith("message: ")
    assert_nothing_stored(corpus)


def _multipart(filename: bytes, content: bytes) -> tuple[bytes, dict[str, str]]:
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="files"; filename="' + filename + b'"\r\n'
        b"Content-Type: text/plain\r\n\r\n" + content + b"\r\n--XyZ--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=XyZ"}


def test_a_nul_in_an_uploaded_file_name_is_a_422_and_nothing_is_stored(corpus):
    body, headers = _multipart(b"kan\x00garoo.txt", "考拉生活在澳洲东部的桉树林中。".encode())
    assert_refused(corpus.post("/documents/upload", content=body, headers=headers), "files.filename")
    assert_nothing_stored(corpus)
    body, headers = _multipart("考拉.txt".encode(), "考拉生活在澳洲东部的桉树林中。".encode())
    stored = corpus.post("/documents/upload", content=body, headers=headers)
    assert stored.status_code == 200
    assert stored.json()["documents"][0]["title"] == "考拉"


def test_query_and_path_parameters_are_checked_too(corpus):
    assert_refused(corpus.get("/documents?limit=1%00"), "query.limit")
    assert_refused(corpus.get("/conversations/a%00b/messages"), "path.conversation_id")


def test_a_paired_surrogate_is_an_ordinary_character(corpus):
    """JSON clients that escape everything (Python's json.dumps) send an emoji as a \\ud83d\\ude00 pair."""
    response = post_json(corpus, "/documents", {"title": "笑脸😀", "content": "尤金袋鼠😀分布在澳洲。"})
    assert response.status_code == 200, response.text
    assert response.json()["documents"][0]["title"] == "笑脸😀"


def test_a_body_that_cannot_be_parsed_is_a_documented_400_in_the_error_shape(client):
    """Not UTF-8: FastAPI's bare {"detail"} 400, which the OpenAPI schema did not list (schemathesis)."""
    response = client.post(
        "/chat", content=b'{"message": "\xff\xfe"}', headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"] == "MalformedBody"
    assert "UTF-8" in response.json()["detail"]
    assert response.json()["request_id"] == response.headers["x-request-id"]
    garbage = client.post("/documents/upload", content=b"x", headers={"content-type": "multipart/form-data"})
    assert garbage.status_code == 400
    assert garbage.json()["error"] == "MalformedBody"
    documented = client.get("/openapi.json").json()["paths"]
    for path, method in [("/chat", "post"), ("/documents/upload", "post"), ("/documents/batch", "post")]:
        assert "400" in documented[path][method]["responses"]


def test_an_error_message_quoting_unstorable_text_is_escaped_never_a_500():
    """The old code raised UnicodeEncodeError while writing such a message: a 500."""
    status, body = error_payload(InvalidInput("metadata keys not allowed: ta\ud800gs, a\x00"))
    assert status == 422
    assert body["detail"] == "metadata keys not allowed: ta\\ud800gs, a\\u0000"
    body["detail"].encode("utf-8")
    assert format_location(("body", "metadata", 'a"\x00', 2)) == 'metadata["a\\"\\u0000"][2]'


def test_the_walk_finds_keys_and_values_at_any_depth_and_passes_clean_text():
    assert find_unstorable({"a": [1, {"b": "ok", "c": ["x", "y\x00"]}]}) is not None
    assert find_unstorable({"a": [1, {"b": "ok", "c": ["x", "y\x00"]}]}).location == ("a", 1, "c", 1)  # type: ignore[union-attr]
    assert find_unstorable({"k\udc80": 1}).in_key  # type: ignore[union-attr]
    assert find_unstorable({"标签": ["袋鼠😀", 1.5, None, True]}) is None
    deep: object = "\x00"
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = [deep]
    assert find_unstorable(deep) is not None
    assert drop_unstorable("a\x00b\ud800c") == "abc"
    assert printable("a\x00\udc00") == "a\\u0000\\udc00"


def test_a_model_answer_holding_unstorable_text_is_stored_without_it(corpus, scripted_llm):
    """A source can ask the model to write a NUL; the final write of such an answer was a 500."""
    scripted_llm.answers = ["尤金袋鼠分布在澳洲南部岛屿\x00[1]。\ud800"]
    response = corpus.post("/chat", json={"message": "尤金袋鼠分布在哪里？"})
    assert response.status_code == 200, response.text
    assert response.json()["answer"] == "尤金袋鼠分布在澳洲南部岛屿[1]。"
    stored = corpus.get(f"/conversations/{response.json()['conversation_id']}/messages").json()
    assert stored[1]["content"] == "尤金袋鼠分布在澳洲南部岛屿[1]。"


def test_a_research_plan_and_report_holding_unstorable_text_are_stored_without_it(make_services):
    """The model's plan (section titles, questions, queries), verdicts and sections are stored in
    research_runs and messages: a NUL or a lone surrogate in any of them failed the run's writes."""
    from fastapi.testclient import TestClient

    from backend.api.app import create_app
    from backend.testing import ScriptedLLM

    def reply(system: str, prompt: str, schema: dict) -> dict:
        if "You plan a research report" in prompt:
            return {
                "sections": [
                    {
                        "title": "分\x00布\ud800",
                        "question": "尤金袋鼠\x00分布在哪里？",
                        "queries": ["袋鼠\udc00"],
                    }
                ]
            }
        return {"sufficient": False, "missing": "细\x00节", "gap_queries": ["尤金袋鼠 分布\x00"]}

    llm = ScriptedLLM(json_completions=reply, answers=["尤金袋鼠分布在澳洲南部岛屿\x00[1]。"])
    with TestClient(create_app(services=make_services(llm=llm, research_max_loops=1))) as client:
        assert client.post("/documents", json=DOC).status_code == 200
        response = client.post("/research", json={"question": "尤金袋鼠分布在哪里？"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["sections"][0]["title"] == "分布"
        assert "\x00" not in json.dumps(body, ensure_ascii=False)
        assert client.get(f"/research/{body['run_id']}").json()["status"] == "completed"


def test_a_follow_up_rewrite_holding_unstorable_text_is_used_without_it(corpus, scripted_llm):
    """The rewritten query is kept in the message's diagnostics: a NUL in it failed the final write."""
    scripted_llm.completions = ["Query: 尤金袋鼠\x00的作者是谁？\ud800"]
    first = corpus.post("/chat", json={"message": "尤金袋鼠分布在哪里？"})
    assert first.status_code == 200, first.text
    first = first.json()
    follow = corpus.post(
        "/chat", json={"message": "它的作者是谁？", "conversation_id": first["conversation_id"]}
    )
    assert follow.status_code == 200, follow.text
    assert follow.json()["diagnostics"]["rewrite"]["query"] == "尤金袋鼠的作者是谁？"
