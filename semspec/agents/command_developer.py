"""The ``command`` provider: an external coding-agent CLI run in the worktree plays the developer.

``claude -p``, ``aider --message {prompt}``, ``codex exec {prompt}``: the prompt goes where
``{prompt}`` stands in the command, or on stdin when it does not appear. Whatever the CLI leaves
in the worktree is the iteration's result; the task loop reads the diff from git.

The CLI runs as gates do (``semspec.core.sandbox``): the base environment plus what its role
names (``env_pass``, ``env_set``, ``api_key_env``; an unset one fails before it starts, see
``command_env``), fenced by ``gates.sandbox`` with the network on (it talks to its model), a
private home per task and its worktree's git metadata visible (``semspec.core.fence_mounts``),
and its output masked before it becomes the step's summary.

Steps: a CLI run with its machine-readable stream on (``claude -p --output-format
stream-json``, ``codex exec --json``; see ``cli_streams``) reports each model call and tool call
as it prints it, and is stopped (its process group killed) when its observer says so between
two steps. mini-swe-agent and Aider are watched the same way through a file they write as they
go (its trajectory, its LLM history; ``watched_clis``). Any other command is one tool step per
run, named after the program even behind ``env``. A run killed by a timeout or a stop still
records what it spent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from semspec.agents.cli_streams import (
    ModelStep,
    StreamParser,
    StreamStep,
    parser_for,
    stream_kind,
)
from semspec.agents.command_env import RoleEnvironment, executable_name
from semspec.agents.developer_prompt import render_task
from semspec.agents.protocol import DeveloperRequest, DeveloperResult
from semspec.agents.steps import StepObserver, StopReason
from semspec.agents.turn_meter import TurnMeter
from semspec.agents.watched_clis import WATCHED_CLIS, FileWatch, RunPlace, StepFile
from semspec.core.cgroups import make_run_cgroup
from semspec.core.config.models import SandboxMode
from semspec.core.errors import ConfigError
from semspec.core.fence_mounts import home_env, make_home
from semspec.core.masking import mask_text
from semspec.core.reasons import FallbackReason
from semspec.core.sandbox import NO_LIMITS, Address, ChildLimits, Fence, Sandbox, choose_sandbox
from semspec.model.pricing import Price
from semspec.model.providers.types import ToolCall
from semspec.vocabulary.step_text import is_wait_call

AGENT_HOMES = "agent-homes"
"""The run folder's folder of command agents' private homes, one per task."""
OUTPUT_TAIL_CHARS = 2_000
MAX_LINE_BYTES = 8 * 1024 * 1024
TAIL_BYTES = 4 * OUTPUT_TAIL_CHARS  # UTF-8 needs at most 4 bytes per character
PIPE_GRACE_S = 1.0
TRAJECTORY_POLL_S = 0.2
"""How often a watched trajectory file is read."""
"""How long output may keep arriving after the command exited."""
EXIT_POLL_S = 0.05
INSTRUCTIONS = (
    "\n\nWork in the current directory, which is a git worktree of the project. Edit files "
    "only inside it; do not commit, push or switch branches. Finish with a short summary."
)


def build_argv(command: str, prompt: str, *, field: str) -> tuple[list[str], bool]:
    """The argv to run and whether the prompt was placed in it (else it goes on stdin)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"command does not parse: {exc}", field=field) from exc
    if not argv:
        raise ConfigError("command is empty", field=field, expected="e.g. 'claude -p'")
    placed = any("{prompt}" in arg for arg in argv)
    return [arg.replace("{prompt}", prompt) for arg in argv], placed


