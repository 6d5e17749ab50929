"""Scenario: approved tasks reach main through `semspec task land` on the embedded stack.

Three tasks change one file of a copy of mdurl; each is approved on its own branch, forked
from the same main. Landed in order, the first fast-forwards and the next two are rebased on
the one before and gated (the project's pytest suite) on the combined result before main moves.
A fourth task that rewrote a line the second one changed does not land: the land names the file
and main stays where it was.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    original,
    project_config,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, new_id, submit
from tests.support.stack import Stack


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def approved(stack: Stack, repo: Path, prefix: str, text: str) -> str:
    task_id = new_id(prefix)
    script = [{"developer": {"write": {FORMAT_PY: text}}, "reviewer": APPROVE}]
    code, result = submit(stack, repo, task_id, [FORMAT_PY], script)
    assert code == 0 and result["outcome"] == "approved", json.dumps(result)[-2000:]
    return task_id


def land(stack: Stack, repo: Path, task_id: str) -> tuple[int, dict[str, object]]:
    done = stack.cli("task", "land", task_id, "--json", repo=repo, timeout=240)
    assert done.stdout, f"task land printed nothing (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout)


def test_three_approved_tasks_on_one_file_land_in_order_and_a_conflict_names_the_file(
    stack: Stack,
) -> None:
    repo = make_project(stack, "landing", project_config(stack, "landing"))
    text = original(FORMAT_PY)
    tasks = [
        approved(stack, repo, "doc", '"""Parsed URLs back to text."""\n' + text),
        approved(stack, repo, "ipv6", text.replace("# ipv6 address", "# ipv6 goes in brackets")),
        approved(stack, repo, "hash", with_new_function()),
    ]
    rival = approved(stack, repo, "rival", text.replace("# ipv6 address", "# IPv6 host"))
    assert stack.status(rival, repo=repo)["land"] == {"state": "approved"}
    waiting = stack.cli("task", "status", rival, repo=repo).stdout
    assert f"  land: not landed (approved; semspec task land {rival})" in waiting
    start = git(repo, "rev-parse", "main")

    results = [land(stack, repo, task_id) for task_id in tasks]
    assert [(code, r["outcome"], r["method"]) for code, r in results] == [
        (0, "landed", "fast-forward"),
        (0, "landed", "rebase"),
        (0, "landed", "rebase"),
    ]
    commits = [str(r["commit"]) for _, r in results]
    assert git(repo, "log", "--format=%H", "-4", "main").splitlines() == [*commits[::-1], start]
    # Ended tasks leave no worktree, landed or not (the rival is approved, not landed): the
    # user's checkout is the only one, and a land needs none (it reads the task branch).
    listed = git(repo, "worktree", "list", "--porcelain").splitlines()
    paths = [Path(line.removeprefix("worktree ")).name for line in listed if "worktree " in line]
    assert paths == ["repo"]
    final = (repo / FORMAT_PY).read_text()
    assert "Parsed URLs" in final and "brackets" in final and "format_without_hash" in final
    assert git(repo, "status", "--porcelain") == ""

    code, conflict = land(stack, repo, rival)
    assert (code, conflict["outcome"], conflict["conflicts"]) == (3, "land_conflict", [FORMAT_PY])
    assert git(repo, "rev-parse", "main") == commits[-1]
    human = stack.cli("task", "land", rival, repo=repo, timeout=240)
    assert human.returncode == 3 and f"conflicts in {FORMAT_PY}" in human.stdout
    assert "resolve it by hand" in human.stdout and "retry" not in human.stdout

    # task status shows where each approved task is on its way to main.
    assert stack.status(tasks[1], repo=repo)["land"] == {"state": "landed", "commit": commits[1]}
    failed = stack.status(rival, repo=repo)["land"]
    assert (failed["state"], failed["reason"]) == ("land failed", "land_conflict")
    human = stack.cli("task", "status", tasks[2], repo=repo)
    assert f"  land: landed {commits[2][:12]}" in human.stdout
    human = stack.cli("task", "status", rival, repo=repo)
    assert "  land: failed (land_conflict: rebase of" in human.stdout

    again, _ = land(stack, repo, tasks[0])
    assert again == 0
    patches = stack.cli_json(
        "task", "export", tasks[2], "-o", str(stack.root / "patches"), repo=repo
    )
    [patch] = patches["patches"]
    assert Path(patch).name.startswith("0001-") and "format_without_hash" in Path(patch).read_text()
