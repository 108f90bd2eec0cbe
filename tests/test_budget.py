"""The evidence budget: the seed's worked example, the inheritance rules and refusals of bad values."""

from __future__ import annotations

import dataclasses

import pytest

from backend.budget import EvidenceBudget


def test_the_seeds_worked_example():
    # evidence-retention.md 2.2: local_top_k=45, step_top_k=50 -> 200 recalled, 100 local, 50 kept.
    b = EvidenceBudget.compute(45, step_top_k=50)
    assert (b.local_top_k, b.step_k, b.write_k, b.result_limit) == (45, 50, 50, 50)
    assert (b.actual_recall, b.local_recall_k) == (200, 100)


def test_step_and_write_inherit_when_unset():
    b = EvidenceBudget.compute(8)
    assert (b.step_k, b.write_k, b.result_limit) == (8, 8, 8)


def test_an_explicit_write_top_k_wins():
    b = EvidenceBudget.compute(10, step_top_k=20, write_top_k=12)
    assert (b.step_k, b.write_k) == (20, 12)


def test_write_k_may_exceed_step_k_the_seed_does_not_forbid_it():
    assert EvidenceBudget.compute(10, write_top_k=30).write_k == 30


@pytest.mark.parametrize(
    ("result_limit", "actual_recall", "local_recall_k"),
    [
        (1, 80, 2),  # the floor of 80 recalled candidates
        (5, 80, 10),
        (20, 80, 40),
        (21, 84, 42),
        (100, 400, 200),
    ],
)
def test_recall_sizes_follow_the_seed(result_limit, actual_recall, local_recall_k):
    b = EvidenceBudget.compute(result_limit)
    assert (b.actual_recall, b.local_recall_k) == (actual_recall, local_recall_k)
    assert b.local_recall_k >= b.result_limit  # design constraint 2: local_recall_k != result_limit


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"local_top_k": 0}, "local_top_k"),
        ({"local_top_k": -3}, "local_top_k"),
        ({"local_top_k": 5, "step_top_k": 0}, "step_top_k"),
        ({"local_top_k": 5, "write_top_k": -1}, "write_top_k"),
        ({"local_top_k": 5.0}, "local_top_k"),
        ({"local_top_k": True}, "local_top_k"),
    ],
)
def test_bad_values_are_refused_naming_the_parameter(kwargs, named):
    with pytest.raises(ValueError, match=named):
        EvidenceBudget.compute(**kwargs)


def test_the_budget_is_immutable():
    b = EvidenceBudget.compute(5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.step_k = 6  # type: ignore[misc]
