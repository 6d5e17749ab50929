"""Drive tasks of a scenario through the CLI and read what they left behind.

Everything goes through ``Stack.cli`` (``python -m semspec`` in a subprocess) against one of the
scenario's projects; git is read with pygit2 afterwards, as a user would read the branch.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pygit2

from tests.support.stack import Stack, write_script

EXIT_APPROVED = 0
EXIT_ESCALATED = 3
APPROVE = {"verdict": "approve", "summary": "meets the criteria"}


def new_id(prefix: str) -> str:
    """A task id no other test on the stack uses (workflow ids are stack-wide)."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def submit(
    stack: Stack,
    repo: Path,
    task_id: str,
    files: list[str],
    iterations: list[dict[str, Any]] | None = None,
    *extra: str,
    criterion: str = "format_without_hash(url) returns the URL without its fragment",
    wait: bool = True,
) -> tuple[int, dict[str, Any]]:
    """``task submit`` with ``--json`` (and ``--wait``); the exit code and printed JSON.

    With ``iterations`` the scripted agents play them; without, the config's models do.
    """
    args = ["task", "submit", f"scenario task {task_id}", "--id", task_id]
    for path in files:
        args += ["--file", path]
    args += ["--criterion", criterion]
    if iterations is not None:
        script = write_script(stack.root / "scripts" / f"{task_id}.yaml", iterations)
        args += ["--script", str(script)]
    args += [*extra, "--json"]
    if wait:
        args.append("--wait")
    done = stack.cli(*args, repo=repo, timeout=180)
    assert done.stdout, f"task submit printed nothing (exit {done.returncode}): {done.stderr}"
    return done.returncode, json.loads(done.stdout)


def finished(stack: Stack, repo: Path, task_id: str, timeout_s: float = 90.0) -> dict[str, Any]:
    """The task's status once it has an outcome (bounded wait)."""
    return stack.wait_status(task_id, lambda s: bool(s["outcome"]), timeout_s, repo=repo)


def resolve(stack: Stack, repo: Path, task_id: str, action: str, *extra: str) -> dict[str, Any]:
    """``escalations resolve TASK --action ACTION``; the acknowledgement."""
    ack: dict[str, Any] = stack.cli_json(
        "escalations", "resolve", task_id, "--action", action, *extra, repo=repo
    )
    return ack


def entries(status: dict[str, Any], kind: str) -> list[str]:
    """Messages of the task log entries of one kind, in order."""
    return [e["message"] for e in status["log"] if e["kind"] == kind]


def branch_commits(repo: Path, task_id: str) -> list[pygit2.Commit]:
    """Commits on ``semspec/task/<id>`` that ``main`` does not have, newest first."""
    git = pygit2.Repository(str(repo))
    branch = git.lookup_branch(f"semspec/task/{task_id}")
    if branch is None:
        return []
    tip = branch.peel(pygit2.Commit)
    base = git.lookup_branch("main").peel(pygit2.Commit)
    return [c for c in git.walk(tip.id) if c.id != base.id and git.descendant_of(c.id, base.id)]


def file_at(repo: Path, commit_id: str, path: str) -> str | None:
    """The text of ``path`` in a commit, or None when the commit does not have it."""
    git = pygit2.Repository(str(repo))
    tree = git[commit_id].peel(pygit2.Tree)
    try:
        blob = tree[path]
    except KeyError:
        return None
    assert isinstance(blob, pygit2.Blob)
    return blob.data.decode()
