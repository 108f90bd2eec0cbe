"""Global fusion of a main and a gap evidence pool with a gap quota (seed: evidence-retention.md, section 四).

One global rerank scores main and gap candidates together; the top-k slice is then forced to hold at
least `gap_min_keep` gap items, backfilled first from the ranked tail, then from unranked gap
candidates, each replacing the lowest-ranked main item. Items are opaque: identity comes from `key`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Rerank = Callable[[list[T]], Sequence[T]]

logger = logging.getLogger(__name__)

MAIN, GAP = "main", "gap"


def default_key(item: Any) -> Hashable:
    """Identity of a candidate: its chunk_id when it has one, else the object itself."""
    chunk_id = getattr(item, "chunk_id", None)
    return ("chunk_id", chunk_id) if chunk_id is not None else ("object", id(item))


def ceil_count(x: float) -> int:
    """ceil() for counts, tolerant of float noise (10 x 0.7 = 7.000000000000001 must give 7, not 8)."""
    return math.ceil(x - 1e-9)


def fuse_pools_with_gap_protection(
    main: Iterable[T],
    gap: Iterable[T],
    top_k: int,
    gap_ratio: float,
    rank_pool_multiplier: float,
    gap_min_keep: int | None = None,
    *,
    rerank: Rerank[T],
    key: Callable[[T], Hashable] = default_key,
    diag: dict[str, Any] | None = None,
) -> list[T]:
    """Rerank main + gap candidates once and return the top_k, holding at least the gap quota."""
    _validate(top_k, gap_ratio, rank_pool_multiplier, gap_min_keep)

    candidates, pool_of, duplicates = _tagged(main, gap, key)  # Step 1
    n_gap = sum(1 for p in pool_of.values() if p == GAP)
    n_main = len(candidates) - n_gap
    total = len(candidates)

    desired = gap_min_keep if gap_min_keep is not None else ceil_count(top_k * gap_ratio)
    effective = _effective_quota(desired, n_gap, top_k)

    # Step 2: one global rerank; the first rank_pool_k of its order form the ranked pool ("榜").
    rank_pool_k = min(max(ceil_count(top_k * rank_pool_multiplier), top_k + n_gap), total)
    ordered = _reranked(rerank, candidates, key, pool_of)
    position = {key(item): i for i, item in enumerate(ordered)}
    ranked, unranked = ordered[:rank_pool_k], ordered[rank_pool_k:]

    # Step 3: the initial slice, no second score weighting.
    kept = ranked[:top_k]
    gap_in_slice = sum(1 for item in kept if pool_of[key(item)] == GAP)

    # Step 4: quota protection.
    deficit = max(0, effective - gap_in_slice)
    from_tail = [x for x in ranked[top_k:] if pool_of[key(x)] == GAP][:deficit]
    from_unranked = [x for x in unranked if pool_of[key(x)] == GAP][: deficit - len(from_tail)]
    fills = from_tail + from_unranked
    main_in_kept = [x for x in kept if pool_of[key(x)] == MAIN]
    displaced = {key(x) for x in main_in_kept[len(main_in_kept) - len(fills) :]} if fills else set()
    # The kept list stays in the global rerank order, so a backfilled gap item sits where its score puts it.
    output = sorted([x for x in kept if key(x) not in displaced] + fills, key=lambda x: position[key(x)])

    gap_in_output = sum(1 for item in output if pool_of[key(item)] == GAP)
    if gap_in_output < effective:
        logger.warning(
            "[fuse_pools] gap quota not met after backfill: wanted=%d in_output=%d", effective, gap_in_output
        )

    if diag is not None:
        diag["pool_fusion"] = {
            "main_in": n_main,
            "gap_in": n_gap,
            "total_reranked": len(ranked),
            "rank_pool_k": rank_pool_k,
            "rank_pool_multiplier": rank_pool_multiplier,
            "gap_deficit_before_fill": deficit,
            "gap_backfill_ranked": len(from_tail),
            "gap_backfill_unranked": len(from_unranked),
            "gap_min_keep": effective,
            "gap_in_output": gap_in_output,
            "output_count": len(output),
            # Beyond the seed's list: what the caller asked for and what was dropped on the way.
            "top_k": top_k,
            "gap_ratio": gap_ratio,
            "gap_min_keep_desired": desired,
            "duplicates_dropped": duplicates,
            "reranker_dropped": total - len(ordered),
        }
    return output


def _tagged(
    main: Iterable[T], gap: Iterable[T], key: Callable[[T], Hashable]
) -> tuple[list[T], dict[Hashable, str], int]:
    """Step 1, the _pool_tag: the candidates, each one's pool, and how many repeated an earlier one.

    The tag lives beside the items (key -> pool) so the reranker sees plain items and Step 5 ("strip
    the tag") has nothing to undo. An item in both pools counts once, as main: the seed is silent on
    overlaps; main is tagged first, so main wins.
    """
    pool_of: dict[Hashable, str] = {}
    candidates: list[T] = []
    duplicates = 0
    for pool, items in ((MAIN, main), (GAP, gap)):
        for item in items:
            k = key(item)
            if k in pool_of:
                duplicates += 1
                continue
            pool_of[k] = pool
            candidates.append(item)
    return candidates, pool_of, duplicates


def _effective_quota(desired: int, n_gap: int, top_k: int) -> int:
    """The gap quota that can be held: no more than the gap pool has, nor than top_k."""
    effective = min(desired, n_gap, top_k)
    # An empty gap pool means "no quota constraint" (seed 2.3), so it is not worth a warning.
    if n_gap and desired > n_gap:
        logger.warning(
            "[fuse_pools] gap pool too small: desired_quota=%d but only %d gap candidates available "
            "— using %d as effective quota",
            desired,
            n_gap,
            effective,
        )
    return effective


def _validate(top_k: int, gap_ratio: float, multiplier: float, gap_min_keep: int | None) -> None:
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    if not 0.0 <= gap_ratio <= 1.0:
        raise ValueError(f"gap_ratio must be between 0 and 1, got {gap_ratio}")
    if not multiplier > 0:
        raise ValueError(f"rank_pool_multiplier must be positive, got {multiplier}")
    if gap_min_keep is not None and gap_min_keep < 0:
        raise ValueError(f"gap_min_keep must not be negative, got {gap_min_keep}")


def _reranked(
    rerank: Rerank[T], candidates: list[T], key: Callable[[T], Hashable], pool_of: dict[Hashable, str]
) -> list[T]:
    """The reranker's order, best first. A candidate it leaves out is dropped (e.g. a relevance floor
    or a per-document cap); an item that was never a candidate is a bug in the reranker."""
    seen: set[Hashable] = set()
    out: list[T] = []
    for item in rerank(list(candidates)) if candidates else ():
        k = key(item)
        if k not in pool_of:
            raise ValueError(f"rerank returned an item that is not a candidate (key {k!r})")
        if k not in seen:
            seen.add(k)
            out.append(item)
    return out
