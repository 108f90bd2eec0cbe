"""OverallScore, retrieval confidence, versioned policies and calibration (overall-score-confidence.md)."""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, field

import numpy as np
import pytest

from backend.cli import main as cli_main
from backend.confidence.calibrate import CalibrationError, auc, calibrate
from backend.confidence.policy import (
    POLICIES_DIR,
    Policy,
    PolicyError,
    RiskFlagRule,
    WebFallbackRule,
    available_versions,
    load_policy,
    save_new_policy,
)
from backend.confidence.scoring import (
    aggregate_parents,
    confidence_level,
    normalise,
    overall_score,
    percentile,
    retrieval_confidence,
)
from backend.search.types import ScoredChunk

POLICY = Policy(version="v1")
_ids = iter(range(1, 1_000_000))


@dataclass
class Chunk:
    document_id: str | uuid.UUID
    rrf_score: float | None
    final_score: float
    heading_path: list[str] = field(default_factory=list)
    title: str = "doc"
    chunk_id: int = field(default_factory=lambda: next(_ids))


def doc(document_id, n_hits, *, rrf=0.01, final=0.5, sections=1):
    """n_hits chunks of one document spread over `sections` headings."""
    return [Chunk(document_id, rrf, final, [f"s{i % sections}"]) for i in range(n_hits)]


def confidence(chunks, totals, policy=POLICY, **kw):
    return retrieval_confidence(chunks, totals, policy, **kw)


def parent(result, parent_id):
    return next(p for p in result["top_parents"] if p["parent_id"] == parent_id)


# --- normalisation and aggregation ---------------------------------------------------------------------


def test_percentile_is_numpys_linear_interpolation():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 10, 31):
        values = list(rng.random(n))
        for q in (10, 60, 90):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_normalise_maps_p10_to_0_and_p90_to_1():
    values = [float(x) for x in range(11)]  # P10 = 1, P90 = 9
    norm = normalise(values)
    assert norm[0] == 0.0
    assert norm[1] == pytest.approx(0.0, abs=1e-8)
    assert norm[5] == pytest.approx(0.5)
    assert norm[9] == pytest.approx(1.0)
    assert norm[10] == 1.0


@pytest.mark.parametrize("values", [[0.42], [0.3, 0.3, 0.3]])
def test_normalise_without_spread_gives_1(values):
    # Documented choice: a lone candidate (or all tied) sits at P90, which the formula maps to 1.
    assert normalise(values) == [1.0] * len(values)


def test_aggregate_parents_features():
    a = [Chunk("A", 0.03, 0.8, ["intro"]), Chunk("A", 0.02, 0.6, ["intro"]), Chunk("A", 0.01, 0.9, ["steps"])]
    b = [Chunk("B", 0.02, 0.7, [])]
    parents = aggregate_parents(a + b + [a[0]], {"A": 10, "B": 4})  # a repeated chunk counts once
    pa, pb = parents
    assert (pa.parent_id, pa.hit_chunks, pa.coverage, pa.total_chunks) == ("A", 3, 2, 10)
    assert pa.rrf_sum == pytest.approx(0.06)
    assert pa.max_score == 0.9
    assert pa.coverage_ratio == 0.3
    assert (pb.coverage, pb.coverage_ratio, pb.max_score) == (1, 0.25, 0.7)


def test_vector_only_mode_sums_final_scores():
    parents = aggregate_parents([Chunk("A", None, 0.8), Chunk("A", 0.5, 0.6)], {"A": 4})
    assert parents[0].rrf_sum == pytest.approx(1.4)  # one chunk without rrf_score: final_score for all


def test_totals_are_looked_up_by_uuid_or_string_and_stale_totals_are_clamped():
    d = uuid.uuid4()
    assert aggregate_parents([Chunk(d, 0.1, 0.5)], {str(d): 3})[0].total_chunks == 3
    assert aggregate_parents(doc(d, 3), {d: 1})[0].coverage_ratio == 1.0
    with pytest.raises(ValueError, match="no entry for document"):
        aggregate_parents([Chunk("A", 0.1, 0.5)], {})


