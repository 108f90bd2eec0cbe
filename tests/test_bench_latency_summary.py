"""`python -m bench.latency.summary` (docs/benchmarks.md) reads the run reports in bench/results; a
sweep-only file there (latency-<size>-sweep.json) made it fail with a KeyError."""

from __future__ import annotations

import json

import pytest

from bench.latency import summary


def test_the_summary_skips_a_sweep_only_file_and_refuses_one_named(tmp_path, monkeypatch, capsys):
    sweep = tmp_path / "latency-1000-sweep.json"
    sweep.write_text(json.dumps({"command": "x", "sweep": {}}), encoding="utf-8")
    monkeypatch.setattr(summary, "RESULTS_DIR", tmp_path)
    summary.main([])  # nothing but the sweep file: an empty table, no traceback
    assert capsys.readouterr().out.startswith("| chunks × dims")
    with pytest.raises(SystemExit, match="not a bench.latency run report"):
        summary.main([str(sweep)])
