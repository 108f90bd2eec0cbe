"""Answerability confidence (policy v3) and the route decision (issue #18)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.confidence.answerability import Fusion, scored_candidates, term_weights
from backend.confidence.answerability_policy import AnswerabilityPolicy
from backend.confidence.assess import assess, load_score_policy
from backend.confidence.policy import PolicyError, load_policy
from backend.confidence.routing import decide_route
from backend.search.types import SearchRequest
from backend.text import query_terms


def _v3() -> AnswerabilityPolicy:
    policy = load_score_policy("v3")
    assert isinstance(policy, AnswerabilityPolicy)
    return policy


V3 = _v3()
TERMS = ["袋鼠", "分布", "地区"]
IDFS = {"袋鼠": 4.0, "分布": 2.0, "地区": 1.0}


@dataclass
class C:
    """A fused candidate: the ScoredChunk attributes the score reads."""

    chunk_id: int
    document_id: str
    similarity: float | None
    vector_rank: int | None
    full_text_rank: int | None
    content_tokens: str = ""
    title: str = ""
    rrf_score: float | None = None
    content: str = ""
    heading_path: list[str] = field(default_factory=list)
    final_score: float = 0.0


def background(n: int, start_id: int = 100, cosine: float = 0.78, first_rank: int = 2) -> list[C]:
    """n unrelated chunks of n documents: the query's background."""
    return [
        C(start_id + i, f"noise{i}", cosine - 0.001 * i, first_rank + i, None, "其他 内容", f"噪声{i}")
        for i in range(n)
    ]


def clear_question() -> list[C]:
    gold = C(1, "gold", 0.93, 1, 1, "尤金 袋鼠 分布 澳洲 地区", "尤金袋鼠")
    return [gold, *background(12)]


def confidence(candidates, terms=TERMS, idfs=IDFS, policy=V3, **kw):
    return assess(candidates, policy, terms=terms, term_idfs=idfs, **kw)


# --- the score ----------------------------------------------------------------------------------------


def test_a_clear_question_scores_high_and_is_answered():
    result = confidence(clear_question())
    assert result["best_parent_id"] == "gold"
    assert result["confidence_level"] == "high"
    assert result["best_overall_score"] >= V3.t_high
    assert (result["need_hitl"], result["web_fallback"]) == (False, False)
    assert decide_route(result, web_available=False) == "answer"
    # The good case carries no warning: one strong chunk found by both legs is not a "spike".
    assert result["top_parents"][0]["risk_flags"] == []


def test_an_unrelated_question_scores_low_and_falls_back_to_the_web_or_says_not_in_documents():
    result = confidence(background(13, start_id=1, first_rank=1))  # no question term anywhere
    assert result["confidence_level"] == "low"
    assert result["best_overall_score"] < V3.t_low
    assert (result["web_fallback"], result["web_fallback_reason"]) == (True, "low_confidence")
    assert result["need_hitl"] is False
    assert decide_route(result, web_available=True) == "web_fallback"
    assert decide_route(result, web_available=False) == "not_in_documents"


def test_no_candidates_is_a_web_fallback_with_its_reason():
    result = confidence([])
    assert (result["best_overall_score"], result["web_fallback_reason"]) == (0.0, "no_results")


def test_two_competing_relevant_documents_ask_which_one_is_meant():
    a = C(1, "a", 0.93, 1, 1, "袋鼠 分布 地区", "尤金袋鼠")
    b = C(2, "b", 0.929, 2, 2, "袋鼠 分布 地区", "红袋鼠")
    result = confidence([a, b, *background(11, first_rank=3)])
    assert result["need_hitl"] is True
    assert result["confidence_level"] == "medium"  # two candidate answers are not a confident one
    assert result["web_fallback"] is False
    assert "ambiguous_candidate" in result["top_parents"][1]["risk_flags"]
    assert decide_route(result, web_available=True, clarify_levels=("low", "medium")) == "clarify"


def test_irrelevant_candidates_never_ask_for_clarification():
    # Two documents equally close, but neither holds the question's terms: web, not "which one?".
    a = C(1, "a", 0.80, 1, None, "其他", "甲")
    b = C(2, "b", 0.80, 2, None, "其他", "乙")
    eager = dataclasses.replace(V3, r_hitl=0.0)  # any runner-up is "close enough"
    result = confidence([a, b, *background(11, first_rank=3)], policy=eager)
    assert result["need_hitl"] is False
    assert decide_route(result, web_available=True) == "web_fallback"