def test_works_on_the_real_scored_chunk():
    d = uuid.uuid4()
    chunk = ScoredChunk(
        chunk_id=1,
        document_id=d,
        external_id="x",
        title="T",
        heading_path=["H"],
        position=0,
        content="c",
        content_hash="h",
        metadata={},
        content_tokens="t c",
        vector_rank=1,
        full_text_rank=None,
        rrf_score=0.016,
        similarity=0.9,
        final_score=0.7,
    )
    result = confidence([chunk], {d: 2})
    assert result["best_parent_id"] == str(d)
    json.dumps(result)  # the contract is plain JSON


# --- OverallScore and levels -----------------------------------------------------------------------------


def test_overall_is_the_weighted_geometric_mean():
    assert overall_score(0.8, 0.5, 0.25, POLICY) == pytest.approx(0.8**0.5 * 0.5**0.3 * 0.25**0.2)


def test_any_zero_component_makes_overall_zero_and_tiny_ones_are_smoothed():
    assert overall_score(0.9, 0.0, 0.9, POLICY) == 0.0
    assert overall_score(0.001, 1.0, 1.0, POLICY) == pytest.approx(0.01**0.5)  # max(S, 0.01)


def test_a_single_parent_by_hand():
    # 2 of 4 chunks hit, in 2 sections: every norm is 1 (no spread), coverage_ratio 0.5.
    result = confidence(doc("A", 2, sections=2), {"A": 4})
    top = result["top_parents"][0]
    assert (top["strength"], top["coverage"], top["stability"]) == (1.0, 0.75, 0.5)  # 0.5*1 + 0.5*0.5
    assert result["best_overall_score"] == pytest.approx(0.75**0.3 * 0.5**0.2, abs=1e-6)  # ~0.7986
    assert result["confidence_level"] == "high"
    assert (result["score_ratio"], result["need_hitl"], result["web_fallback"]) == (None, False, False)


@pytest.mark.parametrize(
    ("score", "level"),
    [
        (0.0, "low"),
        (0.3499, "low"),
        (0.35, "medium"),
        (0.6799, "medium"),
        (0.68, "high"),
        (1.0, "high"),
    ],
)
def test_confidence_levels_at_the_thresholds(score, level):
    assert confidence_level(score, POLICY) == level


@pytest.mark.parametrize(
    ("t_low", "t_high", "level"), [(0.9, 0.95, "low"), (0.5, 0.9, "medium"), (0.5, 0.7, "high")]
)
def test_the_level_uses_the_policys_thresholds(t_low, t_high, level):
    policy = dataclasses.replace(POLICY, t_low=t_low, t_high=t_high)
    result = confidence(doc("A", 2, sections=2), {"A": 4}, policy)  # best ~0.7986
    assert result["confidence_level"] == level
    assert result["thresholds_used"] == {"T_low": t_low, "T_high": t_high, "R_hitl": 0.92}


# --- risk flags -------------------------------------------------------------------------------------------


def test_low_coverage_strong_parent_hitting_one_section():
    chunks = (
        doc("A", 1, rrf=0.05, final=0.9)
        + doc("B", 3, rrf=0.01, final=0.5, sections=3)
        + doc("C", 3, rrf=0.02 / 3, final=0.4, sections=3)
    )
    result = confidence(chunks, {"A": 10, "B": 10, "C": 10})
    a = parent(result, "A")
    assert a["strength"] == 1.0
    assert a["coverage"] == pytest.approx(0.05)
    assert "low_coverage" in a["risk_flags"]
    assert "low_coverage" not in parent(result, "B")["risk_flags"]
    relaxed = dataclasses.replace(POLICY, risk_flags=RiskFlagRule(coverage_low=0.05))
    relaxed_result = confidence(chunks, {"A": 10, "B": 10, "C": 10}, relaxed)
    assert "low_coverage" not in parent(relaxed_result, "A")["risk_flags"]


