"""Chat evidence: budgets, the gap supplement (LLM or keywords), fusion diagnostics, confidence, clarify."""

from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from backend import PROJECT_ROOT
from backend.api.app import create_app
from backend.auth import LOCAL_IDENTITY
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
    assert stored["metadata"]["confidence"]["score_policy_version"] == "overall_v7"
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


LIFESPANS = [
    {"external_id": "platypus-life", "title": "鸭嘴兽的寿命", "content": "野生鸭嘴兽的寿命约为十二年。"},
    {"external_id": "wombat-life", "title": "袋熊的寿命", "content": "袋熊的寿命在野外约为十五年。"},
]


def test_scarce_evidence_triggers_llm_gap_queries_and_protected_fusion(make_services):
    llm = ScriptedLLM(answers=["答案[1]。"], completions=["以下是查询：\n**鸭嘴兽 产卵**\n2. 袋熊 挖洞"])
    # A small budget: the main pool (local_recall_k = 2) holds the two lifespan chunks, so the gap
    # searches add the platypus and wombat chunks, which are relevant to the question too.
    client = make_client(make_services, llm=llm, local_top_k=1)
    assert client.post("/documents/batch", json={"documents": LIFESPANS}).status_code == 200
    body = chat(client, "鸭嘴兽和袋熊的寿命分别是多少？")
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["triggered"] is True
    assert gap["method"] == "llm"
    assert gap["reason"] in {"confidence low", "1 relevant chunk(s)"}  # write_k = 1
    assert gap["queries"] == ["鸭嘴兽 产卵", "袋熊 挖洞"]  # preamble and markdown are not queries
    fusion = gap["pool_fusion"]
    assert fusion["main_in"] == 2
    assert fusion["gap_in"] >= 2
    assert body["diagnostics"]["evidence"]["truncation"]["by"] == "pool_fusion"
    assert fusion["gap_min_keep"] == 1
    assert fusion["gap_in_output"] == 1
    # The quota-protected gap chunk is the evidence: nothing after fusion removed it.
    assert body["sources"][0]["external_id"] in {"platypus", "wombat"}
    assert "寿命" in llm.complete_calls[-1].prompt  # the gap prompt saw the question


def test_gap_chunks_are_ranked_against_the_question_not_their_gap_query(make_services):
    from backend.chat.relevance import global_rerank
    from backend.search.types import SearchRequest

    services = make_services()
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": DOCS + LIFESPANS})
    question = "鸭嘴兽的寿命是多少？"
    main = services.retrieval.search(
        SearchRequest(query=question, top_k=1, prefetch_k=1, dynamic=False), identity=LOCAL_IDENTITY
    )
    full = services.retrieval.search(
        SearchRequest(query=question, top_k=6, prefetch_k=6, dynamic=False), identity=LOCAL_IDENTITY
    )
    koala_text = DOCS[1]["content"]  # a gap query that matches the koala chunk word for word
    koala = services.retrieval.search(
        SearchRequest(query=koala_text, top_k=1, dynamic=False), identity=LOCAL_IDENTITY
    ).results[0]
    platypus = services.retrieval.search(
        SearchRequest(query="鸭嘴兽 产卵", top_k=1, dynamic=False), identity=LOCAL_IDENTITY
    ).results[0]
    assert (koala.external_id, platypus.external_id) == ("koala", "platypus")
    # A perfect match for its own gap query (rerank_score: the policy's logit, comparable across
    # searches; final_score is a share among each search's own candidates).
    assert koala.rerank_score > main.results[0].rerank_score

    rerank = global_rerank(main, services.retrieval, services.settings, LOCAL_IDENTITY)
    ranked = rerank([*main.results, koala, platypus])
    assert [c.external_id for c in ranked] == ["platypus-life", "platypus"]  # koala: irrelevant to it
    # Rescored exactly as the question's own search scores that chunk.
    own = {c.chunk_id: c.rerank_score for c in full.candidates}
    assert ranked[1].rerank_score == pytest.approx(own[platypus.chunk_id])
    assert ranked[1].rerank_score < platypus.rerank_score
    assert ranked[1].final_score < ranked[0].final_score  # on the question's scale, below its own best


