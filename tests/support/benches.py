"""Running a benchmark of ``bench/`` in its quick mode, as the bench tests do (a bench that no
longer runs fails there rather than when someone next measures)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.stack import cli_env

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def quick_report(name: str, timeout: float = 540) -> dict[str, Any]:
    """``bench/NAME.py --quick`` run to its end: the JSON object its last line prints (the run
    must exit 0 and end with one)."""
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines, f"bench/{name}.py printed nothing"
    report = json.loads(lines[-1])
    assert isinstance(report, dict), lines[-1]
    return report
