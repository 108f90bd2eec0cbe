"""Chat evidence: budgets, the gap supplement (LLM or keywords), fusion diagnostics, confidence, clarify."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.confidence.policy import load_policy
from backend.testing import ScriptedLLM

DOCS = [
    {"external_id": "kangaroo", "title": "尤金袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"},
    {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"},
    {"external_id": "wombat", "title": "袋熊", "content": "袋熊是澳洲特有的有袋类动物，善于挖洞。"},
    {
        "external_id": "platypus",
        "title": "鸭嘴兽",
        "content": "鸭嘴兽是会产卵的哺乳动物，生活在澳洲东部河流。",
    },
]


def make_client(make_services, **kw):
    services = make_services(**kw)
    client = TestClient(create_app(services=services))
    client.__enter__()
    assert client.post("/documents/batch", json={"documents": DOCS}).status_code == 200
    return client


def chat(client, message):
    response = client.post("/chat", json={"message": message})
    assert response.status_code == 200, response.text
    return response.json()


def test_budgets_and_confidence_are_reported_and_confidence_is_stored(make_services):
    client = make_client(make_services, llm=ScriptedLLM(answers=["尤金袋鼠分布在澳洲南部岛屿[1]。"]))
    body = chat(client, "尤金袋鼠分布在哪些地区？")
    evidence = body["diagnostics"]["evidence"]
    assert evidence["budget"] == {
        "local_top_k": 5,
        "step_k": 5,
        "write_k": 5,
        "actual_recall": 80,
        "local_recall_k": 10,
    }
    assert body["diagnostics"]["retrieval"]["parameters"]["prefetch_k"] == 80
    assert body["diagnostics"]["confidence"]["confidence_level"] in {"low", "medium", "high"}
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert stored["metadata"]["confidence"]["score_policy_version"] == "overall_v2"
    assert stored["metadata"]["confidence"]["best_parent_id"] == body["sources"][0]["document_id"]


def test_write_top_k_limits_what_the_model_sees_but_every_source_stays_citable(make_services):
    llm = ScriptedLLM(answers=["澳洲的动物[1]。"])
    client = make_client(
        make_services, llm=llm, write_top_k=1, chat_min_keyword_coverage=0.1, chat_clarify_enabled=False
    )
    body = chat(client, "澳洲东部有哪些动物？")
    assert len(llm.calls[0].sources) == 1
    assert len(body["sources"]) > 1
    assert [s["in_context"] for s in body["sources"]] == [True] + [False] * (len(body["sources"]) - 1)


def test_scarce_evidence_triggers_llm_gap_queries_and_protected_fusion(make_services):
    llm = ScriptedLLM(answers=["答案[1]。"], completions=["鸭嘴兽 产卵\n袋熊 挖洞"])
    # A small budget, so the main pool (local_recall_k = 2) leaves chunks for the gap pool to add.
    client = make_client(make_services, llm=llm, local_top_k=1)
    body = chat(client, "鸭嘴兽和袋熊的寿命分别是多少？")
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["triggered"] is True
    assert gap["method"] == "llm"
    assert gap["reason"]  # scarce: too few relevant chunks, or 寿命 in none of them
    assert gap["queries"] == ["鸭嘴兽 产卵", "袋熊 挖洞"]
    fusion = gap["pool_fusion"]
    assert fusion["gap_in"] >= 1
    assert fusion["main_in"] >= 1
    assert body["diagnostics"]["evidence"]["truncation"]["by"] == "pool_fusion"
    assert fusion["gap_min_keep"] == 1
    assert fusion["gap_in_output"] >= 1
    assert "寿命" in llm.complete_calls[-1].prompt  # the gap prompt saw the question


def test_without_an_llm_gap_queries_are_keyword_reformulations(make_services):
    client = make_client(make_services, llm=ScriptedLLM(answers=["答[1]。"]))  # complete() -> None
    body = chat(client, "鸭嘴兽和袋熊的寿命分别是多少？")
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["triggered"] is True
    assert gap["method"] == "keywords"
    assert gap["queries"]
    assert all(q.strip() for q in gap["queries"])


def test_a_failing_gap_search_is_logged_and_the_rest_still_fuse(make_services, caplog):
    llm = ScriptedLLM(answers=["答案[1]。"], completions=["鸭嘴兽 产卵\n坏的查询"])
    services = make_services(llm=llm, local_top_k=1)
    original = services.retrieval.search

    def flaky(request):
        if request.query == "坏的查询":
            from backend.errors import ProviderError

            raise ProviderError("embedding service unavailable")
        return original(request)

    services.retrieval.search = flaky
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": DOCS})
        with caplog.at_level(logging.WARNING, logger="backend.services.evidence"):
            body = chat(client, "鸭嘴兽和袋熊的寿命分别是多少？")
    assert "[chat] gap supplement search failed for '坏的查询'" in caplog.text
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["failed"] == ["坏的查询"]
    assert gap["pool_fusion"]["gap_in"] >= 1


def test_ambiguous_candidates_get_a_clarification_question_instead_of_a_guess(make_services, tmp_path):
    policy = load_policy("v2").to_json()
    policy["thresholds"]["R_hitl"] = 0.0  # every close runner-up counts as ambiguous
    (tmp_path / "v2.json").write_text(json.dumps(policy), encoding="utf-8")
    llm = ScriptedLLM(answers=["不应被调用[1]。"])
    every_level = ["low", "medium", "high"]
    client = make_client(make_services, llm=llm, score_policies_dir=tmp_path, chat_clarify_levels=every_level)
    body = chat(client, "澳洲的有袋类动物")
    assert body["generator"] == "clarify"
    assert body["diagnostics"]["clarify"] is True
    assert llm.calls == []
    assert "《" in body["answer"]
    assert "哪一份" in body["answer"]
    assert all(s["cited"] is False for s in body["sources"])
    assert body["sources"]
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert stored["metadata"]["clarify"] is True
    off = make_client(
        make_services,
        llm=ScriptedLLM(answers=["答[1]。"]),
        score_policies_dir=tmp_path,
        chat_clarify_enabled=False,
    )
    assert chat(off, "澳洲的有袋类动物")["generator"] == "scripted"
    # Clarify only at the configured levels: the same question answered when its level is excluded.
    level = body["diagnostics"]["confidence"]["confidence_level"]
    others = [lv for lv in every_level if lv != level]
    answered = make_client(
        make_services,
        llm=ScriptedLLM(answers=["答[1]。"]),
        score_policies_dir=tmp_path,
        chat_clarify_levels=others,
    )
    assert chat(answered, "澳洲的有袋类动物")["generator"] == "scripted"


def test_unknown_policy_version_is_refused_at_start_up(make_services):
    from backend.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="v9"):
        make_services(score_policy_version="v9")