def test_a_web_passage_that_outranks_every_candidate_keeps_a_share_between_0_and_1(make_services):
    import dataclasses

    from backend.search.types import SearchRequest

    services = make_services()
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": DOCS})
    question = "鸭嘴兽的寿命是多少？"  # the documents do not say; the web passage does, word for word
    search = services.retrieval.search(SearchRequest(query=question, dynamic=False), identity=LOCAL_IDENTITY)
    own = search.results[0]
    web = dataclasses.replace(
        own,
        chunk_id=-42,
        kind="web",
        content="鸭嘴兽的寿命在野外约为十七年。",
        content_tokens="鸭嘴兽 寿命 野外 十七年",
        similarity=0.99,
        vector_rank=None,
        full_text_rank=None,
    )
    ranked = services.retrieval.rescore(search, [own, web], identity=LOCAL_IDENTITY)
    assert ranked[1].rerank_score > max(c.rerank_score for c in search.candidates)
    assert 0 < ranked[0].final_score < ranked[1].final_score <= 1
    assert sum(c.final_score for c in ranked) <= 1 + 1e-9  # shares of one pool


def test_without_an_llm_gap_queries_are_keyword_reformulations(make_services):
    # write_k = 1: one relevant chunk is scarce evidence, so gap searches run for an answerable question.
    client = make_client(make_services, llm=ScriptedLLM(answers=["答[1]。"]), local_top_k=1)  # no complete()
    body = chat(client, "鸭嘴兽生活在哪里，会产卵吗？")
    assert body["diagnostics"]["evidence"]["route"] == "answer"
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["triggered"] is True
    assert gap["method"] == "keywords"
    assert gap["queries"]
    assert all(q.strip() for q in gap["queries"])


def test_a_failing_gap_search_is_logged_and_the_rest_still_fuse(make_services, caplog):
    llm = ScriptedLLM(answers=["答案[1]。"], completions=["鸭嘴兽 产卵\n坏的查询"])
    services = make_services(llm=llm, local_top_k=1)
    original = services.retrieval.search

    def flaky(request, *, identity):
        if request.query == "坏的查询":
            from backend.errors import ProviderError

            raise ProviderError("embedding service unavailable")
        return original(request, identity=identity)

    services.retrieval.search = flaky
    with TestClient(create_app(services=services)) as client:
        client.post("/documents/batch", json={"documents": DOCS})
        with caplog.at_level(logging.WARNING, logger="backend.chat.evidence"):
            body = chat(client, "鸭嘴兽和袋熊的寿命分别是多少？")
    assert "[chat] gap supplement search failed for '坏的查询'" in caplog.text
    gap = body["diagnostics"]["evidence"]["gap"]
    assert gap["failed"] == ["坏的查询"]
    assert gap["pool_fusion"]["gap_in"] >= 1


def test_ambiguous_candidates_get_a_clarification_question_instead_of_a_guess(make_services, tmp_path):
    policy = json.loads((PROJECT_ROOT / "tests/fixtures/policies/v7.json").read_text(encoding="utf-8"))
    # Every runner-up counts as a second document that holds the answer, as close as the best.
    policy["thresholds"].update(T_low=0.0, T_high=0.0, R_hitl=0.0)
    (tmp_path / "v7.json").write_text(json.dumps(policy), encoding="utf-8")
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


def test_chat_options_apply_per_request_and_are_stored(make_services):
    client = make_client(make_services, llm=ScriptedLLM(answers=["考拉吃桉树叶[1]。"]))
    client.post(
        "/documents",
        json={
            "external_id": "koala-tagged",
            "title": "考拉饮食",
            "content": "考拉几乎只吃桉树叶。",
            "metadata": {"tags": ["饮食"]},
        },
    )
    body = client.post(
        "/chat",
        json={
            "message": "考拉吃什么？",
            "filters": {"tags": ["饮食"]},
            "step_top_k": 3,
            "write_top_k": 2,
            "mode": "hybrid",
        },
    ).json()
    options = body["diagnostics"]["evidence"]["options"]
    assert options == {
        "mode": "hybrid",
        "filters": {"tags": {"$contains": ["饮食"]}},  # as applied: the normalised grammar
        "top_k": 5,
        "step_top_k": 3,
        "write_top_k": 2,
    }
    assert {s["external_id"] for s in body["sources"]} == {"koala-tagged"}  # the filter scoped the turn
    stored = client.get(f"/conversations/{body['conversation_id']}/messages").json()[1]
    assert stored["metadata"]["options"] == options


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"step_top_k": 60}, "use at most 50"),
        ({"top_k": 101}, "top_k (101) exceeds the limit of 100"),
        ({"write_top_k": 0}, "write_top_k"),
        ({"mode": "magic"}, "mode"),
        ({"filters": {"password": "x"}}, "password"),
    ],
)
def test_bad_chat_options_are_422s_naming_the_option(make_services, options, named):
    client = make_client(make_services)
    response = client.post("/chat", json={"message": "考拉吃什么？", **options})
    assert response.status_code == 422
    assert named in response.json()["detail"]
    assert client.get("/conversations").json() == []


