"""The ``command`` provider: an external coding-agent CLI run in the worktree plays the developer.

``claude -p``, ``aider --message {prompt}``, ``codex exec {prompt}``: the prompt goes where
``{prompt}`` stands in the command, or on stdin when it does not appear. Whatever the CLI leaves
in the worktree is the iteration's result; the task loop reads the diff from git.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal

from agents.developer_prompt import render_task
from agents.protocol import DeveloperRequest, DeveloperResult
from semspec.errors import ConfigError
from semspec.logging import mask_text
from vocabulary.reasons import FallbackReason

OUTPUT_TAIL_CHARS = 2_000
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


class CommandDeveloper:
    """A ``DeveloperAgent`` running a CLI once per iteration, its process group under a timeout."""

    def __init__(
        self, command: str, *, timeout_s: float, field: str = "models.developer.command"
    ) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.field = field

    async def develop(self, request: DeveloperRequest) -> DeveloperResult:
        """Run the command in ``request.worktree`` and report how it ended."""
        prompt = render_task(request) + INSTRUCTIONS
        argv, placed = build_argv(self.command, prompt, field=self.field)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=request.worktree,
                stdin=asyncio.subprocess.DEVNULL if placed else asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # so a timeout can kill the agent and its children
            )
        except FileNotFoundError as exc:
            raise ConfigError(
                f"executable {argv[0]!r} not found on PATH",
                field=self.field,
                hint="install the agent CLI or give its full path",
            ) from exc
        stdin = None if placed else prompt.encode("utf-8")
        try:
            out, err = await asyncio.wait_for(process.communicate(stdin), self.timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            return DeveloperResult(
                outcome="failed",
                summary=f"{argv[0]} did not finish within {self.timeout_s:g} s",
                reason=FallbackReason.TIMEOUT.value,
            )
        stdout = mask_text(out.decode("utf-8", "replace"))[-OUTPUT_TAIL_CHARS:]
        if process.returncode == 0:
            return DeveloperResult(outcome="submitted", summary=stdout.strip())
        stderr = mask_text(err.decode("utf-8", "replace"))[-OUTPUT_TAIL_CHARS:]
        detail = stderr.strip() or stdout.strip()
        return DeveloperResult(
            outcome="failed",
            summary=f"{argv[0]} exited with {process.returncode}: {detail}",
            reason=FallbackReason.TRANSPORT_ERROR.value,
        )
