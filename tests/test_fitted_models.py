"""Which embedding model the confidence and rerank policies were fitted on: recorded in the shipped files
and by `calibrate`, and warned about when a service embeds with another model (a switch of
EMBEDDING_PROVIDER), naming what to run."""

from __future__ import annotations

import json
import logging

import pytest

from backend.cli import main as cli_main
from backend.confidence.assess import load_score_policy
from backend.config import Settings, get_settings
from backend.embeddings import LocalEmbedder
from backend.embeddings.factory import configured_model_id
from backend.retrieval.rerank_policy import load_rerank_policy
from backend.testing import HashingEmbedder
from tests.test_confidence import AMBIGUOUS, BAD, GOOD, rows, write_jsonl


def test_the_shipped_default_policies_name_the_local_model_they_were_fitted_on() -> None:
    defaults = Settings(_env_file=None)
    assert load_score_policy(defaults.score_policy_version).embedding_model == LocalEmbedder.model_id
    assert load_rerank_policy(defaults.rag_rerank_policy).embedding_model == LocalEmbedder.model_id
    assert load_score_policy("v1").embedding_model is None  # seed defaults: not fitted on anything


def test_a_service_embedding_with_another_model_warns_for_both_policies(make_services, caplog) -> None:
    shipped = {"score_policies_dir": None, "score_policy_version": "v3", "rag_rerank_policy": "v2"}
    with caplog.at_level(logging.WARNING, logger="backend.search.policies"):
        make_services(embedder=HashingEmbedder(), **shipped)
    warnings = [r.getMessage() for r in caplog.records]
    confidence = next(w for w in warnings if w.startswith("confidence policy overall_v3"))
    assert "fitted with multilingual-e5-small@384; this service embeds with hashing-test@384" in confidence
    assert "python -m backend calibrate" in confidence
    assert any(w.startswith("rerank policy rerank_v2 was fitted with") for w in warnings)


def test_the_model_a_policy_was_fitted_on_gives_no_warning(make_services, caplog) -> None:
    class E5Named(HashingEmbedder):  # the local model's name, without loading the local model
        def __init__(self) -> None:
            super().__init__()
            self.model_id = LocalEmbedder.model_id

    with caplog.at_level(logging.WARNING, logger="backend.search.policies"):
        make_services(embedder=E5Named(), score_policies_dir=None, score_policy_version="v3")
    assert not [r for r in caplog.records if "was fitted with" in r.getMessage()]


def test_calibrate_records_the_embedding_model_it_is_told(tmp_path, capsys) -> None:
    labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
    policies = tmp_path / "policies"
    args = ["calibrate", str(labels), "--policies-dir", str(policies), "--from-version", "v2"]
    assert cli_main([*args, "--embedding-model", "BAAI/bge-m3@1024"]) == 0
    assert "embedding model: BAAI/bge-m3@1024" in capsys.readouterr().out
    written = json.loads((policies / "v3.json").read_text())
    assert written["embedding_model"] == "BAAI/bge-m3@1024"  # not v2's multilingual-e5-small@384
    assert load_score_policy("v3", policies).embedding_model == "BAAI/bge-m3@1024"


def test_calibrate_records_the_configured_model_by_default(tmp_path, capsys, monkeypatch) -> None:
    for name, value in {
        "EMBEDDING_PROVIDER": "openai_compatible",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_EMBEDDING_MODEL": "bge-m3",
        "OPENAI_EMBEDDING_DIMS": "1024",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        labels = write_jsonl(tmp_path / "labels.jsonl", rows(GOOD, AMBIGUOUS, BAD))
        assert cli_main(["calibrate", str(labels), "--policies-dir", str(tmp_path / "p")]) == 0
    finally:
        get_settings.cache_clear()
    assert "embedding model: bge-m3@1024" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"embedding_provider": "local"}, "multilingual-e5-small@384"),
        ({"embedding_provider": "gemini", "gemini_api_key": "k"}, "gemini-embedding-001@768"),
        (
            {
                "embedding_provider": "openai_compatible",
                "openai_base_url": "http://h/v1",
                "openai_embedding_model": "m",
            },
            None,  # only the server knows its size
        ),
    ],
)
def test_the_configured_model_id_needs_no_server(values, expected) -> None:
    assert configured_model_id(Settings(_env_file=None, **values)) == expected
