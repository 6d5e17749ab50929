"""Scenario: tasks that land themselves (`loop.land: auto`) on a copy of mdurl.

- With `loop.land: auto` in the config, an approved task is on main with no command typed: main
  moves to the landed commit, the user's clean checkout follows, and `task status` says landed.
- A task submitted with `--land auto` whose base moves under it (the user commits a rewrite of
  the same line while the task's gates run) does not land: it escalates `land_conflict` naming
  the file. After `escalations resolve ... retry`, the developer makes the change again on the
  moved main, and it lands on top of the user's commit.
- A gate that fails only on the combined result (the user's new test meets the task's change)
  escalates `land_gate_failed` with the gate's output; `approve` lands again as it is (and fails
  again), `abort` ends the task and its branch keeps the approved commit.
- A plan with `land: auto` lands each task as it is approved; main moves under the first task,
  which is rebased, and the dependent task starts from the commit it landed as, so it lands by
  fast-forward.
- `semspec gc` run while a task's own land gates the rebased change keeps the land's scratch.

The tasks' gates wait for the test where it must move main while a task runs (`barrier_gate`,
unsandboxed so that it can see the test's folder).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests.support.mdurl_project import (
    ADDED_TEST,
    FORMAT_PY,
    TEST_SUITE,
    make_project,
    original,
    project_config,
    pytest_gate,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, entries, new_id, resolve, submit
from tests.support.stack import Stack, write_script

SUITE = "tests/test_mdurl.py"
BARRIER = """\
import pathlib, sys, time
folder = pathlib.Path(sys.argv[1])
(folder / "waiting").touch()
deadline = time.monotonic() + 150
while not (folder / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.1)
sys.exit(0 if (folder / "go").exists() else 1)
"""
USER_TEST = """\
import mdurl._format


def test_the_format_module_keeps_its_one_public_function():
    assert not hasattr(mdurl._format, "format_without_hash")
"""

COUNTED_BARRIER = """\
import pathlib, sys, time
folder = pathlib.Path(sys.argv[1])
run = 0
while (folder / f"waiting-{run}").exists():
    run += 1
(folder / f"waiting-{run}").touch()
deadline = time.monotonic() + 150
while not (folder / f"go-{run}").exists() and time.monotonic() < deadline:
    time.sleep(0.1)
sys.exit(0 if (folder / f"go-{run}").exists() else 1)
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def user_commits(repo: Path, path: str, text: str, message: str) -> str:
    """The user changes ``path`` in their checkout of main and commits it; the new main."""
    (repo / path).write_text(text, encoding="utf-8")
    git(repo, "add", path)
    git(repo, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", message)
    return git(repo, "rev-parse", "main")


def worktrees(repo: Path) -> list[str]:
    listed = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [
        str(Path(line.removeprefix("worktree ")).resolve())
        for line in listed
        if line.startswith("worktree ")
    ]


def barrier_gate(folder: Path) -> dict[str, Any]:
    """A required gate that waits until the test creates ``folder/go`` (at most 150 s)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "barrier.py"
    script.write_text(BARRIER, encoding="utf-8")
    return {"name": "barrier", "command": f"{sys.executable} {script} {folder}", "timeout": 180}


def wait_for(path: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def plan_finished(stack: Stack, repo: Path, plan_id: str, timeout_s: float = 240) -> Any:
    """``plan status --json`` once the plan is done (bounded wait)."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = stack.cli_json("plan", "status", plan_id, repo=repo)
        if status["state"] == "done":
            return status
        assert time.monotonic() < deadline, f"plan {plan_id} never finished: {status}"
        time.sleep(0.5)


def test_with_loop_land_auto_an_approved_task_is_on_main_with_no_command_typed(
    stack: Stack,
) -> None:
    config = project_config(stack, "land-auto", loop={"land": "auto"})
    repo = make_project(stack, "land-auto", config)
    start = git(repo, "rev-parse", "main")
    task_id = new_id("hash")
    script = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]

    code, result = submit(stack, repo, task_id, [FORMAT_PY], script)

    assert (code, result["outcome"]) == (0, "approved"), str(result)[-2000:]
    landed = git(repo, "rev-parse", "main")
    assert landed != start and git(repo, "rev-parse", "main~1") == start
    status = stack.status(task_id, repo=repo)
    assert status["land"] == {"state": "landed", "commit": landed}
    human = stack.cli("task", "status", task_id, repo=repo).stdout
    assert f"  land: landed {landed[:12]}" in human
    assert any("landed on main" in line for line in entries(status, "land"))
    # The user's clean checkout of main follows; the task's worktree is gone.
    assert "format_without_hash" in (repo / FORMAT_PY).read_text()
    assert git(repo, "status", "--porcelain") == ""
    assert worktrees(repo) == [str(repo.resolve())]


