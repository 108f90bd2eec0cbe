"""`python -m bench.latency.targets` judges the sweep's cells against issue 31's targets: recall from
reports of more questions where given (tune: match_documents' vector top 10; bench.latency.recall: both
functions, the sweep's own measure), and a c=8 miss with where the processor time went."""

from __future__ import annotations

import json

from bench.latency import targets


def _cell(scope: str, function: str, **extra) -> dict:
    return {
        "scope": scope,
        "function": function,
        "size": 1_000_000,
        "admitted": 500_000,
        "p50_ms": 5.0,
        "p95_ms": 8.0,
        "recall_at_10": 0.9,
        "recall_queries": 10,
        **extra,
    }


def test_recall_comes_from_the_report_that_measured_the_same_thing():
    sweep = [_cell("selectivity 0.5", "match_documents"), _cell("selectivity 0.5", "hybrid_search")]
    tune = {
        "records": [
            # tune's hybrid_search figure is its vector leg: not the sweep's fused top 10
            {
                "scope": "selectivity 0.5",
                "function": f,
                "variant": "ef=200",
                "recall_at_10": 0.96,
                "recall_queries": 400,
            }
            for f in ("match_documents", "hybrid_search")
        ]
    }
    fused = {
        "records": [
            {
                "scope": "selectivity 0.5",
                "function": "hybrid_search",
                "variant": "ef=200",
                "truth": "exact plan",
                "recall_at_10": 0.97,
                "recall_queries": 200,
            }
        ]
    }
    after_tune = targets.with_recall(sweep, tune, "ef=200")
    assert [r["recall_at_10"] for r in after_tune] == [0.96, 0.9]
    both = targets.with_recall(after_tune, fused, "ef=200")
    assert [(r["recall_at_10"], r["recall_queries"]) for r in both] == [(0.96, 400), (0.97, 200)]
    # another ef_search than the product's default is not the product's recall
    assert targets.with_recall(sweep, fused, "ef=400") == sweep


def test_a_c8_miss_says_where_the_processor_time_went():
    cell = _cell("unfiltered", "match_documents", qps=200.0, qps_c8=300.0)
    assert targets.verdict(cell, {}) == ["recall < 0.95", "c=8 1.50× c=1"]
    profiled = {**cell, "busy_cores_c8": 1.97, "client_cpu_ms_c8": 1.2, "server_cpu_ms_c8": 5.3}
    assert targets.verdict(profiled, {})[-1] == (
        "c=8 1.50× c=1 (2.0 cores busy; client 1.20 + server 5.30 ms CPU a query)"
    )


def test_the_command_line_takes_several_recall_reports(tmp_path, capsys):
    report = tmp_path / "latency.json"
    report.write_text(json.dumps({"sweep": [_cell("unfiltered", "match_documents")]}), encoding="utf-8")
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    for path, value in ((first, 0.93), (second, 0.96)):
        record: dict[str, object] = {
            "scope": "unfiltered",
            "function": "match_documents",
            "variant": "ef=200",
        }
        record |= {"recall_at_10": value, "recall_queries": 400}
        path.write_text(json.dumps({"records": [record]}), encoding="utf-8")
    targets.main([str(report), "--recall", str(first), str(second), "--recall-variant", "ef=200"])
    out = capsys.readouterr().out
    assert "| 0.96 (400 q) |" in out  # the later report's cell counts
    assert "| met |" in out
