"""Scenario: ``semspec task list`` shows where each approved task is on its way to main, on the
embedded stack, in a copy of mdurl.

Three tasks are approved on their own branches: two change ``_format.py`` (one of them
declared another file, so it did not wait for the first to land) and one ``_url.py``. Before
any land each lists as approved, not landed. A land that waits for the base branch's queue
(the test holds the queue's lock, as another land would) lists as queued; once it may go on it
lands and lists as landed with main's new commit. The second lands rebased; the third rewrote
the line the first changed, its land conflicts, and it lists as land failed with the reason.
A task submitted while an escalated one on the same file still runs lists as waiting on it.
The land states come from Temporal's visibility (the land's memo), not from a question to
each task.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.mdurl_project import FORMAT_PY, make_project, original, project_config
from tests.support.scenario_tasks import (
    APPROVE,
    EXIT_ESCALATED,
    finished,
    new_id,
    resolve,
    submit,
)
from tests.support.stack import Stack, cli_env

WAIT_S = 120.0
URL_PY = "mdurl/_url.py"
PARSE_PY = "mdurl/_parse.py"
DECODE_PY = "mdurl/_decode.py"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def approved(stack: Stack, repo: Path, prefix: str, declared: str, writes: dict[str, str]) -> str:
    """An approved task that declared ``declared`` and wrote ``writes``."""
    task_id = new_id(prefix)
    script = [{"developer": {"write": writes}, "reviewer": APPROVE}]
    code, result = submit(stack, repo, task_id, [declared], script)
    assert code == 0 and result["outcome"] == "approved", json.dumps(result)[-2000:]
    return task_id


def listed(stack: Stack, repo: Path, tasks: list[str]) -> dict[str, dict[str, Any]]:
    """``task list --all --json``'s rows of ``tasks`` (the stack holds other scenarios' too)."""
    rows = stack.cli_json("task", "list", "--all", repo=repo)
    return {row["task_id"]: row for row in rows if row["task_id"] in tasks}


def listed_text(stack: Stack, repo: Path, task_id: str) -> str:
    """The line of ``task list --wide`` that names ``task_id``."""
    done = stack.cli("task", "list", "--all", "--wide", repo=repo)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stdout.splitlines() if task_id in line]
    return line


def wait_for(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.5)


@contextmanager
def land_queue_held(repo: Path) -> Iterator[None]:
    """Hold main's land queue (``land/activities.py``'s lock file), as a running land does."""
    fd = os.open(repo / ".git" / "semspec-land-main.queue", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def start_land(stack: Stack, repo: Path, task_id: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "task", "land", task_id]
    return subprocess.Popen(
        [*argv, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=stack.root,
    )


def test_task_list_shows_approved_queued_landed_and_land_failed(stack: Stack) -> None:
    repo = make_project(stack, "land-list", project_config(stack, "land-list"))
    text = original(FORMAT_PY)
    first = approved(
        stack, repo, "doc", FORMAT_PY, {FORMAT_PY: '"""Parsed URLs back to text."""\n' + text}
    )
    second = approved(
        stack, repo, "url", URL_PY, {URL_PY: "# The parts of a URL.\n" + original(URL_PY)}
    )
    # It declared another file (so it does not wait for the first task to land) and wrote the
    # first one's line another way: its land conflicts.
    rival = approved(stack, repo, "rival", PARSE_PY, {FORMAT_PY: '"""URLs as text."""\n' + text})
    tasks = [first, second, rival]

    # A task that escalates (its reviewer abstains) runs on, waiting for an answer; a task
    # on the same file submitted meanwhile waits for it.
    held, waiter = new_id("held"), new_id("waiter")
    abstain = {"verdict": "request_changes", "reason": "abstain", "summary": "no valid verdict"}
    script = [
        {"developer": {"write": {DECODE_PY: "# held\n" + original(DECODE_PY)}}, "reviewer": abstain}
    ]
    code, out = submit(stack, repo, held, [DECODE_PY], script)
    assert code == EXIT_ESCALATED, out
    script = [
        {
            "developer": {"write": {DECODE_PY: "# after\n" + original(DECODE_PY)}},
            "reviewer": APPROVE,
        }
    ]
    code, out = submit(stack, repo, waiter, [DECODE_PY], script, wait=False)
    assert code == 0, out

    rows = listed(stack, repo, tasks)
    assert [rows[task]["land"] for task in tasks] == [{"state": "approved"}] * 3
    assert all(rows[task]["waiting_on"] == [] for task in tasks)
    assert listed_text(stack, repo, first).rstrip().endswith("approved (not landed)")
    wait_for(
        f"{waiter} listed as waiting on {held}",
        lambda: listed(stack, repo, [waiter])[waiter]["waiting_on"] == [held],
    )
    assert listed(stack, repo, [waiter])[waiter]["land"] is None
    assert listed_text(stack, repo, waiter).rstrip().endswith(f"waiting on {held}")

    with land_queue_held(repo):
        landing = start_land(stack, repo, first)
        try:
            wait_for(
                f"{first} listed as queued",
                lambda: listed(stack, repo, [first])[first]["land"] == {"state": "queued"},
            )
            assert listed_text(stack, repo, first).rstrip().endswith("queued")
        except BaseException:
            landing.kill()
            raise
    printed, err = landing.communicate(timeout=WAIT_S)
    assert landing.returncode == 0, err
    commit = json.loads(printed)["commit"]
    assert git(repo, "rev-parse", "main") == commit

    done = stack.cli("task", "land", second, repo=repo, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    conflict = stack.cli("task", "land", rival, repo=repo, timeout=240)
    assert conflict.returncode == 3, conflict.stdout + conflict.stderr
    main = git(repo, "rev-parse", "main")

    rows = listed(stack, repo, tasks)
    assert rows[first]["land"] == {"state": "landed", "commit": commit}
    assert rows[second]["land"] == {"state": "landed", "commit": main}
    failed = rows[rival]["land"]
    assert (failed["state"], failed["reason"]) == ("land failed", "land_conflict")
    assert FORMAT_PY in failed["message"]
    assert listed_text(stack, repo, second).rstrip().endswith(f"landed {main[:12]}")
    assert listed_text(stack, repo, rival).rstrip().endswith("land failed land_conflict")
    # The held task is aborted: the waiter goes on, and is approved in its turn.
    resolve(stack, repo, held, "abort")
    assert finished(stack, repo, waiter, WAIT_S)["outcome"] == "approved"
    assert listed(stack, repo, [waiter])[waiter]["waiting_on"] == []
