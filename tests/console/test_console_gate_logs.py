"""Which gate logs the console serves: only the file a task's own records name, when it is a
regular file inside that task's logs in the run folder (real files, no server)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from semspec.console.task_logs import LogRefused, open_gate_log
from semspec.workflow.task.messages import LogEntry, TaskStatus

TASK = "t-1"


def status_naming(*paths: str | Path) -> TaskStatus:
    """A task whose first iteration ran one gate per path, each naming that path as its log."""
    log = [LogEntry(1, "gate", f"g{i}: pass", {"name": f"g{i}", "log": str(p)}) for i, p in
           enumerate(paths)]  # fmt: skip
    return TaskStatus(TASK, "a task", "done", 1, 0, 0, log=log)


def read(status: TaskStatus, index: int, run_dir: Path) -> bytes:
    fd = open_gate_log(status, 1, index, run_dir)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    logs = tmp_path / "run" / "logs" / TASK / "iteration-1"
    logs.mkdir(parents=True)
    (logs / "tests.log").write_text("5 passed\n", encoding="utf-8")
    return tmp_path / "run"


def test_the_log_the_task_names_inside_its_logs_is_served(run_dir: Path) -> None:
    named = run_dir / "logs" / TASK / "iteration-1" / "tests.log"
    assert read(status_naming(named), 0, run_dir) == b"5 passed\n"


def test_a_gate_run_the_records_do_not_have_is_refused(run_dir: Path) -> None:
    named = run_dir / "logs" / TASK / "iteration-1" / "tests.log"
    with pytest.raises(LogRefused, match="no gate run 3 in iteration 1"):
        open_gate_log(status_naming(named), 1, 3, run_dir)
    with pytest.raises(LogRefused, match="no gate run 0 in iteration 2"):
        open_gate_log(status_naming(named), 2, 0, run_dir)


def test_a_named_file_outside_the_tasks_logs_is_refused(run_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n", encoding="utf-8")
    other_task = run_dir / "logs" / "t-2" / "tests.log"
    other_task.parent.mkdir(parents=True)
    other_task.write_text("another task's\n", encoding="utf-8")
    climbing = run_dir / "logs" / TASK / ".." / ".." / ".." / "secret.txt"
    for named in (outside, other_task, climbing, Path("relative/tests.log")):
        with pytest.raises(LogRefused, match="not among task t-1's logs"):
            open_gate_log(status_naming(named), 1, 0, run_dir)


def test_a_symlink_or_a_folder_in_place_of_the_log_is_refused(
    run_dir: Path, tmp_path: Path
) -> None:
    folder = run_dir / "logs" / TASK / "iteration-1"
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n", encoding="utf-8")
    (folder / "out.log").symlink_to(outside)
    (folder / "in.log").symlink_to(folder / "tests.log")
    (folder / "dir.log").mkdir()
    with pytest.raises(LogRefused, match="not among"):
        open_gate_log(status_naming(folder / "out.log"), 1, 0, run_dir)
    with pytest.raises(LogRefused, match="cannot be read"):  # O_NOFOLLOW: even one inside
        open_gate_log(status_naming(folder / "in.log"), 1, 0, run_dir)
    with pytest.raises(LogRefused, match="not a regular file"):
        open_gate_log(status_naming(folder / "dir.log"), 1, 0, run_dir)
