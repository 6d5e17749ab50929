"""``bench/lists.py --quick`` runs end to end (a real embedded stack, 20 stand-in tasks, the CLI
lists and the console's board), so a broken bench fails here rather than when someone next
measures. Timings are not judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.stack import cli_env

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lists.py"

# The bench starts `semspec up` in a subprocess, which the marker walk cannot see.
pytestmark = pytest.mark.stack


def test_the_lists_bench_reports_its_figures_in_quick_mode() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick"],
        capture_output=True,
        text=True,
        timeout=480,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["tasks"] == 20
    for figure in ("temporal_list_s", "task_list_500_s", "escalations_list_500_s"):
        assert report[figure] > 0
    assert report["board_500_ms"] > 0
    assert isinstance(report["targets_met"], bool)