@dataclass(frozen=True)
class CommandFencing:
    """How the command runs: the sandbox mode, the variables it gets, the folders hidden."""

    sandbox: SandboxMode = "auto"
    env_names: tuple[str, ...] = ()
    """Variables passed from the worker's environment besides the base set (``env_pass``);
    each must be set."""
    hidden: tuple[Path, ...] = field(default_factory=tuple)
    """The run folder: the database, gate logs and other tasks' worktrees."""
    env_set: tuple[tuple[str, str], ...] = ()
    """Variables set to fixed values (``env_set``)."""
    api_key_env: str | None = None
    """Its own API key variable; it must be set and not empty."""
    limits: ChildLimits = NO_LIMITS
    """``gates.limits``: rlimits of each of its processes."""
    reachable: tuple[Address, ...] = ()
    """Loopback addresses it may reach (its model server's: ``sandbox.loopback_address``)."""

    @property
    def environment(self) -> RoleEnvironment:
        """What the CLI gets from the worker's environment (see ``command_env``)."""
        return RoleEnvironment(self.env_names, self.env_set, self.api_key_env)


def agent_home(fencing: CommandFencing, sandbox: Sandbox, task_id: str) -> Path | None:
    """The task's private home for the CLI under bubblewrap, created (blocking): a folder of
    the run folder, where the worker's home would be read-only (``fence_mounts``); None when
    the CLI runs unfenced, with the worker's own home, or there is no run folder."""
    if sandbox.bwrap is None or not fencing.hidden:
        return None
    name = re.sub(r"[^A-Za-z0-9._-]", "_", task_id).lstrip(".") or "task"
    return make_home(fencing.hidden[0] / AGENT_HOMES / name)


