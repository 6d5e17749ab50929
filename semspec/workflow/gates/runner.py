"""Run gates as shell commands in a worktree, with timeouts, heartbeats and bounded output.

Each gate runs ``/bin/sh -c <command>`` in a new session, so its process group holds everything
it starts; when the gate ends (normally, by timeout, or because the activity was cancelled) the
whole group is ended, so no grandchild outlives its gate. Under bubblewrap the group holds
bubblewrap, whose PID namespace takes the gate's processes with it.

A gate gets an allowlisted environment (``semspec.core.sandbox.child_env`` plus ``gates.env``),
runs fenced when a sandbox is in use, under ``gates.limits`` (rlimits, and a cgroup of its own
where one can be made: ``semspec.core.cgroups``), and its output is masked before it is kept;
its log file stops at ``gates.max_log_bytes``. With telemetry on, each gate is a span
(``gate <name>``) with its exit status, a child of the activity's.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from semspec.core import telemetry
from semspec.core.cgroups import RunCgroup, make_run_cgroup
from semspec.core.errors import GateError
from semspec.core.masking import mask_text
from semspec.core.run_lock import lock_path
from semspec.core.sandbox import (
    NO_LIMITS,
    SHELL,
    UNFENCED,
    ChildLimits,
    Fence,
    Sandbox,
    child_env,
)
from semspec.core.telemetry.spans import gate_span
from semspec.workflow.gates.capture import UNCAPPED, OutputCapture
from semspec.workflow.gates.go_replace import check_go_replaces
from semspec.workflow.gates.import_roots import python_import_path, python_path_env
from semspec.workflow.gates.missing_tools import refuse_missing_tools
from semspec.workflow.gates.node_links import check_node_links
from semspec.workflow.gates.output_pipe import READ_CHUNK, OutputPipe
from semspec.workflow.gates.parsers import FORMATS
from semspec.workflow.gates.process_group import end_group
from semspec.workflow.gates.reports import keep_report, report_folder
from semspec.workflow.gates.types import GateReport, GateResult, GateSpec

Heartbeat = Callable[[], None]

HEARTBEAT_INTERVAL_S = 1.0
# Exit is detected by polling returncode: on Python 3.11 Process.wait() also waits for the
# pipe to close, which a background grandchild can hold open long after the shell exited.
_POLL_S = 0.05
# After the group is ended, how long to wait for the pipe to drain before giving up on it
# (a process that escaped the group with setsid could keep it open).
_DRAIN_S = 5.0


@dataclass(frozen=True)
class GateFencing:
    """How gates run: the sandbox in use, the variables opted in, the folders hidden."""

    sandbox: Sandbox = UNFENCED
    env_names: tuple[str, ...] = ()
    """Names from ``gates.env``, given besides ``semspec.core.sandbox.BASE_ENV``."""
    hidden: tuple[Path, ...] = ()
    """Folders a fenced gate must not see (the run folder)."""
    limits: ChildLimits = NO_LIMITS
    """``gates.limits``: rlimits of each process, the cgroup's bounds."""
    max_log_bytes: int = UNCAPPED
    """``gates.max_log_bytes``: where a gate's log file stops."""
    python_path: tuple[str, ...] = ()
    """Folders put first on ``PYTHONPATH``: the worktree's import roots (``import_roots``)."""


_LIMIT_SIGNALS = {
    signal.SIGXCPU: "its CPU time (gates.limits.cpu_seconds)",
    signal.SIGXFSZ: "its file size limit (gates.limits.file_size_bytes)",
}


def working_dir_of(spec: GateSpec, worktree: Path) -> Path:
    """The directory ``spec`` runs in; GateError when it resolves outside the worktree."""
    root = Path(os.path.realpath(worktree))
    target = Path(os.path.realpath(root / spec.working_dir))
    if target != root and root not in target.parents:
        raise GateError(
            f"working_dir {spec.working_dir!r} resolves to {target}, outside the worktree {root}",
            gate=spec.name,
            hint="set the gate's working_dir to a directory inside the repository",
        )
    return target