def test_single_spike_best_chunk_but_little_support():
    chunks = (
        doc("A", 1, rrf=0.01, final=0.95)
        + doc("B", 3, rrf=0.02, final=0.6)
        + doc("C", 1, rrf=0.05, final=0.5)
    )
    result = confidence(chunks, {"A": 3, "B": 3, "C": 3})
    a = parent(result, "A")
    assert (a["features"]["max_score_norm"], a["features"]["rrf_sum_norm"]) == (1.0, 0.0)
    assert "single_spike" in a["risk_flags"]
    assert "single_spike" not in parent(result, "B")["risk_flags"]
    assert "single_spike" not in parent(result, "C")["risk_flags"]


@pytest.mark.parametrize(
    ("hits", "total", "sparse", "huge"),
    [
        (1, 40, True, False),  # coverage_ratio 0.025 < 0.05
        (1, 10, False, False),  # 0.1
        (1, 150, True, True),  # 150 chunks >= 100 and 0.0067 < 0.1
        (20, 150, False, False),  # 0.133: big but not sparse
        (4, 50, False, False),  # 0.08 < 0.1 but 50 chunks is not huge
    ],
)
def test_sparse_evidence_and_huge_doc_sparse(hits, total, sparse, huge):
    flags = confidence(doc("A", hits), {"A": total})["top_parents"][0]["risk_flags"]
    assert ("sparse_evidence" in flags, "huge_doc_sparse" in flags) == (sparse, huge)


def test_ambiguous_candidate_and_hitl_for_two_equally_good_parents():
    result = confidence(doc("A", 2) + doc("B", 2), {"A": 4, "B": 4})
    assert result["score_ratio"] == 1.0
    assert result["need_hitl"] is True
    first, second = result["top_parents"]
    assert "ambiguous_candidate" not in first["risk_flags"]
    assert "ambiguous_candidate" in second["risk_flags"]


def test_hitl_compares_score2_over_score1_with_r_hitl():
    chunks = (
        doc("A", 3, rrf=0.02, final=0.8, sections=2)
        + doc("B", 2, rrf=0.02, final=0.7)
        + doc("C", 1, rrf=0.01, final=0.3)
    )
    totals = {"A": 6, "B": 6, "C": 6}
    result = confidence(chunks, totals)
    s1, s2 = (p["overall_score"] for p in result["top_parents"][:2])
    ratio = s2 / s1
    assert 0 < ratio < 1
    assert result["score_ratio"] == pytest.approx(ratio, abs=1e-5)
    below = confidence(chunks, totals, dataclasses.replace(POLICY, r_hitl=round(ratio, 6) - 1e-4))
    above = confidence(chunks, totals, dataclasses.replace(POLICY, r_hitl=round(ratio, 6) + 1e-4))
    assert below["need_hitl"] is True
    assert "ambiguous_candidate" in below["top_parents"][1]["risk_flags"]
    assert above["need_hitl"] is False
    assert "ambiguous_candidate" not in above["top_parents"][1]["risk_flags"]


# --- web fallback and the contract ------------------------------------------------------------------------


def test_no_results_recommend_the_web():
    result = confidence([], {})
    assert (result["best_parent_id"], result["best_overall_score"]) == (None, 0.0)
    assert (result["confidence_level"], result["web_fallback"]) == ("low", True)
    assert (result["web_fallback_reason"], result["top_parents"]) == ("no_results", [])
    off = dataclasses.replace(POLICY, web_fallback=WebFallbackRule(on_empty=False))
    assert confidence([], {}, off)["web_fallback"] is False


def test_low_confidence_recommends_the_web_unless_clarification_can_resolve_it():
    strict = dataclasses.replace(POLICY, t_low=0.99, t_high=1.0)
    clear = confidence(doc("A", 2), {"A": 4}, strict)
    assert (clear["confidence_level"], clear["web_fallback"], clear["web_fallback_reason"]) == (
        "low",
        True,
        "low_confidence",
    )
    ambiguous = confidence(doc("A", 2) + doc("B", 2), {"A": 4, "B": 4}, strict)
    level_hitl_web = (ambiguous["confidence_level"], ambiguous["need_hitl"], ambiguous["web_fallback"])
    assert level_hitl_web == ("low", True, False)
    no_exception = dataclasses.replace(strict, web_fallback=WebFallbackRule(unless_hitl=False))
    assert confidence(doc("A", 2) + doc("B", 2), {"A": 4, "B": 4}, no_exception)["web_fallback"] is True