class CommandDeveloper:
    """A ``DeveloperAgent`` running a CLI once per iteration, its process group under a timeout."""

    def __init__(
        self,
        command: str,
        *,
        timeout_s: float,
        field: str = "models.developer.command",
        fencing: CommandFencing = CommandFencing(),
        model: str | None = None,
        price: Price | None = None,
    ) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.field = field
        self.fencing = fencing
        self.model = model
        """The role's model id; a stream that names the model answering replaces it."""
        self.price = price

    async def aclose(self) -> None:
        """Nothing to release: each run's process has ended when ``develop`` returns."""

    async def develop(
        self, request: DeveloperRequest, observer: StepObserver | None = None
    ) -> DeveloperResult:
        """Run the command in ``request.worktree`` and report how it ended.

        The command is done when it exits, not when its output closes: a child it leaves in
        the background (a watcher, a daemon) may hold stdout open long after. Such leftovers
        are killed with the command's process group once it has exited, and with its cgroup
        (``semspec.core.cgroups``, where one can be made) those that left the group.
        """
        limits = self.fencing.limits
        cgroup = await asyncio.to_thread(make_run_cgroup, limits.processes, limits.memory_bytes)
        try:
            return await self._develop(request, observer, cgroup.path if cgroup else None)
        finally:
            if cgroup is not None:
                await asyncio.to_thread(cgroup.remove)

    async def _develop(
        self, request: DeveloperRequest, observer: StepObserver | None, cgroup: Path | None
    ) -> DeveloperResult:
        """``develop`` with the run's cgroup made (or None)."""
        prompt = render_task(request) + INSTRUCTIONS
        argv, placed = build_argv(self.command, prompt, field=self.field)
        environment = self.fencing.environment
        environment.check()  # before anything runs: an unset variable fails with its name
        program = executable_name(argv)
        kind = stream_kind(argv)
        # Without a stream (or a file it writes as it goes that holds its tokens) there are no
        # token counts, so no dollars: the run is unpriced, and under a dollar budget it does
        # not start unless a human accepted that.
        watched = WATCHED_CLIS.get(program) if kind is None else None
        counted = kind is not None or (watched is not None and watched.counts_tokens)
        price = self.price if counted else None
        meter = TurnMeter.for_turn("developer", observer, self.model, price, request)
        if stop := meter.stop():
            result = meter.stopped_development(stop, 0)
            if price is None and stop == "unknown_price":
                why = f"not started: {program} reports no tokens (see docs/providers.md)"
                result = replace(result, summary=f"{why}; {result.summary}")
            return result
        stream = _Stream(parser_for(kind, len(prompt)), meter) if kind is not None else None
        env = environment.child_env()
        # Under bubblewrap a missing program is only bwrap's exit 1, so look it up first; a
        # path with a slash is relative to the worktree, where the command runs.
        if "/" not in argv[0] and shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
            raise self._not_found(argv[0])
        sandbox = await asyncio.to_thread(choose_sandbox, self.fencing.sandbox)
        worktree = Path(request.worktree)
        home = await asyncio.to_thread(agent_home, self.fencing, sandbox, request.task_id)
        fence = Fence(worktree, self.fencing.hidden, True, self.fencing.reachable, home=home)
        watch: _Watcher | None = None
        if watched is not None:
            place = RunPlace(argv, worktree, env, home, sandbox.bwrap is not None)
            planned = await asyncio.to_thread(watched.plan, program, place)
            if planned is not None:
                watch = _Watcher(planned, watched.counts_tokens, meter)
        child_env = {**sandbox.env(env), **(home_env(home) if home is not None else {})}
        launch = _Launch(argv, placed, prompt, program, sandbox, fence, child_env, cgroup)
        try:
            return await self._run(launch, stream, watch, meter)
        finally:
            if watch is not None:
                await asyncio.to_thread(watch.file.close)

    async def _run(
        self, launch: _Launch, stream: _Stream | None, watch: _Watcher | None, meter: TurnMeter
    ) -> DeveloperResult:
        """Run the command and report how it ended (its file watch, if any, made)."""
        argv, placed, prompt, program = launch.argv, launch.placed, launch.prompt, launch.program
        worktree = launch.fence.worktree
        try:
            process = await asyncio.create_subprocess_exec(
                *launch.sandbox.argv(
                    argv, launch.fence, worktree, self.fencing.limits, launch.cgroup
                ),
                cwd=worktree,
                env={**launch.env, **(watch.file.env if watch is not None else {})},
                stdin=asyncio.subprocess.DEVNULL if placed else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # so a timeout can kill the agent and its children
            )
        except FileNotFoundError as exc:
            raise self._not_found(argv[0]) from exc
        stdout = stream.read(process.stdout, process.pid) if stream else _read_tail(process.stdout)
        readers = [asyncio.create_task(stdout), asyncio.create_task(_read_tail(process.stderr))]
        if not placed:
            readers.append(asyncio.create_task(_feed(process.stdin, prompt.encode("utf-8"))))
        watching = asyncio.create_task(watch.run(process.pid)) if watch is not None else None
        try:
            await asyncio.wait_for(_exited(process), self.timeout_s)
        except asyncio.CancelledError:
            # The step was stopped (a halt from the risk monitor, a cancelled task): so is the
            # agent, with everything it started.
            _kill_group(process.pid)
            await _reap(process)
            await _stop(readers)
            await self._record_killed(stream, watch, watching, meter, program, "stopped")
            raise
        except TimeoutError:
            _kill_group(process.pid)
            await _reap(process)
            await _stop(readers)
            await self._record_killed(stream, watch, watching, meter, program, "timed out")
            return DeveloperResult(
                outcome="failed",
                summary=f"{program} did not finish within {self.timeout_s:g} s",
                reason=FallbackReason.TIMEOUT.value,
                usage=meter.usage(),
            )
        # Whatever is still in the pipes arrives at once; a background child keeps them open.
        await asyncio.wait(readers, timeout=PIPE_GRACE_S)
        _kill_group(process.pid)
        await asyncio.wait(readers, timeout=PIPE_GRACE_S)
        out, err = (_result(reader) for reader in readers[:2])
        await _stop(readers)
        await _reap(process)
        text = mask_text(out.decode("utf-8", "replace"))[-OUTPUT_TAIL_CHARS:]
        if watch is not None and watching is not None:
            await watch.final(watching)
            if watch.stopped is not None:
                return meter.stopped_development(watch.stopped, 0)
        if stream is not None:
            if stream.stopped is not None:
                return meter.stopped_development(stream.stopped, 0)
            text = mask_text(stream.parser.summary or "")[-OUTPUT_TAIL_CHARS:] or text
        elif watch is None or watch.watch.seen == 0:
            run = ToolCall("run", program, {"command": self.command})
            meter.tool_step(run, text, error=process.returncode != 0, duration_ms=0.0)
            meter.unpriced = True  # the run spent tokens nobody counted
        elif not watch.counts_tokens:
            meter.unpriced = True  # its steps were seen, its tokens were not
        failed = stream is not None and stream.parser.failed
        if process.returncode == 0 and not failed:
            return DeveloperResult(outcome="submitted", summary=text.strip(), usage=meter.usage())
        stderr = mask_text(err.decode("utf-8", "replace"))[-OUTPUT_TAIL_CHARS:]
        detail = stderr.strip() or text.strip()
        return DeveloperResult(
            outcome="failed",
            summary=f"{program} exited with {process.returncode}: {detail}",
            reason=FallbackReason.TRANSPORT_ERROR.value,
            usage=meter.usage(),
        )

    async def _record_killed(
        self,
        stream: _Stream | None,
        watch: _Watcher | None,
        watching: asyncio.Task[None] | None,
        meter: TurnMeter,
        program: str,
        how: str,
    ) -> None:
        """What a run killed before its end still spent: the steps its stream held back (and
        an estimate of tokens it never reported), the steps its trajectory file holds, or,
        without either, the run as one failed step."""
        if stream is not None:
            stream.finish()
            return
        if watch is not None and watching is not None:
            await watch.final(watching)
            if watch.watch.seen:
                return
        run = ToolCall("run", program, {"command": self.command})
        meter.tool_step(run, f"{program} {how}", error=True, duration_ms=0.0)
        meter.unpriced = True

    def _not_found(self, executable: str) -> ConfigError:
        return ConfigError(
            f"executable {executable!r} not found on PATH",
            field=self.field,
            hint="install the agent CLI or give its full path",
        )


