"""fuse_pools_with_gap_protection: the seed's section 四, as properties and one example per branch."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.chat.fusion import ceil_count, fuse_pools_with_gap_protection


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    score: float


def by_score(items):
    """The test reranker: best score first, chunk_id breaking ties."""
    return sorted(items, key=lambda h: (-h.score, h.chunk_id))


def fuse(main, gap, top_k=5, gap_ratio=0.2, multiplier=3.0, gap_min_keep=None, rerank=by_score, diag=None):
    return fuse_pools_with_gap_protection(
        main, gap, top_k, gap_ratio, multiplier, gap_min_keep, rerank=rerank, diag=diag
    )


def hits(*pairs):
    return [Hit(i, s) for i, s in pairs]


def ids(items):
    return [h.chunk_id for h in items]


# --- properties ------------------------------------------------------------------------------------


@st.composite
def pools(draw):
    n = draw(st.integers(0, 30))
    scores = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n))
    where = draw(st.lists(st.sampled_from(["main", "gap", "both"]), min_size=n, max_size=n))
    items = [Hit(i, s) for i, s in enumerate(scores)]
    main = [h for h, w in zip(items, where, strict=True) if w in ("main", "both")]
    gap = [h for h, w in zip(items, where, strict=True) if w in ("gap", "both")]
    main = draw(st.permutations(main))
    gap = draw(st.permutations(gap))
    return main, gap


@settings(max_examples=300, deadline=None)
@given(
    pools=pools(),
    top_k=st.integers(1, 15),
    gap_ratio=st.floats(0, 1),
    multiplier=st.floats(0.5, 5),
    explicit=st.one_of(st.none(), st.integers(0, 20)),
)
def test_fusion_properties(pools, top_k, gap_ratio, multiplier, explicit):
    main, gap = pools
    diag: dict[str, Any] = {}
    out = fuse(main, gap, top_k, gap_ratio, multiplier, explicit, diag=diag)
    main_ids = set(ids(main))
    gap_only = [h for h in gap if h.chunk_id not in main_ids]  # an item in both pools counts as main
    distinct = len(main_ids) + len(gap_only)
    quota = explicit if explicit is not None else ceil_count(top_k * gap_ratio)
    effective = min(quota, len(gap_only), top_k)
    gap_ids = set(ids(gap_only))

    assert len(out) == min(top_k, distinct)
    assert len(set(ids(out))) == len(out)
    assert sum(h.chunk_id in gap_ids for h in out) >= effective
    # Kept main items are the best main items, in rank order; the output follows the global rank.
    ranked_main = [h for h in by_score(main) if h.chunk_id in main_ids]
    kept_main = [h for h in out if h.chunk_id not in gap_ids]
    assert kept_main == ranked_main[: len(kept_main)]
    assert out == by_score(out)
    # No gap item is left out while a lower-scored main item stays.
    rank = {h.chunk_id: i for i, h in enumerate(by_score(main + gap_only))}
    for g in gap_only:
        if g not in out:
            assert all(rank[m.chunk_id] < rank[g.chunk_id] for m in kept_main)
    d = diag["pool_fusion"]
    assert (d["main_in"], d["gap_in"], d["output_count"]) == (len(main_ids), len(gap_only), len(out))
    assert d["gap_min_keep"] == effective
    assert d["gap_backfill_ranked"] + d["gap_backfill_unranked"] == d["gap_deficit_before_fill"]


# --- examples, one per branch ------------------------------------------------------------------------

MAIN = hits((1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5), (6, 0.4))


def test_without_a_gap_pool_it_is_the_plain_top_k_and_no_warning(caplog):
    diag: dict[str, Any] = {}
    out = fuse(MAIN, [], top_k=4, diag=diag)
    assert ids(out) == [1, 2, 3, 4]
    assert (diag["pool_fusion"]["gap_min_keep"], diag["pool_fusion"]["gap_in_output"]) == (0, 0)
    assert not caplog.records


def test_an_empty_main_pool_returns_the_best_gap_items():
    out = fuse([], hits((10, 0.1), (11, 0.3), (12, 0.2)), top_k=2)
    assert ids(out) == [11, 12]


def test_both_pools_empty_give_nothing():
    diag: dict[str, Any] = {}
    assert fuse([], [], diag=diag) == []
    assert (diag["pool_fusion"]["output_count"], diag["pool_fusion"]["rank_pool_k"]) == (0, 0)


def test_quota_met_by_the_slice_needs_no_backfill():
    diag: dict[str, Any] = {}
    out = fuse(MAIN, hits((10, 0.85), (11, 0.1)), top_k=5, gap_ratio=0.2, diag=diag)
    assert ids(out) == [1, 10, 2, 3, 4]
    d = diag["pool_fusion"]
    assert (d["gap_deficit_before_fill"], d["gap_backfill_ranked"], d["gap_backfill_unranked"]) == (0, 0, 0)


def test_backfill_from_the_ranked_tail_replaces_the_lowest_main_items():
    diag: dict[str, Any] = {}
    gap = hits((10, 0.2), (11, 0.1), (12, 0.05))
    out = fuse(MAIN, gap, top_k=5, gap_ratio=0.4, multiplier=3.0, diag=diag)
    assert ids(out) == [1, 2, 3, 10, 11]  # 4 and 5 gave way, the best gap items came in
    d = diag["pool_fusion"]
    assert d["rank_pool_k"] == 9  # min(max(ceil(5 x 3), 5 + 3), 9)
    assert (d["gap_deficit_before_fill"], d["gap_backfill_ranked"], d["gap_backfill_unranked"]) == (2, 2, 0)


def test_backfill_from_unranked_gap_candidates_when_the_ranked_tail_has_none():
    main = [Hit(i, 1.0 - i / 100) for i in range(1, 11)]
    diag: dict[str, Any] = {}
    gap = hits((50, 0.2), (51, 0.1))
    out = fuse(main, gap, top_k=3, gap_ratio=0.0, multiplier=1.0, gap_min_keep=1, diag=diag)
    assert ids(out) == [1, 2, 50]
    d = diag["pool_fusion"]
    assert d["rank_pool_k"] == 5  # min(max(ceil(3 x 1), 3 + 2), 12): the gap items rank 11th and 12th
    assert (d["gap_backfill_ranked"], d["gap_backfill_unranked"]) == (0, 1)


def test_backfill_takes_the_ranked_tail_before_unranked_candidates():
    main = [Hit(i, 1.0 - i / 100) for i in range(1, 9)]  # 0.99 .. 0.92
    diag: dict[str, Any] = {}
    out = fuse(
        main, hits((50, 0.955), (51, 0.1), (52, 0.05)), top_k=3, multiplier=1.0, gap_min_keep=2, diag=diag
    )
    # rank_pool_k = min(max(3, 3 + 3), 11) = 6: 1, 2, 3 | 4, 50, 5 ranked; 51 and 52 unranked.
    assert ids(out) == [1, 50, 51]
    d = diag["pool_fusion"]
    assert (d["gap_deficit_before_fill"], d["gap_backfill_ranked"], d["gap_backfill_unranked"]) == (2, 1, 1)


def test_an_explicit_gap_min_keep_overrides_the_ratio():
    gap = hits((10, 0.2), (11, 0.1), (12, 0.05))
    assert ids(fuse(MAIN, gap, top_k=5, gap_ratio=0.2, gap_min_keep=3)) == [1, 2, 10, 11, 12]
    assert ids(fuse(MAIN, gap, top_k=5, gap_ratio=0.6, gap_min_keep=0)) == [1, 2, 3, 4, 5]


def test_the_quota_is_a_ceiling_of_top_k_times_ratio_without_float_noise():
    assert [ceil_count(10 * 0.7), ceil_count(5 * 0.2), ceil_count(5 * 0.21)] == [7, 1, 2]
    gap = [Hit(100 + i, 0.01) for i in range(10)]
    main = [Hit(i, 0.5) for i in range(10)]
    assert sum(h.chunk_id >= 100 for h in fuse(main, gap, top_k=10, gap_ratio=0.7)) == 7


def test_an_item_in_both_pools_counts_once_as_main():
    diag: dict[str, Any] = {}
    shared = Hit(3, 0.7)
    out = fuse(MAIN, [shared, Hit(10, 0.1)], top_k=3, gap_ratio=0.4, diag=diag)
    assert ids(out) == [1, 2, 10]
    assert (diag["pool_fusion"]["gap_in"], diag["pool_fusion"]["duplicates_dropped"]) == (1, 1)


def test_warning_when_the_gap_pool_is_smaller_than_the_quota(caplog):
    with caplog.at_level(logging.WARNING, logger="backend.chat.fusion"):
        out = fuse(MAIN, hits((10, 0.1), (11, 0.05)), top_k=6, gap_ratio=0.5)
    assert ids(out) == [1, 2, 3, 4, 10, 11]
    assert [r.getMessage() for r in caplog.records] == [
        "[fuse_pools] gap pool too small: desired_quota=3 but only 2 gap candidates available "
        "— using 2 as effective quota"
    ]


def test_warning_when_the_quota_is_not_met_after_backfill(caplog):
    def drops_weak_items(items):  # a reranker with a relevance floor
        return by_score([h for h in items if h.score >= 0.3])

    with caplog.at_level(logging.WARNING, logger="backend.chat.fusion"):
        diag: dict[str, Any] = {}
        gap = hits((10, 0.35), (11, 0.1))
        out = fuse(MAIN, gap, top_k=4, gap_ratio=0.5, rerank=drops_weak_items, diag=diag)
    assert ids(out) == [1, 2, 3, 10]
    assert [r.getMessage() for r in caplog.records] == [
        "[fuse_pools] gap quota not met after backfill: wanted=2 in_output=1"
    ]
    assert diag["pool_fusion"]["reranker_dropped"] == 1


def test_diag_holds_every_field_of_the_seed():
    diag: dict[str, Any] = {}
    fuse(MAIN, hits((10, 0.2), (11, 0.1)), top_k=4, gap_ratio=0.5, multiplier=1.5, diag=diag)
    # rank_pool_k = min(max(ceil(4 x 1.5), 4 + 2), 8) = 6: both gap items rank 7th and 8th, unranked.
    assert diag["pool_fusion"] == {
        "main_in": 6,
        "gap_in": 2,
        "total_reranked": 6,
        "rank_pool_k": 6,
        "rank_pool_multiplier": 1.5,
        "gap_deficit_before_fill": 2,
        "gap_backfill_ranked": 0,
        "gap_backfill_unranked": 2,
        "gap_min_keep": 2,
        "gap_in_output": 2,
        "output_count": 4,
        "top_k": 4,
        "gap_ratio": 0.5,
        "gap_min_keep_desired": 2,
        "duplicates_dropped": 0,
        "reranker_dropped": 0,
    }


def test_the_reranker_is_called_once_with_every_candidate():
    calls = []

    def spy(items):
        calls.append(list(items))
        return by_score(items)

    fuse(MAIN, hits((10, 0.1)), top_k=2, rerank=spy)
    assert [len(c) for c in calls] == [7]


def test_items_without_chunk_id_are_told_apart_by_identity():
    class Doc:
        def __init__(self, score):
            self.score = score

    a, b = Doc(0.9), Doc(0.1)
    out = fuse_pools_with_gap_protection(
        [a, a], [b], 2, 0.5, 3.0, rerank=lambda xs: sorted(xs, key=lambda d: -d.score)
    )
    assert out == [a, b]


def test_a_custom_key_deduplicates():
    out = fuse_pools_with_gap_protection(
        [{"id": 1, "s": 0.9}],
        [{"id": 1, "s": 0.9}, {"id": 2, "s": 0.1}],
        2,
        0.5,
        3.0,
        rerank=lambda xs: sorted(xs, key=lambda d: -d["s"]),
        key=lambda d: d["id"],
    )
    assert [d["id"] for d in out] == [1, 2]


def test_a_reranker_inventing_items_is_refused():
    with pytest.raises(ValueError, match="not a candidate"):
        fuse(MAIN, [], rerank=lambda items: [Hit(99, 1.0)])


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"top_k": 0}, "top_k"),
        ({"gap_ratio": 1.5}, "gap_ratio"),
        ({"gap_ratio": -0.1}, "gap_ratio"),
        ({"multiplier": 0}, "rank_pool_multiplier"),
        ({"gap_min_keep": -1}, "gap_min_keep"),
    ],
)
def test_invalid_parameters_are_refused_naming_them(kwargs, named):
    with pytest.raises(ValueError, match=named):
        fuse(MAIN, [], **kwargs)