def chunk_with_tokens(tokens: str):
    from types import SimpleNamespace

    return SimpleNamespace(content_tokens=tokens)


@pytest.mark.parametrize(
    ("question_terms", "stats", "triggers"),
    [
        # 特点 is in the corpus but generic (low idf) next to the two names the evidence covers.
        (["考拉", "袋熊", "特点"], {"考拉": (3, 4.0), "袋熊": (2, 4.5), "特点": (400, 0.4)}, False),
        # 寿命 is rare in the corpus and missing from the evidence: worth a gap search.
        (["考拉", "袋熊", "寿命"], {"考拉": (3, 4.0), "袋熊": (2, 4.5), "寿命": (2, 4.5)}, True),
        # 控制 is in no chunk at all: a gap search cannot find it.
        (["考拉", "袋熊", "控制"], {"考拉": (3, 4.0), "袋熊": (2, 4.5), "控制": (0, 7.0)}, False),
    ],
)
def test_missing_terms_trigger_gap_searches_by_idf(question_terms, stats, triggers):
    from backend.chat.gap import scarce

    evidence = [chunk_with_tokens("考拉 生活 澳洲"), chunk_with_tokens("袋熊 挖洞 澳洲")]
    reason = scarce(evidence, {"confidence_level": "high"}, question_terms, stats, 0.3)
    assert (reason is not None) == triggers
    if triggers:
        assert reason is not None
        assert "寿命" in reason


def test_one_retrieval_done_line_per_chat_turn_without_document_text(make_services, caplog):
    client = make_client(make_services, llm=ScriptedLLM(answers=["答[1]。"]))
    with caplog.at_level(logging.INFO, logger="backend.chat.evidence"):
        chat(client, "考拉生活在哪里？")
    done = [r.getMessage() for r in caplog.records if "retrieval done" in r.getMessage()]
    assert len(done) == 1
    for field in ("mode=hybrid", "top_k=5", "step_top_k=5", "chunks=", "sources=local", "fusion(", "ms"):
        assert field in done[0]
    assert "桉树" not in done[0]  # no document text in the log


@pytest.mark.parametrize(
    "question",
    ["尤金袋鼠分布在哪些地区？", "澳洲有哪些有袋类动物？", "What is rrf_k?", "月球上有多少座火山？"],
)
def test_search_and_chat_give_one_question_one_confidence_and_one_route(make_services, question):
    # /search scores 15 candidates, /chat fetches 80: the score must not depend on that depth.
    client = make_client(make_services)
    searched = client.post("/search", json={"query": question}).json()
    chatted = chat(client, question)
    keys = ("best_overall_score", "confidence_level", "need_hitl", "web_fallback", "score_ratio")
    on_search = {k: searched["diagnostics"]["confidence"][k] for k in keys}
    assert {k: chatted["diagnostics"]["confidence"][k] for k in keys} == on_search
    stored = client.get(f"/conversations/{chatted['conversation_id']}/messages").json()[1]
    assert (
        stored["metadata"]["confidence"]["best_parent_id"]
        == searched["diagnostics"]["confidence"]["best_parent_id"]
    )
    assert chatted["diagnostics"]["evidence"]["route"] == searched["route"]
    assert chatted["diagnostics"]["retrieval"]["parameters"]["prefetch_k"] > len(searched["results"])
