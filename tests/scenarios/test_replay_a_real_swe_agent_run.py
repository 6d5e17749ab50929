"""Scenario: a user replays a real SWE-agent run and a real mini-swe-agent loop through the
installed ``semspec`` command, and the report names each format and where the loop was stopped.

The files are trimmed copies of public recordings (tests/data/replay_formats/README.md); no
stack is needed, as ``semspec monitor replay`` runs the rules in process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.stack import cli_env

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "replay_formats"


def semspec(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "monitor", "replay", *args]
    return subprocess.run(argv, env=cli_env(), capture_output=True, text=True, timeout=120)


def test_replaying_a_real_traj_names_its_format_and_the_loop_it_stops(git_repo: Path) -> None:
    traj = SAMPLES / "pydicom-1458.traj"
    loop = SAMPLES / "sympy-15976.noop-loop.traj.json"
    table = semspec(git_repo, str(traj), str(loop))
    assert table.returncode == 0, table.stderr
    # Piped, the table is plain rows: the run's path first, then format, steps, tokens, fired.
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines() if line.strip()}
    assert rows[str(traj)][1] == "swe-agent" and rows[str(traj)][4] == "-"
    assert rows[str(loop)][1] == "mini-swe-agent"
    assert rows[str(loop)][4:6] == ["repeated_action", "pause@46"]

    report = semspec(git_repo, "--json", str(traj), str(loop))
    assert report.returncode == 0, report.stderr
    runs = {Path(run["run"]).name: run for run in json.loads(report.stdout)["runs"]}
    assert runs["pydicom-1458.traj"]["format"] == "swe-agent"
    assert runs["pydicom-1458.traj"]["stopped_at"] is None
    assert runs["sympy-15976.noop-loop.traj.json"]["stopped_at"] == 46
