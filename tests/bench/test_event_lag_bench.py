"""``bench/event_lag.py --quick`` runs end to end (a real embedded stack, 5 tasks, 2 s gates),
so a broken bench fails here rather than when someone next measures. Timings are not judged."""

from __future__ import annotations

import pytest

from tests.support.benches import quick_report

# The bench starts `semspec up` in a subprocess, which the marker walk cannot see.
pytestmark = pytest.mark.stack


def test_the_event_lag_bench_reports_every_tasks_loop_events_in_quick_mode() -> None:
    report = quick_report("event_lag")
    assert report["tasks"] == 5
    # Each approved task sends at least iteration, files, gate, context, review and finished.
    assert report["events"] >= 5 * 6
    assert report["max_s"] >= report["p95_s"] >= report["p50_s"] >= 0
    assert isinstance(report["targets_met"], bool)
    # Every loop event is found in its task's history, so its lag can be split.
    assert set(report["parts"]) == {"queued", "dispatch", "publish"}
    assert all(part["p50_s"] is not None for part in report["parts"].values())
    assert len(report["load_1m"]) == 2