def test_medium_or_high_confidence_stays_local_unless_the_policy_says_otherwise():
    assert confidence(doc("A", 2, sections=2), {"A": 4})["web_fallback"] is False  # high
    medium = dataclasses.replace(
        POLICY, t_low=0.5, t_high=0.9, web_fallback=WebFallbackRule(on_levels=("low", "medium"))
    )
    result = confidence(doc("A", 2, sections=2), {"A": 4}, medium)
    assert (result["web_fallback"], result["web_fallback_reason"]) == (True, "medium_confidence")


def test_the_output_contract_of_section_10():
    result = confidence(doc("A", 2) + doc("B", 1) + doc("C", 1), {"A": 4, "B": 4, "C": 4}, top_n=2)
    assert {
        "score_policy_version",
        "best_parent_id",
        "best_overall_score",
        "confidence_level",
        "thresholds_used",
        "top_parents",
    } <= set(result)
    assert {"score_ratio", "need_hitl", "web_fallback", "web_fallback_reason"} <= set(result)
    assert result["score_policy_version"] == "overall_v1"
    assert result["thresholds_used"] == {"T_low": 0.35, "T_high": 0.68, "R_hitl": 0.92}
    assert len(result["top_parents"]) == 2
    assert result["parents_considered"] == 3
    for p in result["top_parents"]:
        assert {"parent_id", "overall_score", "strength", "coverage", "stability", "risk_flags"} <= set(p)
    scores = [p["overall_score"] for p in result["top_parents"]]
    assert scores == sorted(scores, reverse=True)
    assert result["best_overall_score"] == scores[0]
    assert result["best_parent_id"] == result["top_parents"][0]["parent_id"] == "A"
    assert json.loads(json.dumps(result)) == result


# --- versioned policies -----------------------------------------------------------------------------------


def test_the_shipped_v1_is_the_seed_defaults():
    policy = load_policy("v1")
    assert policy == Policy(version="v1")
    assert (policy.alpha, policy.beta, policy.w1, policy.w2, policy.w3) == (0.6, 0.5, 0.5, 0.3, 0.2)
    assert policy.calibrated_on == "seed defaults, not yet calibrated"
    assert load_policy("overall_v1") == policy
    assert "v1" in available_versions()


def test_an_unknown_version_lists_the_available_ones(tmp_path):
    with pytest.raises(PolicyError, match=r"unknown score policy version 'v99'.*available: v1"):
        load_policy("v99")
    with pytest.raises(PolicyError, match="available: none"):
        load_policy("v1", tmp_path)


def test_saving_never_overwrites(tmp_path, monkeypatch):
    path1, saved1 = save_new_policy(POLICY, tmp_path)
    assert (path1.name, saved1.version) == ("v2.json", "v2")  # newer than the v1 it derives from
    before = path1.read_text()
    path2, saved2 = save_new_policy(dataclasses.replace(POLICY, t_low=0.2), tmp_path)
    assert path2.name == "v3.json"
    assert path1.read_text() == before
    assert load_policy("v3", tmp_path) == saved2
    assert load_policy("v3", tmp_path).t_low == 0.2
    # A stale directory listing (another writer got there first) still never overwrites.
    monkeypatch.setattr("backend.confidence.policy.available_versions", lambda directory: [])
    path3, _ = save_new_policy(POLICY, tmp_path)
    assert path3.name == "v4.json"
    assert path1.read_text() == before


def test_inconsistent_policies_are_refused():
    with pytest.raises(PolicyError, match="T_low"):
        Policy(version="v1", t_low=0.8, t_high=0.5)
    with pytest.raises(PolicyError, match="alpha"):
        Policy(version="v1", alpha=1.5)
    with pytest.raises(PolicyError, match="w1, w2, w3"):
        Policy(version="v1", w1=0, w2=0, w3=0)
    with pytest.raises(PolicyError, match="version"):
        Policy(version="latest")


