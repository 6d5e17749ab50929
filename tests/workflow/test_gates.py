"""Running gates as real subprocesses: results, timeouts, process groups and bounded output."""

from __future__ import annotations

import asyncio
import os
import sys
import tracemalloc
from pathlib import Path

import pytest

from semspec.core.errors import GateError
from semspec.workflow.gates import GateSpec, run_gate, run_gates
from semspec.workflow.gates.output_pipe import PIPE_BYTES

MAX_OUTPUT = 4_096


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    path = tmp_path / "worktree"
    path.mkdir()
    return path


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "logs"


def gate(name: str, command: str, *, required: bool = True, timeout_s: float = 60.0) -> GateSpec:
    return GateSpec(name=name, command=command, required=required, timeout_s=timeout_s)


def process_is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody has reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


async def eventually_gone(pid: int) -> bool:
    for _ in range(200):
        if process_is_gone(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_gate_that_exits_zero_passes_with_its_output(worktree: Path, log_dir: Path) -> None:
    result = await run_gate(gate("hello", "echo hello"), worktree, log_dir, MAX_OUTPUT)
    assert (result.passed, result.exit_code, result.timed_out) == (True, 0, False)
    assert result.output == "hello\n"
    assert Path(result.log_path).read_text() == "hello\n"


async def test_gate_that_exits_nonzero_fails_with_stderr_in_its_output(
    worktree: Path, log_dir: Path
) -> None:
    result = await run_gate(gate("b", "echo boom >&2; exit 3"), worktree, log_dir, MAX_OUTPUT)
    assert (result.passed, result.exit_code) == (False, 3)
    assert "boom" in result.output


async def test_gate_runs_in_its_working_dir(worktree: Path, log_dir: Path) -> None:
    (worktree / "pkg").mkdir()
    spec = GateSpec(name="where", command="pwd", working_dir="pkg")
    result = await run_gate(spec, worktree, log_dir, MAX_OUTPUT)
    assert result.output.strip().endswith("/worktree/pkg")


async def test_missing_working_dir_is_a_failed_result_that_says_why(
    worktree: Path, log_dir: Path
) -> None:
    spec = GateSpec(name="t", command="true", working_dir="absent")
    result = await run_gate(spec, worktree, log_dir, MAX_OUTPUT)
    assert (result.passed, result.exit_code) == (False, None)
    assert "does not exist" in result.output


async def test_working_dir_escaping_through_a_symlink_is_refused(
    tmp_path: Path, worktree: Path, log_dir: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (worktree / "link").symlink_to(outside)
    spec = GateSpec(name="t", command="touch escaped", working_dir="link")
    with pytest.raises(GateError, match="outside the worktree"):
        await run_gate(spec, worktree, log_dir, MAX_OUTPUT)
    assert not (outside / "escaped").exists()


@pytest.mark.slow  # waits on a long or hanging gate
async def test_hanging_gate_is_killed_at_its_timeout_with_the_child_it_spawned(
    worktree: Path, log_dir: Path
) -> None:
    command = "sleep 600 & echo $! > child.pid; sleep 600"
    result = await run_gate(gate("hang", command, timeout_s=0.5), worktree, log_dir, MAX_OUTPUT)
    assert result.timed_out and not result.passed
    assert "timed out" in result.output
    assert await eventually_gone(int((worktree / "child.pid").read_text()))


@pytest.mark.slow  # waits on a gate's process group
async def test_background_child_of_a_finished_gate_is_ended_and_does_not_block(
    worktree: Path, log_dir: Path
) -> None:
    command = "sleep 600 & echo $! > child.pid; echo done"
    result = await run_gate(gate("bg", command, timeout_s=300), worktree, log_dir, MAX_OUTPUT)
    assert (result.passed, result.timed_out) == (True, False)
    assert await eventually_gone(int((worktree / "child.pid").read_text()))


async def test_flood_of_50_mb_keeps_bounded_inline_output_and_the_full_log(
    worktree: Path, log_dir: Path
) -> None:
    size = 50 * 1024 * 1024
    command = f"head -c {size} /dev/zero | tr '\\0' x; echo; echo LAST LINE"
    tracemalloc.start()
    try:
        result = await run_gate(gate("flood", command), worktree, log_dir, MAX_OUTPUT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    full = size + len("\nLAST LINE\n")
    assert result.passed and result.output_truncated
    assert result.output_bytes == full
    assert Path(result.log_path).stat().st_size == full
    assert len(result.output.encode()) <= MAX_OUTPUT
    assert result.output.startswith("xxxx") and result.output.endswith("LAST LINE\n")
    assert "bytes omitted" in result.output and result.log_path in result.output
    assert peak < 8 * 1024 * 1024


@pytest.mark.slow  # waits on a long or hanging gate
async def test_heartbeat_is_called_while_a_long_gate_runs(worktree: Path, log_dir: Path) -> None:
    beats: list[int] = []
    await run_gate(
        gate("slow", "sleep 2.5"), worktree, log_dir, MAX_OUTPUT, lambda: beats.append(1)
    )
    assert len(beats) >= 1


async def test_gate_name_with_a_slash_keeps_its_log_inside_the_log_dir(
    worktree: Path, log_dir: Path
) -> None:
    result = await run_gate(gate("../../evil", "echo x"), worktree, log_dir, MAX_OUTPUT)
    assert Path(result.log_path).parent == log_dir


async def test_all_gates_run_after_a_failure_and_the_report_splits_required_from_optional(
    worktree: Path, log_dir: Path
) -> None:
    specs = [
        gate("build", "echo compile error; exit 2"),
        gate("lint", "echo style nit; exit 1", required=False),
        gate("test", "echo ok"),
    ]
    report = await run_gates(specs, worktree, log_dir, MAX_OUTPUT)
    assert [r.name for r in report.results] == ["build", "lint", "test"]
    assert not report.passed
    assert [r.name for r in report.required_failures] == ["build"]
    assert [r.name for r in report.optional_failures] == ["lint"]
    feedback = report.feedback_text(max_chars=2_000)
    assert "compile error" in feedback and "style nit" not in feedback
    assert "WARNING: gate 'lint'" in report.summary_text()


async def test_failed_optional_gate_alone_still_passes_the_report(
    worktree: Path, log_dir: Path
) -> None:
    specs = [gate("test", "true"), gate("lint", "false", required=False)]
    report = await run_gates(specs, worktree, log_dir, MAX_OUTPUT)
    assert report.passed and report.feedback_text() == ""


async def test_feedback_text_stays_within_its_budget_and_keeps_the_end(
    worktree: Path, log_dir: Path
) -> None:
    command = "for i in $(seq 1 500); do echo line $i; done; echo FINAL ERROR; exit 1"
    report = await run_gates([gate("t", command)], worktree, log_dir, MAX_OUTPUT)
    feedback = report.feedback_text(max_chars=600)
    assert len(feedback) <= 600
    assert "FINAL ERROR" in feedback


@pytest.mark.slow  # waits on a gate's process group
async def test_cancelled_gate_takes_its_process_group_down_with_it(
    worktree: Path, log_dir: Path
) -> None:
    command = "sleep 600 & echo $! > child.pid; sleep 600"
    running = asyncio.create_task(run_gate(gate("c", command), worktree, log_dir, MAX_OUTPUT))
    pid_file = worktree / "child.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await eventually_gone(int(pid_file.read_text()))


async def test_gate_writes_into_a_pipe_wide_enough_to_run_ahead_of_the_capture(
    worktree: Path, log_dir: Path
) -> None:
    probe = f"{sys.executable} -c 'import fcntl; print(fcntl.fcntl(1, fcntl.F_GETPIPE_SZ))'"
    result = await run_gate(gate("probe", probe), worktree, log_dir, MAX_OUTPUT)
    assert result.passed, result.output
    assert int(result.output) == PIPE_BYTES  # the kernel's default is 64 KiB


async def test_gates_leave_no_descriptor_open_in_the_worker(worktree: Path, log_dir: Path) -> None:
    await run_gate(gate("warm", "true"), worktree, log_dir, MAX_OUTPUT)
    before = sorted(os.listdir("/proc/self/fd"))
    for command in ("echo out", "echo err >&2; exit 3", "head -c 3000000 /dev/zero"):
        await run_gate(gate("g", command), worktree, log_dir, MAX_OUTPUT)
    assert sorted(os.listdir("/proc/self/fd")) == before
