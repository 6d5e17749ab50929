"""A gate that hangs on its first runs, for tests that stop a running step.

The gate's shell writes its pid to ``<dir>/gate-<n>.pid`` (n counts its runs) and, for the first
``slow_runs`` runs, turns into a long ``sleep``; later runs pass at once. A test waits for the
pid file (the gate is running), sends its signal, and afterwards checks that the process is gone.
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

from semspec.workflow.gates.types import GateSpec

SLEEP_S = 600
"""How long a slow run would take if nothing stopped it: far beyond any test's patience."""


def slow_gate_command(folder: Path, slow_runs: int = 1) -> str:
    """The shell command of the gate (paths quoted for ``/bin/sh -c``)."""
    counter = shlex.quote(str(folder / "gate-runs"))
    pid_prefix = shlex.quote(str(folder / "gate-"))
    return (
        f"n=$(cat {counter} 2>/dev/null || echo 0); echo $((n + 1)) > {counter}; "
        f'echo $$ > {pid_prefix}"$n".pid.tmp && mv {pid_prefix}"$n".pid.tmp {pid_prefix}"$n".pid; '
        f'if [ "$n" -lt {slow_runs} ]; then exec sleep {SLEEP_S}; fi'
    )


def slow_gate(folder: Path, slow_runs: int = 1, name: str = "slow") -> GateSpec:
    """The gate as the workflow takes it (required, with a timeout beyond ``SLEEP_S``)."""
    folder.mkdir(parents=True, exist_ok=True)
    return GateSpec(name, slow_gate_command(folder, slow_runs), True, SLEEP_S * 2.0, ".")


def pid_file(folder: Path, run: int = 0) -> Path:
    """Where run ``run`` (0 = the first) of the gate writes its pid."""
    return folder / f"gate-{run}.pid"


async def gate_pid(folder: Path, run: int = 0, timeout_s: float = 60.0) -> int:
    """The pid of run ``run`` of the gate once it has started (bounded wait)."""
    path = pid_file(folder, run)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not path.exists():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"gate run {run} never started ({path} missing)")
        await asyncio.sleep(0.05)
    return int(path.read_text(encoding="utf-8"))


def is_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z"
