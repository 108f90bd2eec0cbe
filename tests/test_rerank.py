"""Rerank policies (versioned files, loaded at start-up), their scoring, the dynamic cut, diversity."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest

from backend.retrieval.rerank import (
    candidate_features,
    diversify,
    dynamic_top_k,
    idf_coverage,
    phrase_coverage,
    policy_scores,
    query_bigrams,
)
from backend.retrieval.rerank_policy import (
    FEATURES,
    RERANK_POLICIES_DIR,
    RerankPolicy,
    RerankPolicyError,
    available_rerank_versions,
    load_rerank_policy,
    save_rerank_policy,
)


@dataclass
class Cand:
    similarity: float | None = 0.8
    full_text_score: float | None = None
    rrf_score: float | None = None
    content_tokens: str = ""
    content: str = "text"
    title: str = ""


# --- policy files ---------------------------------------------------------------------------------


def test_v1_is_the_seed_formula_and_every_shipped_policy_loads():
    v1 = load_rerank_policy("v1")
    assert v1.weights == {"similarity": 0.7, "keyword_coverage": 0.25, "heading": 0.05}
    assert (v1.output, v1.drop_ratio, v1.name) == ("linear", 0.6, "rerank_v1")
    assert load_rerank_policy("rerank_v1") == v1
    versions = available_rerank_versions()
    assert versions[0] == "v1"
    assert len(versions) >= 2
    for version in versions:
        policy = load_rerank_policy(version)
        assert set(policy.weights) <= set(FEATURES)


def test_the_default_policy_is_a_learned_one_that_says_how_it_was_validated(settings):
    policy = load_rerank_policy(settings.rag_rerank_policy)
    assert policy.output == "softmax"
    assert policy.calibration is not None
    assert policy.calibration["validation"] == "leave-one-dataset-out"
    assert set(policy.calibration["held_out_ndcg@10"]) >= {"cmrc2018-dev", "drcd-dev"}


def test_an_unknown_version_names_what_exists():
    with pytest.raises(RerankPolicyError, match=r"'v99'.*available: v1, v2"):
        load_rerank_policy("v99")
    with pytest.raises(RerankPolicyError, match="unknown rerank policy"):
        load_rerank_policy("../v1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"weights": {"cosine": 1.0, "magic": 2.0}}, "unknown features"),
        ({"weights": {}}, "at least one"),
        ({"weights": {"cosine": float("nan")}}, "finite"),
        ({"output": "sigmoid"}, "output"),
        ({"cut": {"drop_ratio": 0}}, "drop_ratio"),
        ({"cut": {}}, "drop_ratio"),
        ({"version": "v3"}, "file name says 'v2'"),
    ],
)
def test_a_malformed_policy_file_is_refused_with_the_reason(tmp_path, change, message):
    data = load_rerank_policy("v1").to_json() | {"version": "v2"} | change
    (tmp_path / "rerank_v2.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RerankPolicyError, match=message):
        load_rerank_policy("v2", tmp_path)


def test_a_saved_policy_round_trips_and_is_never_overwritten(tmp_path):
    policy = RerankPolicy("v7", {"cosine": 90.0, "keyword_coverage": 5.0}, "softmax", 0.1)
    path = save_rerank_policy(policy, tmp_path)
    assert load_rerank_policy("v7", tmp_path) == policy
    with pytest.raises(RerankPolicyError, match="never rewritten"):
        save_rerank_policy(policy, tmp_path)
    assert path.name == "rerank_v7.json"


def test_an_unknown_policy_stops_start_up_naming_the_setting(make_services):
    from backend.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"RAG_RERANK_POLICY: .*'v42'.*available"):
        make_services(rag_rerank_policy="v42")


def test_shipped_policies_dir_is_the_package_folder():
    assert (RERANK_POLICIES_DIR / "rerank_v1.json").is_file()


# --- features and scores --------------------------------------------------------------------------


def test_features_normalise_corpus_scaled_scores_by_the_best_candidate():
    cands = [
        Cand(0.9, full_text_score=8.0, rrf_score=0.03, content_tokens="袋鼠 澳洲", title="尤金袋鼠"),
        Cand(0.7, full_text_score=None, rrf_score=0.015, content="# 标题\n正文", content_tokens="考拉"),
    ]
    first, second = candidate_features(cands, ["袋鼠", "澳洲"], "cosine")
    assert (first["full_text"], first["rrf"], second["full_text"], second["rrf"]) == (1.0, 1.0, 0.0, 0.5)
    assert (first["keyword_coverage"], second["keyword_coverage"]) == (1.0, 0.0)
    assert first["title_coverage"] == 0.5  # 袋鼠 is in the title, 澳洲 is not
    assert (first["heading"], second["heading"]) == (0.0, 1.0)
    assert first["similarity"] == 0.9
    assert candidate_features(cands, ["袋鼠"], "rrf_score / best")[1]["similarity"] == 0.5


def test_idf_coverage_counts_a_rare_term_for_more_than_a_common_one():
    idf = {"袋鼠": 3.0, "动物": 1.0}
    assert idf_coverage(["袋鼠", "动物"], "袋鼠 是 有袋类", idf) == pytest.approx(0.75)
    assert idf_coverage(["袋鼠", "动物"], "动物 园", idf) == pytest.approx(0.25)
    assert idf_coverage(["袋鼠", "新词"], "新词", {"袋鼠": 3.0}) == pytest.approx(0.5)  # unknown: the mean
    assert idf_coverage([], "袋鼠", idf) == 0.0


def test_phrase_coverage_sees_word_order_and_chinese_phrases_beyond_segmentation():
    zh = query_bigrams("尤金袋鼠分布在哪里")
    assert {"尤金", "袋鼠", "分布"} <= zh
    assert phrase_coverage(zh, "尤金袋鼠分布在澳洲南部。", "") > phrase_coverage(zh, "袋鼠，尤金，分布。", "")
    en = query_bigrams("How many points did the Panthers defense give up?")
    assert "panther defens" in en  # stemmed like the index tokens
    hit = phrase_coverage(en, "", "the panther defens gave up just 308 point")
    miss = phrase_coverage(en, "", "defens of the panther point")
    assert hit > miss
    assert phrase_coverage(frozenset(), "anything", "anything") == 0.0


def test_linear_policy_scores_are_the_seed_sum():
    feats = [{"similarity": 0.8, "keyword_coverage": 0.5, "heading": 1.0}]
    assert policy_scores(feats, load_rerank_policy("v1")) == [pytest.approx(0.8 * 0.7 + 0.5 * 0.25 + 0.05)]


def test_softmax_policy_scores_are_shares_whose_ratio_is_the_likelihood_ratio():
    policy = RerankPolicy("v9", {"cosine": 10.0}, "softmax", 0.1)
    shares = policy_scores([{"cosine": 0.9}, {"cosine": 0.8}, {"cosine": 0.5}], policy)
    assert sum(shares) == pytest.approx(1.0)
    assert shares[1] / shares[0] == pytest.approx(math.exp(-1.0))
    assert policy_scores([], policy) == []


# --- the dynamic cut --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "kmin", "kmax", "ratio", "expected"),
    [
        ([1.0, 0.9, 0.7, 0.59, 0.5], 1, 5, 0.6, 3),  # 0.59 < 0.6 cuts
        ([1.0, 0.6, 0.6], 1, 5, 0.6, 3),  # exactly at the threshold is kept
        ([1.0, 0.1, 0.1], 1, 5, 0.6, 1),  # a clear winner alone
        ([1.0, 0.1, 0.1], 2, 5, 0.6, 2),  # top_k_min always kept
        ([1.0, 0.99, 0.98, 0.97], 1, 2, 0.6, 2),  # top_k_max caps
        ([], 1, 5, 0.6, 0),
        ([0.5], 3, 5, 0.6, 1),  # fewer candidates than top_k_min
    ],
)
def test_dynamic_top_k_edges(scores, kmin, kmax, ratio, expected):
    assert dynamic_top_k(scores, top_k_min=kmin, top_k_max=kmax, drop_ratio=ratio) == expected


def test_the_seed_cut_never_fires_on_seed_scores_but_the_likelihood_cut_does():
    """The bug of issue 12: seed final scores sit within 0.6 x best, so every question got 5 results."""
    seed = load_rerank_policy("v1")
    feats = [
        {"similarity": s, "keyword_coverage": c, "heading": 0.0, "cosine": s}
        for s, c in [(0.92, 1.0), (0.83, 0.5), (0.82, 0.25), (0.81, 0.25), (0.80, 0.0)]
    ]
    seed_scores = policy_scores(feats, seed)
    assert dynamic_top_k(seed_scores, top_k_min=1, top_k_max=5, drop_ratio=seed.drop_ratio) == 5
    learned = load_rerank_policy("v2")
    shares = sorted(policy_scores([f | _zero(learned) for f in feats], learned), reverse=True)
    assert dynamic_top_k(shares, top_k_min=1, top_k_max=5, drop_ratio=learned.drop_ratio) == 1


def _zero(policy: RerankPolicy) -> dict[str, float]:
    return {name: 0.0 for name in policy.weights if name not in ("cosine", "keyword_coverage")}


# --- diversity ------------------------------------------------------------------------------------------


def _diversify(ranked, cap=3):
    return diversify(ranked, per_doc_cap=cap, document=lambda c: c[0], content=lambda c: c)


def test_one_document_fills_at_most_cap_slots_ahead_of_the_others():
    ranked = ["a1", "a2", "a3", "a4", "b1", "a5", "c1"]
    assert _diversify(ranked)[:5] == ["a1", "a2", "a3", "b1", "c1"]
    assert _diversify(ranked) == ["a1", "a2", "a3", "b1", "c1", "a4", "a5"]  # then the overflow
    assert _diversify(ranked, cap=0) == ranked


def test_diversity_never_moves_a_document_s_first_chunk_and_drops_duplicate_texts():
    ranked = ["a1", "b1", "a2", "a3", "a4", "c1", "b1"]
    out = _diversify(ranked, cap=2)
    assert out == ["a1", "b1", "a2", "c1", "a3", "a4"]
    assert list(dict.fromkeys(x[0] for x in out)) == list(dict.fromkeys(x[0] for x in ranked))