def test_two_parts_of_one_title_are_answered_from_not_asked_about():
    a = C(1, "a", 0.93, 1, 1, "袋鼠 分布 地区", "尤金袋鼠")
    b = C(2, "b", 0.929, 2, 2, "袋鼠 分布 地区", "尤金袋鼠")
    assert confidence([a, b, *background(11, first_rank=3)])["need_hitl"] is False


def test_a_missing_rare_term_costs_more_than_a_missing_common_one():
    def with_tokens(tokens):
        gold = C(1, "gold", 0.9, 1, 1, tokens, "尤金袋鼠")
        return confidence([gold, *background(12)])["best_overall_score"]

    assert with_tokens("分布 地区") < with_tokens("袋鼠 分布")  # 袋鼠 (idf 4) is the rare term
    assert with_tokens("袋鼠 分布") < with_tokens("袋鼠 分布 地区")


def test_a_chinese_term_cut_differently_in_the_passage_still_counts_but_a_latin_stem_inside_a_word_does_not():
    def coverage(terms, tokens, text):
        gold = C(1, "gold", 0.9, 1, 1, tokens, "亨利·盧斯", content=text)
        found = confidence([gold, *background(12)], terms=terms, idfs=dict.fromkeys(terms, 1.0))
        return found["top_parents"][0]["coverage"]

    # jieba cut the question's 盧斯是 where the passage has 盧斯 / 是: the text holds it all the same.
    assert coverage(["亨利", "盧斯是"], "亨利 盧斯 是", "亨利·盧斯是美國出版商。") == 1.0
    assert coverage(["art", "museum"], "start museum", "The start of the museum.") == 0.5


def test_score_is_monotone_in_cosine_and_takes_many_values():
    scores = []
    for cosine in (0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92):
        gold = C(1, "gold", cosine, 1, 1, "袋鼠 分布", "尤金袋鼠")
        scores.append(confidence([gold, *background(12)])["best_overall_score"])
    assert scores == sorted(scores)
    assert len(set(scores)) == len(scores)


def test_term_weights_fall_back_sensibly():
    assert term_weights(["a", "b"], None) == {"a": 1.0, "b": 1.0}  # plain keyword coverage
    assert term_weights(["a", "b"], {"a": 2.0}) == {"a": 2.0, "b": 2.0}  # unknown: as rare as the rarest


def test_single_spike_means_one_retriever_only():
    vector_only_doc = C(1, "v", 0.9, 1, None, "袋鼠 分布 地区", "甲")
    both = C(2, "b", 0.9, 2, 1, "袋鼠 分布 地区", "乙")
    flags = {p["parent_id"]: p["risk_flags"] for p in confidence([vector_only_doc, both])["top_parents"]}
    assert "single_spike" in flags["v"]
    assert "single_spike" not in flags["b"]
    # A vector-only search has no full-text leg at all: nothing is a spike there.
    vector_search = [C(1, "v", 0.9, None, None, "袋鼠", "甲"), C(2, "w", 0.8, None, None, "", "乙")]
    assert all("single_spike" not in p["risk_flags"] for p in confidence(vector_search)["top_parents"])


def test_sparse_flags_need_chunk_totals_and_say_what_they_mean():
    result = confidence(clear_question(), chunk_totals={"gold": 200})
    assert {"sparse_evidence", "huge_doc_sparse"} <= set(result["top_parents"][0]["risk_flags"])
    small = confidence(clear_question(), chunk_totals={"gold": 2})
    assert "sparse_evidence" not in small["top_parents"][0]["risk_flags"]


# --- one confidence whatever the search depth ---------------------------------------------------------


def test_a_deeper_search_scores_the_same_head_of_the_fusion():
    shallow = [*clear_question(), *background(2, start_id=300, first_rank=20)]  # 15, as /search returns
    # An 80-candidate search fetches 320 rows per leg: these chunks, at vector ranks past 60, rank
    # below the background in the 15-candidate search but above it by plain RRF in the deep one.
    extra = [C(500 + i, f"deep{i}", 0.7, 61 + i, 30 + i, "分布", f"深{i}") for i in range(40)]
    deep = [*shallow, *extra]
    for c in deep:  # what hybrid_search reports: RRF over every row it fetched
        c.rrf_score = sum(1 / (60 + r) for r in (c.vector_rank, c.full_text_rank) if r is not None)
    plain_head = sorted(deep, key=lambda c: -(c.rrf_score or 0))[: V3.depth]
    assert {c.chunk_id for c in plain_head} != {c.chunk_id for c in shallow}
    head = [c.chunk_id for c in scored_candidates(deep, V3.depth, V3.leg_depth)]
    assert head == [c.chunk_id for c in scored_candidates(shallow, V3.depth, V3.leg_depth)]
    assert confidence(deep) == confidence(shallow)


