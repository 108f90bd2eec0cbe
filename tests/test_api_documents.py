"""Documents over HTTP: ingest, upload, list, read, delete, and clear 4xx errors."""

from __future__ import annotations

import json

import pytest


def post_doc(client, **body):
    return client.post(
        "/documents", json={"title": "袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿。", **body}
    )


def test_post_document_then_repost_is_unchanged(client):
    first = post_doc(client, external_id="k1")
    assert first.status_code == 200, first.text
    assert first.json()["counts"]["created"] == 1
    again = post_doc(client, external_id="k1")
    assert again.json()["documents"][0]["status"] == "unchanged"
    changed = post_doc(client, external_id="k1", content="尤金袋鼠也叫塔马尔袋鼠。")
    assert changed.json()["documents"][0]["status"] == "updated"


def test_list_get_and_delete_document(client):
    doc_id = post_doc(client, external_id="k2").json()["documents"][0]["document_id"]
    page = client.get("/documents", params={"limit": 10}).json()
    assert page["total"] == 1
    assert page["items"][0]["id"] == doc_id
    one = client.get(f"/documents/{doc_id}").json()
    assert one["chunk_count"] == 1
    assert one["embedding_models"] == ["hashing-test@384"]
    assert client.delete(f"/documents/{doc_id}").status_code == 204
    missing = client.get(f"/documents/{doc_id}")
    assert missing.status_code == 404
    assert doc_id in missing.json()["detail"]
    assert client.delete(f"/documents/{doc_id}").status_code == 404


def test_batch_is_all_or_nothing(client):
    bad = client.post(
        "/documents/batch",
        json={
            "documents": [
                {"title": "a", "content": "好的内容", "external_id": "ok"},
                {"title": "b", "content": "坏的元数据", "external_id": "bad", "metadata": {"not_allowed": 1}},
            ]
        },
    )
    assert bad.status_code == 422
    assert "not_allowed" in bad.json()["detail"]
    assert client.get("/documents").json()["total"] == 0
    good = client.post(
        "/documents/batch",
        json={
            "documents": [
                {"title": "a", "content": "好的内容", "external_id": "ok"},
                {"title": "b", "content": "另一个", "external_id": "ok2"},
            ]
        },
    )
    assert good.json()["counts"]["created"] == 2


def test_upload_files_each_succeeds_or_fails_on_its_own(client):
    files = [
        ("files", ("guide.md", "# 指南\n\n袋鼠生活在澳洲。".encode(), "text/markdown")),
        (
            "files",
            (
                "page.html",
                b"<html><head><title>Page</title><script>evil()</script></head>"
                b"<body><h1>Hello</h1><p>Kangaroos hop.</p></body></html>",
                "text/html",
            ),
        ),
        ("files", ("blob.bin", bytes(range(256)) * 4, "application/octet-stream")),
    ]
    response = client.post("/documents/upload", files=files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["counts"]["created"] == 2
    assert body["counts"]["failed"] == 1
    failed = [d for d in body["documents"] if d["status"] == "failed"][0]
    assert "blob.bin" in failed["external_id"]
    assert failed["error"]
    titles = {d["title"] for d in client.get("/documents").json()["items"]}
    assert titles == {"指南", "Page"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "t"}, "content"),
        ({"content": ""}, "content"),
        ({"content": "x", "unknown": 1}, "unknown"),
        ({"content": "x", "metadata": "not an object"}, "metadata"),
    ],
)
def test_invalid_fields_answer_422_naming_the_field(client, body, field):
    response = client.post("/documents", json=body)
    assert response.status_code == 422
    assert field in response.json()["detail"]


def test_invalid_json_answers_422(client):
    response = client.post("/documents", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422


def test_oversized_body_answers_413_with_a_message(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    services = make_services(max_request_bytes=2048)
    with TestClient(create_app(services=services)) as small:
        response = small.post("/documents", json={"content": "袋鼠" * 2000})
        assert response.status_code == 413
        assert "MAX_REQUEST_BYTES" in response.json()["detail"]
        assert small.get("/documents").json()["total"] == 0


def test_a_chunked_body_without_content_length_is_limited_too(make_services):
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    def chunks(total: int):
        body = json.dumps({"title": "t", "content": "袋鼠" * total}).encode()
        for i in range(0, len(body), 512):
            yield body[i : i + 512]

    services = make_services(max_request_bytes=4096)
    with TestClient(create_app(services=services)) as small:
        headers = {"content-type": "application/json"}
        response = small.post("/documents", content=chunks(2000), headers=headers)
        assert response.status_code == 413
        assert "MAX_REQUEST_BYTES" in response.json()["detail"]
        assert small.get("/documents").json()["total"] == 0
        assert small.post("/documents", content=chunks(100), headers=headers).status_code == 200


def test_control_characters_are_stripped_from_text_and_nul_is_refused(client):
    """Found by the API fuzzer: NUL bytes in a body were a 500 (PostgreSQL refuses NUL in text). A NUL
    anywhere is a 422 naming the field (tests/test_text_hygiene.py); other controls are dropped."""
    stored = client.post("/documents", json={"title": "袋\x07鼠", "content": "尤金袋鼠\x1b分布在澳洲。\x07"})
    assert stored.status_code == 200
    doc = client.get(f"/documents/{stored.json()['documents'][0]['document_id']}").json()
    assert doc["title"] == "袋鼠"
    bad_id = client.post("/documents", json={"content": "x", "external_id": "a\x07b"})
    assert bad_id.status_code == 422
    assert "control characters" in bad_id.json()["detail"]
    for body in ({"title": "袋\x00鼠", "content": "x"}, {"content": "x", "metadata": {"tags": ["a\x00"]}}):
        assert client.post("/documents", json=body).status_code == 422
