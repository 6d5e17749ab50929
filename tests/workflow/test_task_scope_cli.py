"""Scope creep through the real CLI on an embedded stack: tests are in scope, README is not.

A task on ``calc.py`` whose developer also adds ``tests/test_calc.py`` is approved with no
scope flag and no risk signal. A task whose developer also edits ``README.md`` is flagged by the
risk monitor; the flag is in ``task status`` and in the reviewer's request (the loop's
``agent.monitor.review`` event records whether the request carried flags, which is how a
scripted reviewer's input can be seen). A gate holds that task until the flag has arrived, so
the test never races the monitor.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from semspec.vocabulary.subjects import monitor_subject
from tests.support.monitor_probe import messages_for, signals_for, wait_until_monitor_idle
from tests.support.stack import (
    Stack,
    check_gate,
    python_gate,
    running_stack,
    sample_config,
)

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
NEW_TEST = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("scope")
    # Holds the loop in its gates until the test creates the file (bounded by the timeout).
    wait = f"import pathlib, time; p = pathlib.Path(r'{root / 'release'}'); "
    wait += "[time.sleep(0.1) for _ in iter(p.exists, True)]"
    # The release file is outside the worktree, which a sandboxed gate cannot see.
    config = sample_config([check_gate(), python_gate("hold", wait, timeout=60)])
    config["gates"]["sandbox"] = "none"
    with running_stack(root, config) as running:
        yield running


@pytest.fixture
def release(stack: Stack) -> Iterator[Path]:
    path = stack.root / "release"
    path.unlink(missing_ok=True)
    yield path
    path.touch()  # never leave a later task waiting


def submit(stack: Stack, task_id: str, writes: dict[str, str], *extra: str) -> Any:
    iterations = [{"developer": {"write": writes}, "reviewer": APPROVE}]
    done = stack.submit_scripted(task_id, iterations, "--json", *extra)
    assert done.returncode == 0 and done.stdout, done.stderr
    return json.loads(done.stdout)


def committed(stack: Stack, commit_id: str, path: str) -> str:
    blob = pygit2.Repository(str(stack.repo))[commit_id].peel(pygit2.Tree)[path]
    assert isinstance(blob, pygit2.Blob)
    return blob.data.decode()


def test_a_test_file_is_in_scope_and_an_unrelated_edit_is_flagged_to_the_reviewer(
    stack: Stack, release: Path
) -> None:
    release.touch()
    with_test = f"tests-{uuid.uuid4().hex[:8]}"
    status = submit(stack, with_test, {"calc.py": GOOD, "tests/test_calc.py": NEW_TEST}, "--wait")
    assert status["outcome"] == "approved", status
    assert status["flags"] == []
    assert committed(stack, status["commit_id"], "tests/test_calc.py") == NEW_TEST

    release.unlink()
    creep = f"creep-{uuid.uuid4().hex[:8]}"
    submit(stack, creep, {"calc.py": GOOD, "README.md": "# sample\n\nnow with sub\n"})
    held = stack.wait_status(creep, lambda s: bool(s["flags"]))
    assert held["phase"] == "gates" and held["last_verdict"] is None  # before the reviewer
    release.touch()
    status = stack.wait_status(creep, lambda s: bool(s["outcome"]))
    assert status["outcome"] == "approved", status
    assert len(status["flags"]) == 1
    assert status["flags"][0].startswith("scope_creep: ") and "README.md" in status["flags"][0]
    shown = stack.cli("task", "status", creep)
    assert "flags: scope_creep" in shown.stdout and "README.md" in shown.stdout

    reviews = {
        t: messages_for(stack.nats_url(), monitor_subject("review"), t) for t in (with_test, creep)
    }
    assert [r["data"]["flagged"] for r in reviews[with_test]] == [False]
    assert [r["data"]["flagged"] for r in reviews[creep]] == [True]
    wait_until_monitor_idle(stack.nats_url())
    assert signals_for(stack.nats_url(), with_test) == []
    signals = signals_for(stack.nats_url(), creep)
    assert [(s["level"], s["reason"]) for s in signals] == [("warn", "scope_creep")]
    assert signals[0]["evidence"]["outside"] == ["README.md"]
