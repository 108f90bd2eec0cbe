"""The measuring commands added for issue 31 refuse what they cannot measure with a message, before they
touch a database: a scope the sweep does not have, more questions than the sweep asks, a pool of nothing."""

from __future__ import annotations

import pytest

from bench.latency import pool, recall


def test_recall_names_the_sweeps_scopes_when_given_another(capsys):
    with pytest.raises(SystemExit) as exit_info:
        recall.parse_args(["--scopes", "unfiltered", "tenant-5%"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "unknown scope 'tenant-5%'" in err
    assert "tenant-10%" in err  # the list to choose from


def test_recall_takes_no_more_questions_than_the_sweep_asks(capsys):
    with pytest.raises(SystemExit):
        recall.parse_args(["--queries", "500"])
    assert "--queries must be between 1 and --sweep-queries (400)" in capsys.readouterr().err
    assert recall.parse_args(["--queries", "400", "--scopes", "selectivity 0.5"]).queries == 400


@pytest.mark.parametrize("argv", [["--clients", "1"], ["--pools", "0"], ["--rounds", "0"]])
def test_pool_refuses_a_comparison_it_cannot_make(argv, capsys):
    with pytest.raises(SystemExit):
        pool.parse_args(argv)
    assert "--clients must be at least 2" in capsys.readouterr().err
