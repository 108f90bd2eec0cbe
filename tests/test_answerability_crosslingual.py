"""The answerability score across languages (issue 26, policy v4): its features mean the same whatever
the languages of question and passage, so a Chinese question over the English passage that answers it
is answered, and an unrelated one is not."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

from backend.confidence.answerability import comparable_terms, document_evidence, features, passage_language
from backend.confidence.answerability_policy import LANGUAGE_AWARE_FEATURES, AnswerabilityPolicy
from backend.confidence.assess import assess, load_score_policy
from backend.confidence.routing import decide_route
from backend.text import query_terms
from bench.routing.fit import sets_of, training_groups, variant_of
from bench.routing.ranking import ORDERS, orders
from bench.routing.records import Candidate, QuestionRecord, SearchRecord, load_records


def _policy(version: str) -> AnswerabilityPolicy:
    policy = load_score_policy(version)
    assert isinstance(policy, AnswerabilityPolicy)
    return policy


V3, V4 = _policy("v3"), _policy("v4")

ZH_QUESTION = "诺曼人在哪一年征服了英格兰？"
EN_QUESTION = "In which year did the Normans conquer England?"
EN_GOLD = "In 1066 the Normans under William the Conqueror invaded and conquered England."
ZH_GOLD = "1066年，诺曼人在征服者威廉的率领下入侵并征服了英格兰。"
EN_NOISE = "The Amazon rainforest covers much of the Amazon basin of South America."
ZH_NOISE = "亚马逊雨林覆盖了南美洲亚马逊盆地的大部分地区。"


@dataclass
class C:
    """A fused candidate: the ScoredChunk attributes the score reads (content is the chunk's text)."""

    chunk_id: int
    document_id: str
    similarity: float | None
    vector_rank: int | None
    full_text_rank: int | None
    content: str
    content_tokens: str = ""
    title: str = ""
    rrf_score: float | None = None
    heading_path: list[str] = field(default_factory=list)
    final_score: float = 0.0


def corpus(gold_text: str | None, noise: str, gold_cosine: float = 0.86, n: int = 12) -> list[C]:
    """A search over a corpus in one language: the gold passage first in the vector leg (when given),
    then unrelated passages around the cross-lingual background cosine of multilingual-e5 (~0.77);
    the full-text leg finds nothing across the scripts."""
    rows = [
        C(100 + i, f"noise{i}", 0.775 - 0.002 * i, 2 + i if gold_text else 1 + i, None, noise, f"n{i}")
        for i in range(n)
    ]
    if gold_text is None:
        return rows
    return [C(1, "gold", gold_cosine, 1, None, gold_text, title="Normans"), *rows]


def confidence(candidates: list[C], question: str, policy: AnswerabilityPolicy) -> dict:
    terms = query_terms(question)
    return assess(candidates, policy, terms=terms, term_idfs=dict.fromkeys(terms, 3.0))


def test_a_chinese_question_over_the_english_passage_that_answers_it_is_answered():
    result = confidence(corpus(EN_GOLD, EN_NOISE), ZH_QUESTION, V4)
    assert result["best_parent_id"] == "gold"
    assert decide_route(result, web_available=False) == "answer"
    top = result["top_parents"][0]
    assert top["features"]["cross_lingual"] is True
    # v3 read its missing Chinese terms as missing evidence and refused it (the issue-26 complaint).
    assert decide_route(confidence(corpus(EN_GOLD, EN_NOISE), ZH_QUESTION, V3), web_available=False) == (
        "not_in_documents"
    )


def test_an_english_question_over_the_chinese_passage_that_answers_it_is_answered():
    result = confidence(corpus(ZH_GOLD, ZH_NOISE), EN_QUESTION, V4)
    assert result["best_parent_id"] == "gold"
    assert decide_route(result, web_available=False) == "answer"
    assert result["top_parents"][0]["features"]["cross_lingual"] is True


def test_a_question_the_other_languages_corpus_does_not_answer_is_not_answered():
    for question, noise in ((ZH_QUESTION, EN_NOISE), (EN_QUESTION, ZH_NOISE)):
        result = confidence(corpus(None, noise), question, V4)
        assert decide_route(result, web_available=False) == "not_in_documents", question
        assert result["confidence_level"] == "low"


def test_the_missing_terms_of_the_other_language_raise_no_low_coverage_flag():
    result = confidence(corpus(EN_GOLD, EN_NOISE), ZH_QUESTION, V4)
    assert "low_coverage" not in result["top_parents"][0]["risk_flags"]


def test_numbers_and_latin_names_of_a_chinese_question_count_in_an_english_passage():
    terms = query_terms("哪座堡垒是1964年由Gtk重建的？")
    assert comparable_terms(terms, "en") == ["1964", "gtk"]
    assert comparable_terms(terms, "zh") == terms
    holds = C(1, "gold", 0.8, 1, 3, "The fort was rebuilt in 1964 with Gtk.", "1964 gtk fort rebuilt")
    lacks = C(2, "other", 0.8, 2, None, "The fort was rebuilt later.", "fort rebuilt later")
    docs = {d.parent_id: d for d in document_evidence([holds, lacks], terms, None)}
    assert docs["gold"].cross_lingual
    assert docs["gold"].comparable_coverage == 1.0
    assert docs["gold"].term_coverage < 0.5  # what v3 read: the Chinese words count as missing
    assert docs["other"].comparable_coverage == 0.0


def test_in_one_language_the_language_aware_features_are_v3s():
    terms = query_terms("诺曼人在哪一年征服了英格兰？")
    gold = C(1, "gold", 0.9, 1, 1, ZH_GOLD, " ".join(terms))
    (doc,) = document_evidence([gold], terms, None)
    values = features(doc, 0.8)
    assert not doc.cross_lingual
    assert doc.language == "zh"
    assert values["comparable_coverage"] == values["term_coverage"] == 1.0
    assert values["comparable_agreement"] == values["leg_agreement"] == 1.0
    assert values["cross_lingual"] == values["cross_lingual_lift"] == 0.0


def test_a_candidate_carrying_its_language_is_not_detected_again():
    stored = C(1, "d", 0.8, 1, None, "1066 norman")  # a benchmark record keeps only the query terms
    assert passage_language(stored) == "en"
    stored.content_language = "zh"  # type: ignore[attr-defined]
    assert passage_language(stored) == "zh"


def test_v4_weighs_the_language_aware_features_and_says_what_it_was_fitted_on():
    assert set(V4.weights) <= set(LANGUAGE_AWARE_FEATURES)
    assert {"cosine_lift", "comparable_coverage", "cross_lingual_lift"} <= set(V4.weights)
    assert V4.calibration is not None
    held_out = V4.calibration["leave_one_group_out"]
    assert {
        "xlang.xquad-zh-dev-over-xquad-en-dev",
        "near-miss.drcd-dev",
        "native.dureader-checklist-dev",
    } <= set(held_out)
    assert "xlang" in V4.calibrated_on
    assert "python -m bench.routing.fit" in V4.calibration["command"]


def test_leave_one_out_never_trains_on_what_it_checks():
    keys = [
        "cmrc2018-dev",
        "xquad-en-dev",
        "xquad-zh-dev",
        "keyword.xquad-zh-dev",
        "xlang.xquad-zh-dev-over-xquad-en-dev",
        "xlang.xquad-en-dev-over-xquad-zh-dev",
        "combined",
        "native.dureader-checklist-dev",
    ]
    assert variant_of("combined") == "mixed"
    assert variant_of("keyword.xquad-zh-dev") == "keyword"
    assert sets_of("xlang.xquad-zh-dev-over-xquad-en-dev") == {"xquad-zh-dev", "xquad-en-dev"}
    by_variant = training_groups("xlang.xquad-zh-dev-over-xquad-en-dev", keys, "variant")
    assert not [k for k in by_variant if k.startswith("xlang.")]
    assert "combined" not in by_variant
    by_set = training_groups("xquad-en-dev", keys, "set")  # nor on its parallel set, xquad-zh
    assert by_set == ["cmrc2018-dev", "native.dureader-checklist-dev"]
    assert training_groups("combined", keys, "set") == ["native.dureader-checklist-dev"]
    by_group = training_groups("xquad-zh-dev", keys, "group")
    assert "xquad-zh-dev" not in by_group
    assert "combined" not in by_group
    assert "keyword.xquad-zh-dev" in by_group


def test_stored_records_without_languages_take_their_documents_from_the_ingested_corpus(tmp_path: Path):
    candidate = {
        "chunk_id": 1,
        "document_id": "d1",
        "external_id": "Normans_p0",
        "title": "Normans",
        "heading_path": [],
        "similarity": 0.8,
        "vector_rank": 1,
        "full_text_rank": None,
        "rrf_score": 0.01,
        "keyword_coverage": 0.0,
        "final_score": 1.0,
        "content_tokens": "",
        "content": "",
    }
    record = {
        "set": "x",
        "qid": "q1",
        "text": ZH_QUESTION,
        "answerable": True,
        "gold_doc": "Normans_p0",
        "terms": query_terms(ZH_QUESTION),
        "term_idfs": {},
        "term_dfs": {},
        "n_chunks": 1,
        "searches": {"default": {"depth": 15, "candidates": [candidate], "confidence": {}}},
    }
    path = tmp_path / "xlang.a-over-b.records.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    (tmp_path / "xlang.a-over-b").mkdir()
    (tmp_path / "xlang.a-over-b" / "corpus.jsonl").write_text(
        json.dumps({"_id": "Normans_p0", "title": "Normans", "text": EN_GOLD}) + "\n", encoding="utf-8"
    )
    (loaded,) = load_records(path)
    assert loaded.searches["default"].candidates[0].content_language == "en"


def test_the_ranking_study_counts_a_chinese_questions_number_in_an_english_passage():
    terms = query_terms("哪座堡垒是1964年重建的？")
    idfs = dict.fromkeys(terms, 3.0)

    def row(i: int, tokens: str, cosine: float, final: float) -> Candidate:
        return Candidate(i, f"d{i}", f"p{i}", "", [], cosine, i, None, None, 0.0, final, tokens, "", "en")

    # The reranker gave both the same score; only one holds the question's year.
    plain, dated = row(1, "", 0.80, 0.5), row(2, "1964", 0.79, 0.5 * 2.718281828 ** (-9.1 * 3 / 18))
    record = QuestionRecord("x", "q", "哪座堡垒是1964年重建的？", True, "p2", terms, idfs, {}, 2)
    record.searches["default"] = SearchRecord(15, [plain, dated], {})
    ranked = orders(record, idf_weight=9.1)
    assert [c.external_id for c in ranked[ORDERS[1]]] == ["p1", "p2"]  # cosine alone
    assert [c.external_id for c in ranked[ORDERS[2]]] == ["p2", "p1"]  # the year counts in full
