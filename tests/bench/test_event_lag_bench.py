"""``bench/event_lag.py --quick`` runs end to end (a real embedded stack, 5 tasks, 2 s gates),
so a broken bench fails here rather than when someone next measures. Timings are not judged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.stack import cli_env

BENCH = Path(__file__).resolve().parents[2] / "bench" / "event_lag.py"


def test_the_event_lag_bench_reports_every_tasks_loop_events_in_quick_mode() -> None:
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
    assert report["tasks"] == 5
    # Each approved task sends at least iteration, files, gate, context, review and finished.
    assert report["events"] >= 5 * 6
    assert report["max_s"] >= report["p95_s"] >= report["p50_s"] >= 0
    assert isinstance(report["targets_met"], bool)
    # Every loop event is found in its task's history, so its lag can be split.
    assert set(report["parts"]) == {"queued", "dispatch", "publish"}
    assert all(part["p50_s"] is not None for part in report["parts"].values())
    assert len(report["load_1m"]) == 2
