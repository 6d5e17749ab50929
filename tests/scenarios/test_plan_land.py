"""Scenario: `semspec plan land` lands a plan's approved tasks, each after its dependency.

The second task depends on the first (its test imports the first's function), and main moved
after both were approved. Landing the plan rebases the first on main, then the second on the
first: the second's branch carries the first's original commit, which adds nothing there and
is dropped, so main gets exactly one commit per task, each gated by the project's test suite.
The plan's YAML lists the dependent task first: the order comes from `depends_on`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.mdurl_plan import SUITE, dependent_plan
from tests.support.mdurl_project import FORMAT_PY, make_project, original, project_config
from tests.support.stack import Stack

ENCODE_PY = "mdurl/_encode.py"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_plan_land_lands_each_task_after_its_dependency_on_a_moved_main(stack: Stack) -> None:
    repo = make_project(stack, "plan-land", project_config(stack, "plan-land"))
    plan = dependent_plan(stack, "plan-land-scripts")
    first, second = plan.first, plan.second
    done = stack.cli("plan", "submit", str(plan.path), "--wait", "--json", repo=repo, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    # The user commits to main meanwhile.
    (repo / ENCODE_PY).write_text(original(ENCODE_PY) + "\n# tuned\n", encoding="utf-8")
    git(repo, "add", ENCODE_PY)
    git(repo, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "tune")
    moved = git(repo, "rev-parse", "main")

    landed = stack.cli("plan", "land", plan.plan_id, "--json", repo=repo, timeout=300)
    assert landed.returncode == 0, landed.stdout[-3000:] + landed.stderr
    rows = json.loads(landed.stdout)["tasks"]
    assert [(r["task_id"], r["outcome"], r["method"]) for r in rows] == [
        (first, "landed", "rebase"),
        (second, "landed", "rebase"),
    ]
    log = git(repo, "log", "--format=%H", "-3", "main").splitlines()
    assert log == [rows[1]["commit"], rows[0]["commit"], moved]
    assert "format_without_hash" in (repo / SUITE).read_text()
    assert "format_without_hash" in (repo / FORMAT_PY).read_text()
