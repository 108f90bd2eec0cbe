"""The filter grammar: what compile_filter accepts, how it normalises, and the 422s it names."""

from __future__ import annotations

from typing import Any

import pytest

from backend.config import DEFAULT_METADATA_WHITELIST
from backend.errors import InvalidInput
from backend.retrieval.filters import compile_filter

WHITELIST = DEFAULT_METADATA_WHITELIST


def test_existing_requests_keep_their_meaning():
    assert compile_filter(None, WHITELIST) == {}
    assert compile_filter({}, WHITELIST) == {}
    assert compile_filter({"lang": "zh"}, WHITELIST) == {"lang": {"$eq": "zh"}}
    assert compile_filter({"tags": ["a", "b"]}, WHITELIST) == {"tags": {"$contains": ["a", "b"]}}
    assert compile_filter({"tags": {"$contains": "a"}}, WHITELIST) == {"tags": {"$contains": ["a"]}}
    assert compile_filter({"lang": "zh", "tags": ["a"]}, WHITELIST) == {
        "$and": [{"lang": {"$eq": "zh"}}, {"tags": {"$contains": ["a"]}}]
    }


def test_list_fields_read_eq_in_ne_nin_as_membership():
    assert compile_filter({"tags": "a"}, WHITELIST) == {"tags": {"$contains": ["a"]}}
    assert compile_filter({"tags": {"$in": ["a", "b"]}}, WHITELIST) == {
        "$or": [{"tags": {"$contains": ["a"]}}, {"tags": {"$contains": ["b"]}}]
    }
    assert compile_filter({"tags": {"$ne": "a"}}, WHITELIST) == {"$not": {"tags": {"$contains": ["a"]}}}
    assert compile_filter({"keyphrases": {"$nin": ["a"]}}, WHITELIST) == {
        "$not": {"keyphrases": {"$contains": ["a"]}}
    }


def test_a_date_only_value_is_its_whole_utc_day():
    day = ("2025-03-01T00:00:00+00:00", "2025-03-02T00:00:00+00:00")
    assert compile_filter({"created_at": "2025-03-01"}, WHITELIST) == {
        "$and": [{"created_at": {"$gte": day[0]}}, {"created_at": {"$lt": day[1]}}]
    }
    assert compile_filter({"created_at": {"$gt": "2025-03-01"}}, WHITELIST) == {
        "created_at": {"$gte": day[1]}
    }
    assert compile_filter({"created_at": {"$lte": "2025-03-01"}}, WHITELIST) == {
        "created_at": {"$lt": day[1]}
    }
    assert compile_filter({"updated_at": {"$lt": "2025-03-01"}}, WHITELIST) == {"updated_at": {"$lt": day[0]}}
    # Timestamps keep their instant, in UTC; one without a zone is UTC.
    assert compile_filter({"updated_at": {"$gte": "2025-03-01T08:00:00+08:00"}}, WHITELIST) == {
        "updated_at": {"$gte": "2025-03-01T00:00:00+00:00"}
    }
    assert compile_filter({"created_at": {"$lt": "2025-03-01T08:00:00Z"}}, WHITELIST) == {
        "created_at": {"$lt": "2025-03-01T08:00:00+00:00"}
    }


def test_nesting_is_kept():
    tree = compile_filter(
        {"$or": [{"lang": "zh", "text_len": {"$gte": 100}}, {"$and": [{"too_short": False}]}]}, WHITELIST
    )
    assert tree == {
        "$or": [
            {"$and": [{"lang": {"$eq": "zh"}}, {"text_len": {"$gte": 100}}]},
            {"$and": [{"too_short": {"$eq": False}}]},
        ]
    }


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"password": "x"}, "'password' is not allowed"),
        ({"lang": {"$regex": "z.*"}}, "unknown operator '$regex'"),
        ({"$nor": [{"lang": "zh"}]}, "unknown operator '$nor'"),
        ({"$not": [{"lang": "zh"}]}, "filters.$not: expected a non-empty JSON object"),
        ({"$or": []}, "non-empty list"),
        ({"$and": {"lang": "zh"}}, "non-empty list"),
        ({"lang": {}}, "give an operator"),
        ({"lang": 5}, "'lang': expected a string"),
        ({"text_len": "long"}, "'text_len': expected a number"),
        ({"text_len": True}, "'text_len': expected a number"),
        ({"too_short": "no"}, "'too_short': expected true or false"),
        ({"lang": {"$gt": "m"}}, "$gt compares numbers or dates"),
        ({"tags": {"$gte": "a"}}, "does not apply to a list field"),
        ({"lang": {"$in": "zh"}}, "$in expects a list"),
        ({"lang": {"$in": []}}, "at least one value"),
        ({"source": {"$exists": "yes"}}, "$exists expects true or false"),
        ({"lang": {"$contains": "z"}}, "$contains applies to list fields"),
        ({"created_at": {"$gte": "last week"}}, "'created_at': 'last week' is not an ISO 8601"),
        ({"created_at": {"$gte": 20250101}}, "expected an ISO 8601 date or timestamp"),
        ({"updated_at": {"$contains": "2025-01-01"}}, "$contains does not apply to a date"),
        ({"tags": [{"a": 1}]}, "'tags': expected a string"),
        ("lang=zh", "expected a non-empty JSON object"),
        ({"text_len": {"$gt": float("nan")}}, "not a finite number"),
    ],
)
def test_bad_filters_name_what_is_wrong(filters: Any, named: str):
    with pytest.raises(InvalidInput) as caught:
        compile_filter(filters, WHITELIST)
    assert named in str(caught.value)


def test_size_is_bounded():
    with pytest.raises(InvalidInput, match="at most 64 conditions"):
        compile_filter({"$or": [{"text_len": i} for i in range(65)]}, WHITELIST)
    with pytest.raises(InvalidInput, match="at most 100 values"):
        compile_filter({"lang": {"$in": [str(i) for i in range(101)]}}, WHITELIST)
    deep: dict[str, Any] = {"lang": "zh"}
    for _ in range(8):
        deep = {"$and": [deep]}
    with pytest.raises(InvalidInput, match="nest at most"):
        compile_filter(deep, WHITELIST)


def test_a_configured_whitelist_field_without_a_known_type_takes_any_scalar():
    whitelist = [*WHITELIST, "project"]
    assert compile_filter({"project": 7}, whitelist) == {"project": {"$eq": 7}}
    assert compile_filter({"project": {"$gt": 3}}, whitelist) == {"project": {"$gt": 3}}
    with pytest.raises(InvalidInput, match="compares numbers or dates"):
        compile_filter({"project": {"$gt": "a"}}, whitelist)


@pytest.mark.parametrize(
    "filters",
    [
        {"lang": "zh", "tags": {"$nin": ["a", "b"]}},
        {"created_at": {"$in": ["2025-01-01", "2025-02-01T10:00:00"]}, "updated_at": {"$ne": "2025-03-01"}},
        {"$not": {"$or": [{"text_len": {"$gt": 5}}, {"source": {"$exists": False}}]}},
    ],
)
def test_the_normalised_tree_is_valid_input_that_compiles_to_itself(filters):
    """Callers (the WhereBuilder's relaxation, /research) may hand an applied filter back in."""
    once = compile_filter(filters, WHITELIST)
    assert compile_filter(once, WHITELIST) == once
