"""Benchmarks without the development datasets stop with a message naming the folder (issue 19)."""

from __future__ import annotations

import pytest

from bench.common.beir import DatasetsMissing, dataset_names, load_dataset
from bench.common.synthetic import SentencePool


def test_a_missing_datasets_folder_is_named_not_a_zero_division(tmp_path):
    with pytest.raises(DatasetsMissing, match=f"{tmp_path / 'absent'} does not exist"):
        dataset_names(tmp_path / "absent")
    with pytest.raises(DatasetsMissing, match=f"{tmp_path} holds no dataset"):
        SentencePool.load(tmp_path)  # the synthetic latency corpus is built from the datasets


def test_a_dataset_without_its_files_names_what_is_missing(tmp_path):
    (tmp_path / "mini").mkdir()
    (tmp_path / "mini" / "corpus.jsonl").write_text("", encoding="utf-8")
    assert dataset_names(tmp_path) == ["mini"]
    with pytest.raises(DatasetsMissing, match="lacks queries.jsonl, qrels.tsv"):
        load_dataset("mini", tmp_path)
