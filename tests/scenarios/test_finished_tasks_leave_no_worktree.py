"""Scenario: tasks that end leave no worktree and no checkpoint branch; live tasks keep theirs.

Four tasks on a copy of mdurl each checkpoint once under context pressure (the first review
reports most of the window), so each has a worktree and a checkpoint branch. One is approved
and landed with `semspec task land`, one is aborted by a human's answer, one is cancelled
(`semspec task cancel`) while escalated, one stays escalated.
After that `git worktree list` shows the user's checkout and the escalated task's worktree only,
the run folder's `worktrees/` holds only the escalated task's, and only the escalated task has
checkpoint branches. The approved task's branch still lands and exports after its worktree
went. With `loop.keep_worktrees: true` an ended task keeps its worktree, and `semspec gc` keeps
it too.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    original,
    project_config,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, entries, new_id, resolve, submit
from tests.support.stack import Stack

ENCODE_PY = "mdurl/_encode.py"
PARSE_PY = "mdurl/_parse.py"
DECODE_PY = "mdurl/_decode.py"
HEAVY_REVIEW_TOKENS = 110_000
"""What the first review reports: over 75% of the scripted model's 128K window, so the loop
checkpoints before the next iteration."""
REJECT = {"verdict": "reject", "summary": "not this way"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def worktrees(repo: Path) -> list[str]:
    """The folders `git worktree list --porcelain` names, by their last part."""
    listed = git(repo, "worktree", "list", "--porcelain").splitlines()
    return sorted(
        Path(line.removeprefix("worktree ")).name for line in listed if line.startswith("worktree ")
    )


def checkpoints(repo: Path) -> list[str]:
    """Every branch `git branch --list 'semspec/checkpoint/*'` shows."""
    listed = git(repo, "branch", "--list", "semspec/checkpoint/*", "--format=%(refname:short)")
    return sorted(listed.split())


def checkpointed(path: str, text: str, last_review: dict[str, Any]) -> list[dict[str, Any]]:
    """A script whose first review fills the context (a checkpoint follows); then the change
    is written again and the last review decides."""
    heavy = {"verdict": "request_changes", "summary": "once more", "tokens": HEAVY_REVIEW_TOKENS}
    first = {"developer": {"write": {path: text + "\n# first try\n"}}, "reviewer": heavy}
    return [first, {"developer": {"write": {path: text}}, "reviewer": last_review}]


def gone(repo: Path, task_id: str, timeout_s: float = 60.0) -> bool:
    """Whether the task's worktree leaves `git worktree list` (a cancel returns before the
    cancelled run has cleaned up); bounded."""
    deadline = time.monotonic() + timeout_s
    while task_id in worktrees(repo):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.3)
    return True


def escalated(stack: Stack, repo: Path, task_id: str) -> dict[str, Any]:
    return stack.wait_status(
        task_id, lambda s: bool(s.get("pending_escalation") or s["outcome"]), 150, repo=repo
    )


def test_ended_tasks_leave_only_the_users_checkout_and_an_escalated_task_keeps_its_own(
    stack: Stack,
) -> None:
    repo = make_project(stack, "cleanup", project_config(stack, "cleanup"))
    run_dir = stack.root / "cleanup" / "run"
    done, aborted, held = new_id("done"), new_id("aborted"), new_id("held")
    cancelled = new_id("cancelled")
    for task_id, path in ((aborted, ENCODE_PY), (held, PARSE_PY), (cancelled, DECODE_PY)):
        script = checkpointed(path, original(path) + "#\n", REJECT)
        code, _ = submit(stack, repo, task_id, [path], script, wait=False)
        assert code == 0
    code, result = submit(
        stack, repo, done, [FORMAT_PY], checkpointed(FORMAT_PY, with_new_function(), APPROVE)
    )
    assert code == 0 and result["outcome"] == "approved", json.dumps(result)[-3000:]
    assert entries(result, "checkpoint"), result["log"]
    assert any("removed the worktree" in m for m in entries(result, "cleanup")), result["log"]

    for task_id in (aborted, held, cancelled):
        status = escalated(stack, repo, task_id)
        assert status["pending_escalation"], json.dumps(status)[-3000:]
        assert entries(status, "checkpoint"), status["log"]
    # While escalated, a task has its worktree and its checkpoint branch.
    assert worktrees(repo) == sorted(["repo", aborted, held, cancelled])
    assert checkpoints(repo) == sorted(
        f"semspec/checkpoint/{t}/1" for t in (aborted, held, cancelled)
    )

    resolve(stack, repo, aborted, "abort")
    final = stack.wait_status(aborted, lambda s: bool(s["outcome"]), 90, repo=repo)
    assert final["outcome"] == "aborted"
    assert any("removed the worktree" in m for m in entries(final, "cleanup")), final["log"]
    stopped = stack.cli("task", "cancel", cancelled, repo=repo)
    assert stopped.returncode == 0, stopped.stderr
    assert gone(repo, cancelled), worktrees(repo)
    # The approved task's worktree went with its end: export and land read its branch.
    assert done not in worktrees(repo)
    patches = stack.cli_json(
        "task", "export", done, "-o", str(stack.root / "cleanup-patches"), repo=repo
    )
    [patch] = patches["patches"]
    assert "format_without_hash" in Path(patch).read_text(encoding="utf-8")
    # `review context` counts the task's change against the budget, from its commit now.
    review = stack.cli_json("review", "context", done, repo=repo)
    without = stack.cli_json("review", "context", "--file", FORMAT_PY, repo=repo)
    assert review["budget_tokens"] < without["budget_tokens"], (review, without)
    landed = stack.cli_json("task", "land", done, repo=repo)
    assert landed["outcome"] == "landed", landed
    assert git(repo, "rev-parse", "main") == landed["commit"]

    assert worktrees(repo) == sorted(["repo", held])
    assert sorted(p.name for p in (run_dir / "worktrees").iterdir()) == [held]
    assert checkpoints(repo) == [f"semspec/checkpoint/{held}/1"]
    assert stack.status(held, repo=repo)["checkpoints"] == [f"semspec/checkpoint/{held}/1"]
    assert not (run_dir / "land").exists() or list((run_dir / "land").iterdir()) == []
    # Task branches stay: they hold the work.
    branches = git(repo, "branch", "--list", "semspec/task/*", "--format=%(refname:short)")
    assert set(branches.split()) == {f"semspec/task/{t}" for t in (done, aborted, held, cancelled)}
    # gc finds nothing of the ended tasks and keeps everything of the escalated one.
    gc = stack.cli_json("gc", repo=repo)
    assert gc["removed"] == []
    assert {(item["kind"], item["owner"]) for item in gc["kept"]} == {
        ("worktree", held),
        ("checkpoint", held),
    }
    assert worktrees(repo) == sorted(["repo", held])


def test_keep_worktrees_keeps_an_ended_tasks_worktree_and_gc_keeps_it_too(stack: Stack) -> None:
    config = project_config(stack, "keeping", loop={"keep_worktrees": True})
    repo = make_project(stack, "keeping", config)
    task_id = new_id("kept")
    script = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]
    code, result = submit(stack, repo, task_id, [FORMAT_PY], script)
    assert code == 0 and result["outcome"] == "approved", json.dumps(result)[-3000:]
    assert worktrees(repo) == sorted(["repo", task_id])
    worktree = stack.root / "keeping" / "run" / "worktrees" / task_id
    assert (worktree / FORMAT_PY).read_text(encoding="utf-8") == with_new_function()
    gc = stack.cli_json("gc", repo=repo)
    assert gc["removed"] == []
    assert [(item["kind"], item["owner"]) for item in gc["kept"]] == [("worktree", task_id)]
    assert worktrees(repo) == sorted(["repo", task_id])
