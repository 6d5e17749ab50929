"""``bench/lists.py --quick`` runs end to end (a real embedded stack, 20 stand-in tasks, the CLI
lists and the console's board), so a broken bench fails here rather than when someone next
measures. Timings are not judged."""

from __future__ import annotations

import pytest

from tests.support.benches import quick_report

# The bench starts `semspec up` in a subprocess, which the marker walk cannot see.
pytestmark = pytest.mark.stack


def test_the_lists_bench_reports_its_figures_in_quick_mode() -> None:
    report = quick_report("lists")
    assert report["tasks"] == 20
    for figure in ("temporal_list_s", "task_list_500_s", "escalations_list_500_s"):
        assert report[figure] > 0
    assert report["board_500_ms"] > 0
    assert isinstance(report["targets_met"], bool)