def test_a_broken_policy_file_names_the_problem(tmp_path):
    data = POLICY.to_json()
    del data["thresholds"]["R_hitl"]
    (tmp_path / "v1.json").write_text(json.dumps(data))
    with pytest.raises(PolicyError, match="R_hitl"):
        load_policy("v1", tmp_path)
    (tmp_path / "v2.json").write_text(json.dumps(POLICY.to_json()))  # says v1 inside
    with pytest.raises(PolicyError, match="declares version 'v1'"):
        load_policy("v2", tmp_path)


# --- calibration ------------------------------------------------------------------------------------------


def rows(good, ambiguous, bad):
    out = [
        {"query": f"g{i}", "label": "good", "best_overall_score": s, "score_ratio": 0.5}
        for i, s in enumerate(good)
    ]
    out += [
        {"query": f"a{i}", "label": "ambiguous", "best_overall_score": 0.6, "score_ratio": r}
        for i, r in enumerate(ambiguous)
    ]
    out += [
        {"query": f"b{i}", "label": "bad", "best_overall_score": s, "score_ratio": None}
        for i, s in enumerate(bad)
    ]
    return out


GOOD = [0.6, 0.7, 0.8, 0.9, 1.0]
AMBIGUOUS = [0.80, 0.85, 0.90, 0.95, 1.0]
BAD = [0.1, 0.2, 0.3, 0.6, 0.65]


def test_calibration_by_hand():
    policy, report = calibrate(rows(GOOD, AMBIGUOUS, BAD), POLICY)
    assert report["T_low"] == pytest.approx(0.63)  # P90 of bad: 0.6 + 0.6 * (0.65 - 0.6)
    assert report["T_high"] == pytest.approx(0.64)  # P10 of good: 0.6 + 0.4 * (0.7 - 0.6)
    assert report["R_hitl"] == pytest.approx(0.92)  # P60 of ambiguous: 0.90 + 0.4 * (0.95 - 0.90)
    assert report["auc"] == pytest.approx(23.5 / 25)  # 0.6 ties one good (1/2), 0.65 beats one
    assert (policy.t_low, policy.t_high) == (report["T_low"], report["T_high"])
    assert policy.r_hitl == report["R_hitl"]
    assert (policy.alpha, policy.w1, policy.derived_from) == (0.6, 0.5, "v1")
    assert report["counts"] == {"good": 5, "ambiguous": 5, "bad": 5}
    assert report["warnings"] == []


def test_auc_mann_whitney():
    assert auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auc([0.1], [0.9]) == 0.0
    assert auc([0.5, 0.5], [0.5]) == 0.5


def test_overlapping_good_and_bad_are_reported_and_kept_in_order():
    _, report = calibrate(rows(GOOD, AMBIGUOUS, [0.1, 0.9, 0.95, 0.97, 0.99]), POLICY)
    assert report["T_low"] == pytest.approx(0.64)
    assert report["T_high"] == pytest.approx(0.982)
    assert len(report["warnings"]) == 1
    assert "tails of good and bad overlap" in report["warnings"][0]


def test_ambiguous_rows_without_a_ratio_are_left_out_with_a_warning():
    labelled = rows(GOOD, AMBIGUOUS, BAD) + [{"query": "x", "label": "ambiguous", "best_overall_score": 0.5}]
    _, report = calibrate(labelled)
    assert report["R_hitl"] == pytest.approx(0.92)
    assert "1 ambiguous rows have no score_ratio" in report["warnings"][0]