@dataclass(frozen=True)
class _Launch:
    """What one run of the command is: its argv, prompt, fence and environment."""

    argv: list[str]
    placed: bool
    """Whether the prompt is in ``argv`` (else it goes on stdin)."""
    prompt: str
    program: str
    sandbox: Sandbox
    fence: Fence
    env: dict[str, str]
    cgroup: Path | None


class _Stream:
    """A CLI's stream read line by line, each step reported as it completes."""

    def __init__(self, parser: StreamParser, meter: TurnMeter) -> None:
        self.parser = parser
        self.meter = meter
        self.stopped: StopReason | None = None
        self._started = time.perf_counter()
        self._finished = False

    def finish(self) -> None:
        """Report what the parser still holds, once (an estimate for a killed Codex run)."""
        if not self._finished:
            self._finished = True
            self._report(self.parser.finish())

    async def read(self, stream: asyncio.StreamReader | None, pid: int) -> bytes:
        """Read the stream to its end; kill the group ``pid`` leads when a step says stop.

        Returns the output's tail, the summary of a stream that never gave one.
        """
        if stream is None:
            return b""
        tail, pending = bytearray(), bytearray()
        while chunk := await stream.read(65_536):
            tail = (tail + chunk)[-TAIL_BYTES:]
            pending += chunk
            *lines, rest = pending.split(b"\n")
            # A line longer than this is no step we could use (a whole file read back).
            pending = rest if len(rest) <= MAX_LINE_BYTES else bytearray()
            for line in lines:
                self._report(self.parser.feed(line.decode("utf-8", "replace")))
            if self.stopped is None and (stop := self.meter.stop()) is not None:
                self.stopped = stop
                _kill_group(pid)
        if self.stopped is None:
            self._report(self.parser.feed(pending.decode("utf-8", "replace")))
        self.finish()  # a stopped run still counts what it spent
        return bytes(tail)

    def _report(self, steps: list[StreamStep]) -> None:
        for step in steps:
            took = (time.perf_counter() - self._started) * 1000
            self._started = time.perf_counter()
            if isinstance(step, ModelStep):
                self.meter.model = step.model or self.meter.model
                self.meter.estimated = self.meter.estimated or step.estimated
                if step.error is not None:
                    self.meter.model_failure(step.error, took)
                else:
                    self.meter.model_step(step.reply, took)
            else:
                self.meter.tool_step(
                    step.call,
                    step.output,
                    error=step.error,
                    duration_ms=took,
                    wait=is_wait_call(step.call.arguments),
                )