def test_fusion_weights_change_the_head_consistently():
    text_first = C(1, "t", 0.8, 40, 1, "袋鼠")
    vector_first = C(2, "v", 0.9, 1, 40, "袋鼠")
    order = scored_candidates([text_first, vector_first], 2, 60, Fusion(full_text_weight=2.0))
    assert [c.chunk_id for c in order] == [1, 2]


# --- policies ------------------------------------------------------------------------------------------


def test_v3_is_an_answerability_policy_and_the_seed_policies_stay_loadable():
    assert V3.score_policy_version == "overall_v3"
    assert set(V3.weights) == {"cosine_lift", "term_coverage", "leg_agreement"}
    assert all(w >= 0 for w in V3.weights.values())
    assert load_score_policy("v2") == load_policy("v2")
    with pytest.raises(PolicyError, match="load_score_policy"):
        load_policy("v3")  # the seed-formula loader refuses, naming the right one


def test_answerability_policies_refuse_negative_weights_and_unknown_features():
    with pytest.raises(PolicyError, match="monotone"):
        dataclasses.replace(V3, weights={"cosine_lift": -1.0})
    with pytest.raises(PolicyError, match="unknown features"):
        dataclasses.replace(V3, weights={"title_match": 1.0})
    with pytest.raises(PolicyError, match="T_low"):
        dataclasses.replace(V3, t_low=0.9, t_high=0.5)


def test_a_policy_file_round_trips_and_an_unknown_formula_is_named(tmp_path):
    (tmp_path / "v3.json").write_text(json.dumps(V3.to_json()), encoding="utf-8")
    assert load_score_policy("overall_v3", tmp_path) == V3
    (tmp_path / "v4.json").write_text(json.dumps({**V3.to_json(), "version": "v4", "formula": "x"}))
    with pytest.raises(PolicyError, match="unknown formula 'x'"):
        load_score_policy("v4", tmp_path)


def test_the_seed_formula_still_needs_chunk_totals():
    with pytest.raises(ValueError, match="chunk_totals"):
        assess(clear_question(), load_policy("v2"))


def test_routes():
    base = {"need_hitl": False, "confidence_level": "high", "web_fallback": False}
    assert decide_route(base, web_available=True) == "answer"
    ambiguous = {**base, "need_hitl": True, "confidence_level": "medium"}
    assert decide_route(ambiguous, web_available=True) == "clarify"
    # v1/v2 semantics: CHAT_CLARIFY_LEVELS still decides at which levels need_hitl asks.
    assert decide_route({**base, "need_hitl": True}, web_available=True, clarify_levels=("low",)) == "answer"
    low = {**base, "confidence_level": "low", "web_fallback": True}
    assert decide_route(low, web_available=True) == "web_fallback"
    assert decide_route(low, web_available=False) == "not_in_documents"


# --- on the real database ------------------------------------------------------------------------------

DOCS = [
    ("kangaroo", "尤金袋鼠", "尤金袋鼠分布在澳洲南部岛屿及西岸地区，夜间活动。"),
    ("koala", "考拉", "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"),
    ("wombat", "袋熊", "袋熊是澳洲特有的有袋类动物，善于挖洞。"),
    ("platypus", "鸭嘴兽", "鸭嘴兽是会产卵的哺乳动物，生活在澳洲东部河流。"),
]


def test_on_a_real_search_the_answerable_question_is_answered_and_the_other_is_not(make_services, db):
    from tests.factories import loaded_document

    services = make_services()
    services.ingestion.ingest([loaded_document(e, text, title) for e, title, text in DOCS], identity=None)

    def routed(question):
        result = services.retrieval.search(SearchRequest(query=question), identity=LOCAL_IDENTITY)
        terms = query_terms(question)
        row = db.execute("select terms from hybrid_search_terms(%s)", (" ".join(terms),)).fetchone()
        idfs = {t["lexeme"]: float(t["idf"]) for t in row[0]}
        found = assess(result.candidates, V3, terms=terms, term_idfs=idfs)
        return found, decide_route(found, web_available=False)

    answerable, route = routed("尤金袋鼠分布在哪些地区？")
    assert route == "answer"
    assert answerable["top_parents"][0]["title"] == "尤金袋鼠"
    unanswerable, route = routed("火星探测器是哪一年发射的？")
    assert route == "not_in_documents"
    assert unanswerable["best_overall_score"] < answerable["best_overall_score"]