@pytest.mark.parametrize(
    ("labelled", "message"),
    [
        (rows([], AMBIGUOUS, BAD), "no 'good' rows"),
        (rows(GOOD, AMBIGUOUS, []), "no 'bad' rows"),
        (rows(GOOD, [], BAD), "no 'ambiguous' rows"),
        (
            rows(GOOD, [], [])[:3] + [{"query": "q", "label": "meh", "best_overall_score": 0.1}],
            "row 4: label",
        ),
        ([{"query": "q", "best_overall_score": 0.1}], "row 1: missing 'label'"),
        (
            [{"query": "q", "label": "bad", "best_overall_score": "high"}],
            "best_overall_score must be a number",
        ),
    ],
)
def test_calibration_refuses_what_it_cannot_use(labelled, message):
    with pytest.raises(CalibrationError, match=message):
        calibrate(labelled)


# --- the calibrate command --------------------------------------------------------------------------------


def write_jsonl(path, labelled):
    path.write_text("\n".join(json.dumps(r) for r in labelled) + "\n", encoding="utf-8")
    return path


def test_calibrate_command_writes_the_next_policy(tmp_path, capsys):
    shipped = sorted(p.name for p in POLICIES_DIR.glob("*.json"))
    labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
    policies = tmp_path / "policies"
    assert cli_main(["calibrate", str(labels), "--policies-dir", str(policies), "--from-version", "v1"]) == 0
    out = capsys.readouterr().out
    assert "T_low  = 0.6300" in out
    assert "T_high = 0.6400" in out
    assert "R_hitl = 0.9200" in out
    assert "AUC    = 0.9400" in out
    assert str(policies / "v2.json") in out
    written = json.loads((policies / "v2.json").read_text())
    assert written["thresholds"] == {
        "T_low": pytest.approx(0.63),
        "T_high": pytest.approx(0.64),
        "R_hitl": pytest.approx(0.92),
    }
    assert written["derived_from"] == "v1"
    assert written["calibration"]["auc"] == pytest.approx(0.94)
    assert sorted(p.name for p in POLICIES_DIR.glob("*.json")) == shipped  # --policies-dir was honoured
    # A second run derives from the newest in the directory and never touches v2.
    assert cli_main(["calibrate", str(labels), "--policies-dir", str(policies), "--from-version", "v2"]) == 0
    assert (policies / "v3.json").is_file()
    assert json.loads((policies / "v2.json").read_text()) == written


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "labels file not found"),
        ('{"label": "good", "best_overall_score": 0.5}\n{not json\n', "labels.jsonl:2: invalid JSON"),
        ('{"query": "q", "best_overall_score": 0.5}\n', "labels.jsonl:1: missing 'label'"),
        ("\n\n", "has no labelled rows"),
        ('{"query": "q", "label": "good", "best_overall_score": 0.5}\n', "no 'bad' rows"),
    ],
)
def test_calibrate_command_explains_bad_input(tmp_path, capsys, content, message):
    labels = tmp_path / "labels.jsonl"
    if content is not None:
        labels.write_text(content, encoding="utf-8")
    assert cli_main(["calibrate", str(labels), "--policies-dir", str(tmp_path / "p")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())


def test_calibrate_command_derives_from_the_newest_seed_formula_policy(tmp_path, capsys):
    # v3 (answerability) is newer, but calibrate tunes the seed's formula: its default base is v2.
    labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
    assert cli_main(["calibrate", str(labels), "--policies-dir", str(tmp_path / "p")]) == 0
    written = json.loads((tmp_path / "p" / "v3.json").read_text())
    assert written["derived_from"] == "v2"
    assert cli_main(["calibrate", str(labels), "--from-version", "v3", "--policies-dir", str(tmp_path)]) == 2
    assert "not the seed's OverallScore" in capsys.readouterr().err


def test_calibrate_command_unknown_base_version(tmp_path, capsys):
    labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
    assert cli_main(["calibrate", str(labels), "--from-version", "v42", "--policies-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown score policy version 'v42'" in err
    assert "v1" in err


def test_math_sanity_of_the_hand_values():
    # The threshold tests place their bounds around the hand example's score (0.7 < 0.7986 < 0.9):
    # the code must still compute that value for them to mean what they say.
    assert overall_score(1.0, 0.75, 0.5, POLICY) == pytest.approx(0.7986, abs=1e-4)
    assert confidence(doc("A", 2, sections=2), {"A": 4})["best_overall_score"] == pytest.approx(
        0.7986, abs=1e-4
    )


# --- calibrated normalisation (anchors pooled over a labelled run) ---------------------------------------

ANCHORS = {"rrf_sum": (0.0, 0.033), "max_score": (0.4, 0.9), "coverage": (1.0, 1.0), "log_chunks": (0.7, 1.1)}


def test_per_query_normalisation_cannot_tell_a_weak_best_candidate_from_a_strong_one():
    strong = confidence(
        doc("A", 1, rrf=0.033, final=0.95) + doc("B", 1, rrf=0.016, final=0.5), {"A": 1, "B": 1}
    )
    weak = confidence(
        doc("A", 1, rrf=0.033, final=0.45) + doc("B", 1, rrf=0.016, final=0.40), {"A": 1, "B": 1}
    )
    assert strong["best_overall_score"] == weak["best_overall_score"] == 1.0


def test_calibrated_anchors_keep_the_absolute_strength_of_the_evidence():
    anchored = dataclasses.replace(POLICY, anchors=ANCHORS)
    strong = confidence(
        doc("A", 1, rrf=0.033, final=0.95) + doc("B", 1, rrf=0.016, final=0.5), {"A": 1, "B": 1}, anchored
    )
    weak = confidence(
        doc("A", 1, rrf=0.033, final=0.45) + doc("B", 1, rrf=0.016, final=0.40), {"A": 1, "B": 1}, anchored
    )
    assert strong["best_overall_score"] > weak["best_overall_score"]
    assert strong["normalization"] == "calibrated"
    assert confidence(doc("A", 1), {"A": 1})["normalization"] == "per_query"


def test_anchors_round_trip_through_the_policy_file(tmp_path):
    anchored = dataclasses.replace(POLICY, anchors=ANCHORS)
    path, saved = save_new_policy(anchored, tmp_path)
    again = load_policy(saved.version, tmp_path)
    assert again.anchors == ANCHORS
    assert json.loads(path.read_text())["normalization"]["mode"] == "calibrated"


def test_calibration_with_parent_features_derives_anchors_and_separates_good_from_bad():
    def row(label, best_final, runner_final):
        parents = [
            {
                "rrf_sum": 0.033,
                "max_score": best_final,
                "coverage": 1,
                "total_chunks": 1,
                "coverage_ratio": 1.0,
            },
            {
                "rrf_sum": 0.016,
                "max_score": runner_final,
                "coverage": 1,
                "total_chunks": 1,
                "coverage_ratio": 1.0,
            },
        ]
        return {
            "query": "q",
            "label": label,
            "best_overall_score": 1.0,
            "score_ratio": 1.0,
            "parents": parents,
        }

    rows = [row("good", 0.9 + i / 100, 0.5) for i in range(5)] + [
        row("bad", 0.4 + i / 100, 0.38) for i in range(5)
    ]
    rows += [row("ambiguous", 0.7, 0.69), row("ambiguous", 0.72, 0.7)]
    policy, report = calibrate(rows, Policy(version="v1"))
    assert report["normalization"] == "calibrated"
    assert report["auc_per_query_normalisation"] == 0.5  # every row scored 1.0 per query
    assert report["auc"] == 1.0
    assert policy.anchors is not None
    assert set(policy.anchors) == {"rrf_sum", "max_score", "coverage", "log_chunks"}
    assert policy.t_low < policy.t_high


def test_calibrate_command_can_change_weights_in_the_new_version(tmp_path, capsys):
    labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
    args = ["calibrate", str(labels), "--policies-dir", str(tmp_path), "--from-version", "v1"]
    assert cli_main([*args, "--set", "alpha=0.2"]) == 0
    assert json.loads((tmp_path / "v2.json").read_text())["weights"]["alpha"] == 0.2
    assert cli_main([*args, "--set", "gamma=1"]) == 2
    assert "the weights are alpha, beta, w1, w2, w3" in capsys.readouterr().err