class _Silent:
    """A parser of no output: a watched run's steps come from its trajectory file."""

    summary: str | None = None
    failed: bool = False

    def feed(self, line: str) -> list[StreamStep]:
        return []

    def finish(self) -> list[StreamStep]:
        return []


class _Watcher:
    """A run's file (``watched_clis``) polled off the event loop, each new step reported as it
    is written; the run is killed between two steps when the meter says stop."""

    def __init__(self, file: FileWatch, counts_tokens: bool, meter: TurnMeter) -> None:
        self.file = file
        self.watch: StepFile = file.watch
        self.counts_tokens = counts_tokens
        self.meter = meter
        self.stopped: StopReason | None = None
        self._reporter = _Stream(_Silent(), meter)

    async def run(self, pid: int) -> None:
        """Poll until cancelled (the run ended) or a step says stop."""
        while self.stopped is None:
            await self._poll()
            if (stop := self.meter.stop()) is not None:
                self.stopped = stop
                _kill_group(pid)
                return
            await asyncio.sleep(TRAJECTORY_POLL_S)

    async def final(self, task: asyncio.Task[None]) -> None:
        """Stop polling and read what the run saved last (once: later calls read nothing)."""
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._reporter._report(await asyncio.to_thread(self.watch.finish))

    async def _poll(self) -> None:
        self._reporter._report(await asyncio.to_thread(self.watch.poll))


async def _exited(process: asyncio.subprocess.Process) -> int:
    """The command's exit code as soon as it exits.

    ``Process.wait()`` also waits until every copy of the stdout and stderr pipes is closed,
    which a background child can put off for ever; the return code is known before that.
    """
    while process.returncode is None:
        await asyncio.sleep(EXIT_POLL_S)
    return process.returncode


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Let asyncio finish with the process once its pipes closed (bounded: a child that left
    the process group may keep them open)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), PIPE_GRACE_S)


async def _read_tail(stream: asyncio.StreamReader | None) -> bytes:
    """Read ``stream`` to its end, keeping only the last bytes (an agent may print a lot)."""
    if stream is None:
        return b""
    tail = bytearray()
    cut = False
    while chunk := await stream.read(65_536):
        tail += chunk
        drop = max(0, len(tail) - TAIL_BYTES)
        cut = cut or drop > 0
        del tail[:drop]
    if cut:
        # The tail may start inside a credential, which masking would no longer recognise.
        start = min((i for i in (tail.find(b" "), tail.find(b"\n")) if i >= 0), default=-1)
        del tail[: start + 1 if start >= 0 else len(tail)]
    return bytes(tail)


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> bytes:
    """Write the prompt and close stdin; an agent that exits without reading it is fine."""
    if stdin is None:
        return b""
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(data)
            await stdin.drain()
    finally:
        stdin.close()
    return b""


def _result(task: asyncio.Task[bytes]) -> bytes:
    """What a reader got, or nothing when it did not finish."""
    if task.done() and not task.cancelled() and task.exception() is None:
        return task.result()
    return b""


async def _stop(tasks: list[asyncio.Task[bytes]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _kill_group(pid: int) -> None:
    """SIGKILL the process group the command leads (it and every child it left behind)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