def log_file_name(gate_name: str) -> str:
    """A file name for the gate's log that cannot leave the log directory."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", gate_name).lstrip(".") + ".log"


async def run_gate(
    spec: GateSpec,
    worktree: Path,
    log_dir: Path,
    max_output_bytes: int,
    heartbeat: Heartbeat | None = None,
    fencing: GateFencing = GateFencing(),
) -> GateResult:
    """Run one gate to completion or timeout and report how it went; never raises for a failure.

    Raises GateError when the gate's working_dir escapes the worktree, ConfigError when it asks
    for network and agent code cannot get one off this machine's loopback here.
    """
    cwd = working_dir_of(spec, worktree)
    log_path = log_dir / log_file_name(spec.name)
    fmt = FORMATS.get(spec.format)
    report = fmt.report if fmt else None
    report_dir = await asyncio.to_thread(report_folder, log_dir) if report else None
    writable = (report_dir,) if report_dir else ()
    fence = Fence(worktree, fencing.hidden, spec.network, writable=writable)
    if spec.network:
        fencing.sandbox.require_network()
    env = fencing.sandbox.env(child_env(fencing.env_names))
    env = python_path_env(env, fencing.python_path)
    if report and report_dir:
        env = report.env(env, report_dir)
    limits = fencing.limits
    started = time.monotonic()
    cgroup = await asyncio.to_thread(make_run_cgroup, limits.processes, limits.memory_bytes)
    try:
        argv = fencing.sandbox.argv(
            [SHELL, "-c", spec.command, *((SHELL, *spec.args) if spec.args else ())],
            fence,
            cwd,
            limits,
            cgroup.path if cgroup else None,
            lock=lock_path(str(worktree)),
        )
        capture_to = OutputCapture(
            log_path, max_output_bytes, fencing.max_log_bytes, secret_names=fencing.env_names
        )
        with capture_to as capture:
            exit_code, timed_out = await _execute(spec, argv, env, cwd, capture, heartbeat)
            if (note := await _limits_note(exit_code, limits, cgroup)) is not None:
                capture.write(note.encode())
    finally:
        if cgroup is not None:
            await asyncio.to_thread(cgroup.remove)
        kept = ""
        if report and report_dir:
            kept = await asyncio.to_thread(keep_report, report, report_dir, log_path)
    duration_ms = (time.monotonic() - started) * 1000
    gate_span(
        telemetry.current(),
        gate=spec.name,
        required=spec.required,
        exit_code=exit_code,
        timed_out=timed_out,
        duration_ms=duration_ms,
    )
    return GateResult(
        name=spec.name,
        command=mask_text(spec.command),
        required=spec.required,
        passed=exit_code == 0 and not timed_out,
        exit_code=exit_code,
        duration_ms=duration_ms,
        timed_out=timed_out,
        output=capture.text(),
        output_truncated=capture.truncated,
        output_bytes=capture.total_bytes,
        log_path=str(capture.log_path),
        report_path=kept,
    )


async def run_gates(
    specs: list[GateSpec],
    worktree: Path,
    log_dir: Path,
    max_output_bytes: int,
    heartbeat: Heartbeat | None = None,
    fencing: GateFencing = GateFencing(),
) -> GateReport:
    """Run every gate in order, including those after a failure, so the reviewer sees all.

    First, Python gates are made to import the worktree's code (``import_roots``), and a Go
    ``replace`` or a Node ``node_modules`` link into the user's checkout is refused
    (``go_replace``, ``node_links``); after, a gate whose program is missing is a GateError
    (``missing_tools``), not a failure.
    """
    if specs:
        env = fencing.sandbox.env(child_env(fencing.env_names))
        first = specs[0].name
        folders = [spec.working_dir for spec in specs]
        path = await python_import_path(
            worktree, fencing.sandbox, env, fencing.hidden, first, folders
        )
        fencing = replace(fencing, python_path=path)
        await asyncio.to_thread(check_go_replaces, worktree, first)
        await asyncio.to_thread(check_node_links, worktree, first)
    results = [
        await run_gate(spec, worktree, log_dir, max_output_bytes, heartbeat, fencing)
        for spec in specs
    ]
    refuse_missing_tools(results)
    return GateReport(results=results)


async def _limits_note(
    exit_code: int | None, limits: ChildLimits, cgroup: RunCgroup | None
) -> str | None:
    """A line saying which of ``gates.limits`` the gate ran into, when it did."""
    hit: list[str] = []
    if cgroup is not None:
        for name in await asyncio.to_thread(cgroup.limits_hit):
            if name == "processes":
                hit.append(f"its process limit (gates.limits.processes = {limits.processes})")
            else:
                hit.append(f"its memory limit (gates.limits.memory_bytes = {limits.memory_bytes})")
    if exit_code is not None:
        for sig, what in _LIMIT_SIGNALS.items():
            if exit_code in (128 + sig, -sig):
                hit.append(what)
    if not hit:
        return None
    return f"\nsemspec: the gate ran into {' and '.join(hit)}\n"


async def _execute(
    spec: GateSpec,
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    capture: OutputCapture,
    heartbeat: Heartbeat | None,
) -> tuple[int | None, bool]:
    """Start the command and supervise it; returns (exit code or None, timed out)."""
    if not cwd.is_dir():
        capture.write(
            f"semspec: gate not started: working directory {cwd} does not exist\n".encode()
        )
        return None, False
    pipe = OutputPipe()  # wide and read in large chunks: output streams at pipe speed
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=pipe.write_fd,
            stderr=pipe.write_fd,
            start_new_session=True,
        )
    except OSError as exc:
        pipe.close()
        capture.write(f"semspec: gate not started: {exc}\n".encode())
        return None, False
    pipe.close_write()  # the gate's processes hold the only writing ends: EOF is their end
    try:
        reader = asyncio.create_task(_pump(await pipe.reader(), capture))
        try:
            timed_out = await _wait_for_exit(process, spec.timeout_s, heartbeat)
        finally:
            # Also on cancellation: the group must not outlive the activity that started it.
            await end_group(process.pid)
            await _finish_reader(reader)
            await _reaped(process)
    finally:
        pipe.close()
    if timed_out:
        capture.write(
            f"\nsemspec: gate timed out after {spec.timeout_s:g}s and was killed\n".encode()
        )
    return process.returncode, timed_out


async def _wait_for_exit(
    process: asyncio.subprocess.Process, timeout_s: float, heartbeat: Heartbeat | None
) -> bool:
    """Wait until the shell exits or ``timeout_s`` passes; True on timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    next_beat = loop.time() + HEARTBEAT_INTERVAL_S
    # wait() wakes us at once in the usual case; the returncode poll covers a held pipe.
    exited = asyncio.ensure_future(process.wait())
    try:
        while process.returncode is None:
            now = loop.time()
            if now >= deadline:
                return True
            if heartbeat is not None and now >= next_beat:
                heartbeat()
                next_beat = now + HEARTBEAT_INTERVAL_S
            await asyncio.wait({exited}, timeout=min(_POLL_S, deadline - now))
        return False
    finally:
        exited.cancel()


async def _reaped(process: asyncio.subprocess.Process) -> None:
    """Wait (bounded) until the child watcher has collected the shell's exit status."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _DRAIN_S
    while process.returncode is None and loop.time() < deadline:
        await asyncio.sleep(_POLL_S)


async def _pump(stream: asyncio.StreamReader, capture: OutputCapture) -> None:
    while chunk := await stream.read(READ_CHUNK):
        capture.write(chunk)


async def _finish_reader(reader: asyncio.Task[None]) -> None:
    """Let the reader drain what is left in the pipe, but not wait forever for EOF."""
    done, _ = await asyncio.wait({reader}, timeout=_DRAIN_S)
    if not done:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        return
    error = reader.exception()
    if error is not None:
        raise error