def test_a_task_whose_base_moved_on_the_same_line_escalates_land_conflict_and_lands_after_retry(
    stack: Stack,
) -> None:
    barrier = stack.root / "land-conflict-barrier"
    gates = {"sandbox": "none", "additional": [pytest_gate(), barrier_gate(barrier)]}
    repo = make_project(stack, "land-conflict", project_config(stack, "land-conflict", gates=gates))
    text = original(FORMAT_PY)
    theirs = text.replace("# ipv6 address", "# IPv6 host")
    assert theirs != text, "mdurl/_format.py changed shape; update the scenario"
    ours = text.replace("# ipv6 address", "# ipv6 goes in brackets")
    again = theirs.replace("# IPv6 host", "# IPv6 host, in brackets")
    task_id = new_id("brackets")
    script = [
        {"developer": {"write": {FORMAT_PY: ours}}, "reviewer": APPROVE},
        {"developer": {"write": {FORMAT_PY: again}}, "reviewer": APPROVE},
    ]
    code, _ = submit(stack, repo, task_id, [FORMAT_PY], script, "--land", "auto", wait=False)
    assert code == 0

    # While the task's gates run, the user rewrites the same line on main.
    wait_for(barrier / "waiting")
    moved = user_commits(repo, FORMAT_PY, theirs, "the user's own wording")
    (barrier / "go").touch()

    asked = stack.wait_status(
        task_id, lambda s: s["pending_escalation"] is not None, timeout_s=120, repo=repo
    )
    question = asked["pending_escalation"]
    assert question["reason"] == "land_conflict"
    assert f"conflicts in {FORMAT_PY}" in question["message"]
    assert asked["land"]["state"] == "land failed"
    assert asked["land"]["reason"] == "land_conflict"
    assert git(repo, "rev-parse", "main") == moved  # nothing landed

    resolve(stack, repo, task_id, "retry", "--guidance", "keep the user's wording")
    done = stack.wait_status(task_id, lambda s: bool(s["outcome"]), timeout_s=150, repo=repo)

    assert done["outcome"] == "approved", str(done)[-3000:]
    landed = git(repo, "rev-parse", "main")
    assert done["land"] == {"state": "landed", "commit": landed}
    assert git(repo, "rev-parse", "main~1") == moved
    assert (repo / FORMAT_PY).read_text() == again
    assert done["iteration"] == 2
    assert done["base_commit"] == moved  # the second attempt started from the moved main
    assert any(f"started again on main at {moved[:10]}" in m for m in entries(done, "workspace"))


def test_a_plan_with_land_auto_lands_each_task_and_the_dependent_starts_from_the_landed_base(
    stack: Stack,
) -> None:
    barrier = stack.root / "plan-auto-barrier"
    gates = {"sandbox": "none", "additional": [pytest_gate(), barrier_gate(barrier)]}
    repo = make_project(stack, "plan-auto", project_config(stack, "plan-auto", gates=gates))
    first, second = new_id("add-function"), new_id("test-function")
    scripts = stack.root / "plan-auto-scripts"
    write_script(
        scripts / "first.yaml",
        [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}],
    )
    write_script(
        scripts / "second.yaml",
        [{"developer": {"write": {SUITE: TEST_SUITE + "\n\n" + ADDED_TEST}}, "reviewer": APPROVE}],
    )
    plan_id = new_id("plan")
    plan = {
        "id": plan_id,
        "title": "format without the fragment, then its test",
        "land": "auto",
        "tasks": [
            {
                "id": first,
                "title": "Add format_without_hash",
                "files": [FORMAT_PY],
                "criteria": ["format_without_hash(url) drops the fragment"],
                "script": "first.yaml",
            },
            {
                "id": second,
                "title": "Test format_without_hash",
                "files": [SUITE],
                "criteria": ["a test covers format_without_hash"],
                "script": "second.yaml",
                "depends_on": [first],
            },
        ],
    }
    plan_file = scripts / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")

    submitted = stack.cli("plan", "submit", str(plan_file), "--json", repo=repo)
    assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr
    # While the first task's gates run, the user commits to main: the first task is rebased.
    wait_for(barrier / "waiting")
    moved = user_commits(repo, "README.md", "# mdurl, with the user's notes\n", "notes")
    (barrier / "go").touch()

    plan_done = plan_finished(stack, repo, plan_id)

    assert plan_done["outcome"] == "approved", str(plan_done)[-3000:]
    one, two = (stack.status(t, repo=repo) for t in (first, second))
    assert one["land"]["state"] == two["land"]["state"] == "landed"
    assert git(repo, "log", "--format=%H", "-3", "main").splitlines() == [
        two["land"]["commit"],
        one["land"]["commit"],
        moved,
    ]
    assert one["land"]["commit"] != one["commit_id"]  # rebased on the user's commit
    # The dependent task forked from the commit its dependency landed as, not from the first
    # task's branch, so it landed by fast-forward: its own commit is on main.
    assert two["base_commit"] == one["land"]["commit"]
    assert two["land"]["commit"] == two["commit_id"]
    assert "format_without_hash" in (repo / SUITE).read_text()
    assert git(repo, "status", "--porcelain") == ""
    assert worktrees(repo) == [str(repo.resolve())]
    assert git(repo, "branch", "--list", "semspec/checkpoint/*") == ""


