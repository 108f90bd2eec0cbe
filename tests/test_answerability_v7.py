"""Policy v7 (issue 26 item 1): v6's cross-lingual branch reads a cross-lingual document's lift against
a deeper background of its own (the vector leg's row 20), the question's language is read off its text,
and only a document scored by the same model can be the runner-up that makes /chat clarify."""

from __future__ import annotations

import json

import pytest

from backend.auth import LOCAL_IDENTITY
from backend.confidence.answerability import ranked_background
from backend.confidence.answerability_policy import AnswerabilityPolicy
from backend.confidence.assess import assess, load_score_policy
from backend.confidence.policy import POLICIES_DIR, PolicyError
from backend.confidence.routing import decide_route
from backend.search.types import SearchRequest
from backend.text import query_terms
from tests.test_answerability_crosslingual import (
    EN_GOLD,
    EN_NOISE,
    ZH_GOLD,
    ZH_NOISE,
    ZH_QUESTION,
    C,
    confidence,
)
from tests.test_answerability_v6 import english_corpus, local_model  # noqa: F401 (fixtures)


def _policy(version: str) -> AnswerabilityPolicy:
    policy = load_score_policy(version)
    assert isinstance(policy, AnswerabilityPolicy)
    return policy


V6, V7 = _policy("v6"), _policy("v7")


def test_v7_round_trips_with_its_background_rank_and_refuses_a_bad_one(tmp_path):
    assert V7.cross_lingual is not None
    assert V7.cross_lingual.background_rank == 20
    (tmp_path / "v7.json").write_text(json.dumps(V7.to_json()), encoding="utf-8")
    assert load_score_policy("v7", tmp_path) == V7
    assert "background_rank" not in V6.to_json()["cross_lingual"]  # v6's file reads as it was written
    data = V7.to_json()
    data["cross_lingual"]["background_rank"] = 0
    with pytest.raises(PolicyError, match="cross_lingual: background_rank must be between 1 and 60"):
        AnswerabilityPolicy.from_json(data)


def _leg(cosines: list[float]) -> list[C]:
    return [C(i, f"d{i}", cos, i + 1, None, "text") for i, cos in enumerate(cosines)]


def test_the_ranked_background_is_the_vector_legs_row_of_that_rank_or_its_deepest():
    cosines = [0.9 - 0.01 * i for i in range(30)]
    assert ranked_background(_leg(cosines), 20) == pytest.approx(cosines[19])
    assert ranked_background(_leg(cosines[:6]), 20) == pytest.approx(cosines[5])  # a small corpus
    full_text_only = [C(1, "d", None, None, 1, "text")]
    assert ranked_background(full_text_only, 20) is None


def mixed(gold_cosine: float) -> list[C]:
    """A Chinese question over a mixed corpus: Chinese passages on other topics head the vector leg
    (multilingual-e5 ranks the question's language higher), the English gold passage below them, then
    English noise: the head's median is set by the Chinese passages, far above the English ones."""
    zh = [C(10 + i, f"zh{i}", 0.86 - 0.003 * i, 1 + i, None, ZH_NOISE, f"z{i}") for i in range(12)]
    gold = C(1, "gold", gold_cosine, 13, None, EN_GOLD, title="Normans")
    en = [C(100 + i, f"en{i}", 0.76 - 0.002 * i, 14 + i, None, EN_NOISE, f"n{i}") for i in range(16)]
    return [*zh, gold, *en]


def test_an_english_answer_in_a_mixed_corpus_is_measured_against_its_own_background():
    """Under v6 the Chinese passages set the background and the English answer is refused; v7 reads its
    lift against the vector leg's row 20 (English) and answers from it; the same corpus without an
    answer (its best English passage at the English background) is still refused."""
    answered = confidence(mixed(0.84), ZH_QUESTION, V7)
    assert answered["best_parent_id"] == "gold"
    assert answered["top_parents"][0]["features"]["cross_lingual"] is True
    assert decide_route(answered, web_available=False) == "answer"
    assert decide_route(confidence(mixed(0.84), ZH_QUESTION, V6), web_available=False) == "not_in_documents"
    assert decide_route(confidence(mixed(0.765), ZH_QUESTION, V7), web_available=False) == "not_in_documents"


def test_the_translation_of_the_answer_is_not_a_rival_to_clarify_about():
    """The answer in the question's language and the same text in the other language both score high,
    each by its own model: the ratio of two models' scores means nothing, so no clarify; two documents
    of one model still compete."""
    zh_gold = C(1, "zh-gold", 0.93, 1, 1, ZH_GOLD, " ".join(["诺曼", "征服", "英格兰", "1066"]), "诺曼征服")
    en_gold = C(2, "en-gold", 0.88, 2, None, EN_GOLD, title="Normans")
    en = [C(100 + i, f"en{i}", 0.74 - 0.002 * i, 3 + i, None, EN_NOISE, f"n{i}") for i in range(20)]
    result = confidence([zh_gold, en_gold, *en], ZH_QUESTION, V7)
    assert result["best_parent_id"] == "zh-gold"
    parents = {p["parent_id"]: p for p in result["top_parents"]}
    assert parents["en-gold"]["overall_score"] >= V7.t_high  # its branch says it holds the answer too
    assert result["need_hitl"] is False
    assert decide_route(result, web_available=False) == "answer"
    twin = C(3, "zh-twin", 0.93, 3, 2, ZH_GOLD, zh_gold.content_tokens, "诺曼人")
    rivals = confidence([zh_gold, twin, en_gold, *en], ZH_QUESTION, V7)
    assert rivals["need_hitl"] is True
    assert "ambiguous_candidate" in {f for p in rivals["top_parents"] for f in p["risk_flags"]}


def test_a_chinese_question_with_a_latin_term_is_a_chinese_question():
    """「谁写的 pgrag？」: its one significant term is Latin, its text Chinese — its Chinese passages are in
    its language (before v7 the language was read off the terms, and they were 'cross-lingual')."""
    question = "谁写的 pgrag？"
    zh = C(1, "zh", 0.89, 1, 1, "pgrag 由一个小型创始工程团队编写和维护。", "pgrag 团队 编写", "概览")
    noise = [C(10 + i, f"n{i}", 0.8 - 0.003 * i, 2 + i, None, ZH_NOISE, f"z{i}") for i in range(20)]
    terms = query_terms(question)
    by_terms = assess([zh, *noise], V7, terms=terms, term_idfs=dict.fromkeys(terms, 3.0))
    assert by_terms["top_parents"][0]["features"]["cross_lingual"] is True  # what the terms alone say
    result = assess([zh, *noise], V7, terms=terms, term_idfs=dict.fromkeys(terms, 3.0), question=question)
    assert result["top_parents"][0]["features"]["cross_lingual"] is False


def test_a_chinese_question_answered_only_by_an_english_passage_is_answered_under_v7(english_corpus):  # noqa: F811
    v7 = english_corpus("v7", "诺曼人在哪一年征服了英格兰？")
    assert v7["top_parents"][0]["title"] == "Normans"
    assert decide_route(v7, web_available=False) == "answer"
    unrelated = english_corpus("v7", "如何申请护照的加急办理？")
    assert decide_route(unrelated, web_available=False) == "not_in_documents"


def test_v7_is_the_shipped_default(make_services):
    services = make_services(score_policies_dir=POLICIES_DIR)
    services.ingestion.ingest([], identity=None)
    result = services.retrieval.search(SearchRequest(query="诺曼人"), identity=LOCAL_IDENTITY)
    assert result.confidence["score_policy_version"] == "overall_v7"
