"""tests/test_collections_api.py, unchanged, against the cluster: team collections over HTTP (A owns a
collection, B views, C edits, D is no member). The collection's documents stay in their owners'
tenants; a member's search adds those tenants, and the shards' policies read the member's grants
(sql/citus/caller_collection_ids.sql)."""

from tests.test_collections_api import *  # noqa: F403  (collected here: each test runs on a Citus coordinator)


def test_a_document_leaving_the_collection_leaves_its_former_readers_answers(team):  # noqa: F405
    """B's answer cites A's document, which lives in A's tenant, B's answer in B's: moving the document
    out of the collection, or deleting the collection, erases it from B's stored answer as on one node
    (sql/citus/erase_copies_elsewhere.sql, collections_release_documents.sql)."""

    def cited_by_b(conversation: str) -> list[dict]:
        messages = team.b.get(f"/conversations/{conversation}/messages").json()
        return [s for m in messages for s in m["sources"] if s.get("document_id") == team.plan]

    moved = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})  # noqa: F405
    assert cited_by_b(moved["conversation_id"])[0]["snippet"]
    assert team.a.patch(f"/documents/{team.plan}", json={"collection_id": None}).status_code == 200
    assert all(s["deleted"] and s["snippet"] == "" for s in cited_by_b(moved["conversation_id"]))

    assert team.a.patch(f"/documents/{team.plan}", json={"collection_id": team.collection}).status_code == 200
    released = post(team.b, "/chat", {"message": QUESTION, "collections": [team.collection]})  # noqa: F405
    assert cited_by_b(released["conversation_id"])[0]["snippet"]
    assert team.a.delete(f"/collections/{team.collection}").status_code == 204
    assert all(s["deleted"] and s["snippet"] == "" for s in cited_by_b(released["conversation_id"]))
    assert team.a.get(f"/documents/{team.plan}").json()["collection_id"] is None  # still A's