def test_a_gate_failing_on_the_combined_result_escalates_approve_lands_again_and_abort_ends_it(
    stack: Stack,
) -> None:
    barrier = stack.root / "land-gate-barrier"
    gates = {"sandbox": "none", "additional": [pytest_gate(), barrier_gate(barrier)]}
    config = project_config(stack, "land-gate", gates=gates, loop={"land": "auto"})
    repo = make_project(stack, "land-gate", config)
    task_id = new_id("hash")
    script = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]
    code, _ = submit(stack, repo, task_id, [FORMAT_PY], script, wait=False)
    assert code == 0

    # Meanwhile the user adds a test that holds on main and fails with the task's change.
    wait_for(barrier / "waiting")
    moved = user_commits(repo, "tests/test_user.py", USER_TEST, "the user's own test")
    (barrier / "go").touch()

    first = stack.wait_status(
        task_id, lambda s: s["pending_escalation"] is not None, timeout_s=120, repo=repo
    )["pending_escalation"]
    assert first["reason"] == "land_gate_failed"
    assert "gate tests failed" in first["message"]
    assert "test_user.py" in first["message"]  # the gate's output comes with the question

    # approve: the land is tried again as it is, and fails the same way.
    resolve(stack, repo, task_id, "approve")
    second = stack.wait_status(
        task_id,
        lambda s: (
            (s["pending_escalation"] or {}).get("escalation_id", first["escalation_id"])
            != first["escalation_id"]
        ),
        timeout_s=120,
        repo=repo,
    )
    assert second["pending_escalation"]["reason"] == "land_gate_failed"
    assert len(entries(second, "land")) == 2  # two lands

    resolve(stack, repo, task_id, "abort")
    done = stack.wait_status(task_id, lambda s: bool(s["outcome"]), timeout_s=60, repo=repo)

    assert (done["outcome"], done["reason"]) == ("aborted", "land_gate_failed")
    assert git(repo, "rev-parse", "main") == moved  # nothing landed
    kept = git(repo, "rev-parse", f"semspec/task/{task_id}")
    assert kept == done["commit_id"]  # the task branch keeps the approved commit


def test_gc_during_a_tasks_own_land_keeps_the_lands_scratch_worktree(stack: Stack) -> None:
    # Run n of the gate waits for go-<n>: run 0 is the task's own gates, run 1 the land's gates
    # on the rebased result, in the land's scratch worktree.
    barrier = stack.root / "land-gc-barrier"
    barrier.mkdir(parents=True)
    script = barrier / "barrier.py"
    script.write_text(COUNTED_BARRIER, encoding="utf-8")
    gate = {"name": "barrier", "command": f"{sys.executable} {script} {barrier}", "timeout": 180}
    gates = {"sandbox": "none", "additional": [gate]}
    config = project_config(stack, "land-gc", gates=gates, loop={"land": "auto"})
    repo = make_project(stack, "land-gc", config)
    task_id = new_id("hash")
    script_rows = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]
    code, _ = submit(stack, repo, task_id, [FORMAT_PY], script_rows, wait=False)
    assert code == 0
    wait_for(barrier / "waiting-0")
    moved = user_commits(repo, "README.md", "# mdurl, with the user's notes\n", "notes")
    (barrier / "go-0").touch()
    wait_for(barrier / "waiting-1")  # the land gates the rebased change

    found = stack.cli_json("gc", repo=repo)

    scratch = [item for item in found["kept"] if item["owner"] == task_id]
    assert scratch and all("is running" in item["why"] for item in scratch), found
    assert not [item for item in found["removed"] if item["owner"] == task_id], found
    (barrier / "go-1").touch()
    done = stack.wait_status(task_id, lambda s: bool(s["outcome"]), timeout_s=120, repo=repo)
    assert done["land"]["state"] == "landed", done["land"]
    assert git(repo, "rev-parse", "main~1") == moved
