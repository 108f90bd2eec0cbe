"""A latency cell says where the machine's processor time went while it ran (bench.latency.cells): the
client's share (this process) and the rest. On 2 cores shared by the bench client and the server, that
is what tells a throughput ratio below 1.7x at c=8 from a server that does not scale."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from bench.common.synthetic import Query
from bench.latency.cells import busy_cpu_seconds, run_cell

QUESTION = Query("q", "q", "q", "en", "none", np.zeros(3))


def _factory(run):
    return lambda: (run, lambda: None)


def _spin(_query) -> None:  # 3 ms of the client's own processor time
    until = time.process_time() + 0.003
    while time.process_time() < until:
        pass


def _wait(_query) -> None:  # 3 ms of waiting, as for a server's answer
    time.sleep(0.003)


@pytest.mark.skipif(busy_cpu_seconds() is None, reason="no /proc/stat")
def test_a_cell_counts_the_clients_processor_time_apart_from_waiting():
    s, w = (
        run_cell(
            "x", _factory(run), [QUESTION], filtered=False, concurrency=1, seconds=0.4, max_queries=10_000
        ).summary()
        for run in (_spin, _wait)
    )
    assert s["queries"] > 20
    assert w["queries"] > 20
    assert 2.5 <= s["client_cpu_ms"] <= 6.0  # the 3 ms a query spun, and the loop's bookkeeping
    assert s["busy_cores"] >= 0.7  # one core kept busy by the client
    assert w["client_cpu_ms"] < 1.0  # sleeping costs the client next to nothing


def test_busy_time_leaves_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice, in clock ticks
    stat.write_text("cpu  100 0 50 1000 30 5 5 10 0 0\ncpu0 1 2 3\n", encoding="ascii")
    assert busy_cpu_seconds(str(stat)) == pytest.approx(170 / os.sysconf("SC_CLK_TCK"))
    (tmp_path / "other").write_text("intr 1 2\n", encoding="ascii")
    assert busy_cpu_seconds(str(tmp_path / "other")) is None
    assert busy_cpu_seconds(str(tmp_path / "missing")) is None
