"""Gates run under bounds (``gates.limits``, ``gates.max_log_bytes``): a fork bomb, a memory bomb,
a CPU burner, a file filler and a flood of output each end the gate (failed, with a line naming
the limit where the kernel tells us which) and not the machine; a daemon that left the gate's
process group ends with the gate's cgroup. The limits here are low, so the bombs stay small.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from semspec.agents.command_developer import CommandDeveloper, CommandFencing
from semspec.agents.protocol import DeveloperRequest
from semspec.core.cgroups import make_run_cgroup
from semspec.core.config.models import GatesConfig
from semspec.core.errors import ConfigError
from semspec.core.sandbox import (
    LAUNCHER,
    SHELL,
    UNFENCED,
    ChildLimits,
    Fence,
    Sandbox,
    choose_sandbox,
)
from semspec.workflow.gates import GateFencing, GateResult, GateSpec, run_gate
from tests.fakes.llm_task import APPROVE, NEW_CALC
from tests.security.conftest import SYSTEM_PYTHON, ForeignUser
from tests.support.stack import Stack, check_gate, running_stack, sample_config

# Every gate here runs fenced under bubblewrap, most until a limit stops it.
pytestmark = pytest.mark.slow

MAX_OUTPUT = 4_096
LOW = ChildLimits(processes=64, memory_bytes=512 * 1024**2, file_size_bytes=1024**2, cpu_seconds=1)


@pytest.fixture(scope="module")
def bwrap() -> Sandbox:
    try:
        return choose_sandbox("bwrap")
    except ConfigError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the gate limit tests must run under CI: {exc.message}")
        pytest.skip(exc.message)


@pytest.fixture(scope="module")
def cgroups() -> None:
    """A cgroup can be made here (root on cgroup v1, or a delegated cgroup v2 subtree)."""
    probe = make_run_cgroup(8, 0)
    if probe is None:
        pytest.skip("no cgroup with a pids controller can be made here")
    probe.remove()


async def run(
    command: str,
    tmp_path: Path,
    sandbox: Sandbox,
    limits: ChildLimits = LOW,
    *,
    timeout_s: float = 20.0,
    max_log_bytes: int = 64 * 1024**2,
) -> GateResult:
    worktree = tmp_path / "worktree"
    worktree.mkdir(exist_ok=True)
    fencing = GateFencing(sandbox, limits=limits, max_log_bytes=max_log_bytes)
    spec = GateSpec("bounded", command, True, timeout_s, ".")
    return await run_gate(spec, worktree, tmp_path / "logs", MAX_OUTPUT, None, fencing)


FORK_BOMB = "while :; do sleep 60 & done"
"""Processes without end: each loop leaves one more behind."""


async def test_a_fork_bomb_ends_the_gate_at_its_process_limit_not_the_machine(
    bwrap: Sandbox, cgroups: None, tmp_path: Path
) -> None:
    result = await run(FORK_BOMB, tmp_path, bwrap, timeout_s=4.0)

    assert not result.passed
    assert "ran into its process limit (gates.limits.processes = 64)" in result.output
    # Nothing of the bomb is left (its PID namespace takes a moment to empty).
    deadline = time.monotonic() + 10
    while bomb_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert bomb_processes() == []


def bomb_processes() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"sleep\x0060\x00" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


MEMORY_BOMB = "held = [bytearray(64 << 20) for _ in range(24)]; print('HELD 1.5 GB')"


async def test_a_memory_bomb_fails_the_gate_at_its_memory_limit(
    bwrap: Sandbox, tmp_path: Path
) -> None:
    result = await run(f'{sys.executable} -c "{MEMORY_BOMB}"', tmp_path, bwrap)

    assert not result.passed
    assert "MemoryError" in result.output
    assert "HELD" not in result.output


async def test_a_cpu_burner_is_stopped_at_its_cpu_time_with_a_reason(
    bwrap: Sandbox, tmp_path: Path
) -> None:
    result = await run(f"{sys.executable} -c 'while True: pass'", tmp_path, bwrap)

    assert not result.passed and not result.timed_out
    assert "ran into its CPU time (gates.limits.cpu_seconds)" in result.output


async def test_a_file_filler_is_stopped_at_its_file_size_limit_with_a_reason(
    bwrap: Sandbox, tmp_path: Path
) -> None:
    result = await run("head -c 5000000 /dev/zero > big; exit $?", tmp_path, bwrap)

    assert not result.passed
    assert "ran into its file size limit (gates.limits.file_size_bytes)" in result.output
    assert (tmp_path / "worktree" / "big").stat().st_size <= LOW.file_size_bytes


async def test_a_flood_of_output_leaves_a_capped_log_that_says_it_was_cut(
    tmp_path: Path,
) -> None:
    flood = f"{sys.executable} -c \"print(('x' * 99 + chr(10)) * 30_000, end='')\""

    result = await run(flood, tmp_path, UNFENCED, max_log_bytes=1_000_000)

    log = Path(result.log_path).read_bytes()
    assert result.passed and result.output_bytes == 3_000_000
    assert log.startswith(b"x" * 99 + b"\n")
    body, marker = log[:1_000_000], log[1_000_000:].decode()
    assert set(body) == {ord("x"), ord("\n")}
    assert marker == (
        "\n[semspec: log cut at 1000000 bytes (gates.max_log_bytes); "
        "2000000 more bytes of output were not written]\n"
    )


async def test_an_unfenced_gates_daemon_that_left_its_process_group_ends_with_the_gate(
    cgroups: None, tmp_path: Path
) -> None:
    # Unfenced there is no PID namespace; the cgroup still holds what the gate started.
    command = "setsid sh -c 'while :; do date +%s%N > tick; sleep 0.05; done' & sleep 0.5"

    result = await run(command, tmp_path, UNFENCED)
    tick = tmp_path / "worktree" / "tick"
    first = tick.read_text(encoding="utf-8")
    time.sleep(0.5)

    assert result.passed, result.output
    assert tick.read_text(encoding="utf-8") == first


async def test_limits_zero_are_off_and_a_gate_within_them_passes(
    bwrap: Sandbox, tmp_path: Path
) -> None:
    within = await run("echo fine", tmp_path, bwrap)
    off = await run(
        f'{sys.executable} -c "{MEMORY_BOMB}"', tmp_path, bwrap, ChildLimits(processes=64)
    )

    assert within.passed and within.output.strip() == "fine"
    assert off.passed and "HELD 1.5 GB" in off.output


def test_the_config_defaults_bound_every_gate() -> None:
    limits = ChildLimits.of(GatesConfig().limits)

    assert limits == ChildLimits(1024, 16 * 1024**3, 2 * 1024**3, 7200)
    assert GatesConfig().max_log_bytes == 64 * 1024**2


async def test_a_command_agent_runs_under_the_same_limits(bwrap: Sandbox, tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / "agent.py").write_text(MEMORY_BOMB.replace("; ", "\n"), encoding="utf-8")
    fencing = CommandFencing("bwrap", limits=LOW)
    request = DeveloperRequest(
        task_id="t1",
        title="Bomb",
        description="Allocate.",
        criteria=[],
        task_files=[],
        worktree=str(worktree),
        iteration=1,
    )

    agent = CommandDeveloper(f"{sys.executable} agent.py", timeout_s=30, fencing=fencing)
    result = await agent.develop(request)

    assert result.outcome == "failed"
    assert "MemoryError" in result.summary


def test_a_fork_bomb_of_a_worker_without_root_ends_at_its_process_limit(
    bwrap: Sandbox, foreign_user: ForeignUser
) -> None:
    # Not root, RLIMIT_NPROC holds even where no cgroup can be made. The launcher runs as
    # the other user with the system Python, as that user's worker would start it.
    home = foreign_user.home / "limits"
    worktree = home / "worktree"
    worktree.mkdir(parents=True)
    for name in ("fence_launch.py", "fence_network.py", "fence_forward.py", "parent_watch.py"):
        shutil.copy(Path(LAUNCHER).with_name(name), home / name)
    for path in [home, worktree, *home.iterdir()]:
        shutil.chown(path, user="nobody")
    counting = "n=0; while :; do sleep 60 & n=$((n+1)); echo $n > started; done"
    argv = bwrap.argv([SHELL, "-c", counting], Fence(worktree), worktree, ChildLimits(32))
    launch = [SYSTEM_PYTHON, "-I", "-S", str(home / "fence_launch.py"), argv[-1]]

    done = foreign_user.run(launch, timeout=60)

    assert done.returncode == 2, done.stderr  # the shell's answer to a fork that failed
    assert "Cannot fork" in done.stderr
    assert int((worktree / "started").read_text(encoding="ascii")) < 32


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("limits"), sample_config([check_gate()])) as s:
        yield s


def test_the_stacks_worker_applies_the_repositorys_gate_limits_and_log_cap(
    stack: Stack, bwrap: Sandbox
) -> None:
    flood = f"{sys.executable} -c \"print(('x' * 99 + chr(10)) * 30_000, end='')\""
    burner = f"{sys.executable} -c 'while True: pass'"
    gates = {
        "preset": "none",
        "sandbox": "bwrap",
        "max_log_bytes": 1_000_000,
        "limits": {"cpu_seconds": 1},
        "additional": [
            {"name": "flood", "command": flood, "required": False},
            {"name": "burner", "command": burner, "required": False, "timeout": 60},
        ],
    }
    repo = stack.sibling_repo("limits", {"gates": gates})
    task_id = f"limits-{uuid.uuid4().hex[:8]}"
    iterations = [{"developer": {"write": {"calc.py": NEW_CALC}}, "reviewer": APPROVE}]

    done = stack.submit_scripted(task_id, iterations, "--wait", "--json", repo=repo)

    assert done.returncode == 0, done.stdout + done.stderr
    logs = stack.root / "limits" / "run" / "logs" / task_id
    (flood_log,) = logs.rglob("flood.log")
    (burner_log,) = logs.rglob("burner.log")
    assert flood_log.stat().st_size < 1_000_200
    assert flood_log.read_text(encoding="utf-8").endswith(
        "2000000 more bytes of output were not written]\n"
    )
    assert "ran into its CPU time (gates.limits.cpu_seconds)" in burner_log.read_text("utf-8")


async def test_a_command_agents_daemon_that_left_its_process_group_ends_with_the_agent(
    cgroups: None, tmp_path: Path
) -> None:
    # Unfenced (no PID namespace), a process in its own session outlives the process group;
    # the agent's cgroup still holds it.
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    agent = "setsid sh -c 'while :; do date +%s%N > tick; sleep 0.05; done' & sleep 0.5"
    (worktree / "agent.sh").write_text(agent, encoding="utf-8")
    fencing = CommandFencing("none", limits=LOW)
    request = DeveloperRequest(
        task_id="t1",
        title="Daemon",
        description="Leave a daemon.",
        criteria=[],
        task_files=[],
        worktree=str(worktree),
        iteration=1,
    )

    result = await CommandDeveloper("sh agent.sh", timeout_s=30, fencing=fencing).develop(request)
    first = (worktree / "tick").read_text(encoding="utf-8")
    time.sleep(0.5)

    assert result.outcome == "submitted", result.summary
    assert (worktree / "tick").read_text(encoding="utf-8") == first
