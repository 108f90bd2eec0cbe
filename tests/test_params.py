"""One retrieval-parameters object: every knob is a setting and a real parameter of the SQL function."""

from __future__ import annotations

import dataclasses

import pytest

from backend.config import Settings
from backend.retrieval.params import HYBRID, MATCH, TERMS, HybridParams


def sql_parameter_names(db, function: str) -> set[str]:
    row = db.execute(
        "select proargnames from pg_proc where proname = %s and pronamespace = 'public'::regnamespace",
        (function,),
    ).fetchone()
    return set(row[0])


@pytest.mark.parametrize("function", [HYBRID, MATCH, TERMS])
def test_every_knob_is_a_named_parameter_of_the_installed_function(db, function):
    params = HybridParams.from_settings(Settings(_env_file=None))
    assert set(params.sql_args(function)) <= sql_parameter_names(db, function)


def sql_defaults(db, function: str) -> dict[str, str]:
    """Each defaulted parameter of the installed function (its longest signature) -> its default."""
    row = db.execute(
        "select pg_get_function_arguments(oid) from pg_proc where proname = %s "
        "and pronamespace = 'public'::regnamespace order by pronargs desc limit 1",
        (function,),
    ).fetchone()
    defaults = {}
    for argument in row[0].split(", "):
        name, _, rest = argument.partition(" ")
        if " DEFAULT " in rest:
            defaults[name] = rest.split(" DEFAULT ", 1)[1]
    return defaults


@pytest.mark.parametrize("function", [HYBRID, MATCH, TERMS])
def test_each_knob_has_one_default_the_setting_and_the_sql_function_agree(db, function):
    defaults = sql_defaults(db, function)
    knobs = HybridParams.from_settings(Settings(_env_file=None)).sql_args(function)
    assert knobs  # every function takes some of them
    for name, value in knobs.items():
        if value is None:
            assert defaults[name].lower().startswith("null"), name
        else:
            assert float(defaults[name]) == value, name


def test_knobs_follow_their_settings():
    s = Settings(_env_file=None, rag_rrf_k=7, rag_hnsw_filtered_ef_search=333, rag_min_similarity=0.5)
    params = HybridParams.from_settings(s)
    assert (params.rrf_k, params.filtered_ef_search, params.min_similarity) == (7, 333, 0.5)
    assert "min_similarity" not in params.sql_args(HYBRID)
    assert "rrf_k" not in params.sql_args(MATCH)
    for f in dataclasses.fields(HybridParams):
        assert f.metadata["setting"] in Settings.model_fields


def test_full_text_mode_switches_the_vector_leg_off():
    params = HybridParams.from_settings(Settings(_env_file=None, rag_full_text_weight=0.4))
    assert params.for_mode("fulltext").sql_args(HYBRID)["semantic_weight"] == 0.0
    assert params.for_mode("fulltext").sql_args(HYBRID)["full_text_weight"] == 1.0
    assert params.for_mode("hybrid") == params
