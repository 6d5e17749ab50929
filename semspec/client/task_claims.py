"""Which earlier tasks a new task waits for: the claims folder of the run dir.

Every task submitted with declared files leaves a claim, ``<run dir>/claims/<task id>.json``
(its files, repository, base branch and place in the order). A submit takes an exclusive
``flock`` on ``<run dir>/claims.lock``, drops the claims of tasks that no longer run (asked of
Temporal by id, ``waited_tasks``), names the remaining tasks whose files overlap its own in
``TaskInput.wait_for`` (in submission order), starts the workflow with that signed input,
writes its own claim and lets go. The task then waits until each of those has finished and,
when approved, landed (``task/loop/waiting.py``). Submits
that run at once are so put in one order, and a task started a moment ago counts although
Temporal's lists may not show it yet (docs/landing.md, "Waiting for overlapping tasks").

Claims are plain JSON a local user could edit: a claim that cannot be read is skipped, never
trusted, and only regular files are opened. The claims are a courtesy to avoid a known
collision, not a security boundary; the monitor's conflict rule still guards the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client

from semspec.workflow.plan.messages import PlanInput, PlanTask
from semspec.workflow.task.messages import TaskInput
from semspec.workflow.task.waited_tasks import waited_state

CLAIMS_DIR = "claims"
LOCK_FILE = "claims.lock"
MAX_CLAIM_BYTES = 64 * 1024
"""A claim is a few hundred bytes; a larger file is not one of ours."""

T = TypeVar("T")


@dataclass(frozen=True)
class Claim:
    """A submitted task's declared files, as the tasks submitted after it see them."""

    task_id: str
    files: list[str]
    repo: str
    base_branch: str
    order: int
    plan_id: str = ""
    """The plan of a plan task: until the plan starts it, Temporal does not know it."""


def claim_of(inp: TaskInput, order: int) -> Claim:
    """The claim ``inp`` leaves, ``order``-th in its run dir."""
    spec = inp.spec
    files = list(spec.task_files)
    return Claim(spec.task_id, files, spec.repo_path, spec.base_branch, order, spec.plan_id or "")


def overlapping(claims: list[Claim], inp: TaskInput) -> list[str]:
    """Ids of the claims, in order, on ``inp``'s repository and base branch that declare one
    of its files."""
    spec = inp.spec
    mine = set(spec.task_files)
    return [
        c.task_id
        for c in sorted(claims, key=lambda c: c.order)
        if c.task_id != spec.task_id
        and c.repo == spec.repo_path
        and c.base_branch == spec.base_branch
        and mine & set(c.files)
    ]


async def start_claimed(
    client: Client, inp: TaskInput, start: Callable[[TaskInput], Awaitable[T]]
) -> T:
    """``start(inp)`` with ``wait_for`` naming the live earlier tasks on the same files, and
    the task's claim written once it started. Without a run dir or declared files, ``start``
    as it is."""
    if not inp.run_dir or not inp.spec.task_files:
        return await start(inp)
    run_dir = Path(inp.run_dir)
    lock = await asyncio.to_thread(_lock, run_dir)
    try:
        live = await _live_claims(client, run_dir)
        waits = overlapping(live, inp)
        claimed = replace(inp, wait_for=waits) if waits else inp
        started = await start(claimed)
        order = max((c.order for c in live), default=0) + 1
        await asyncio.to_thread(_write, run_dir, claim_of(claimed, order))
        return started
    finally:
        await asyncio.to_thread(os.close, lock)


async def start_plan_claimed(
    client: Client, inp: PlanInput, start: Callable[[PlanInput], Awaitable[T]]
) -> T:
    """``start(inp)`` with each plan task's ``wait_for`` naming the live earlier tasks and the
    earlier tasks of the plan on its files (its own dependencies, direct or not, left out: it
    already starts from their work), and a claim per plan task written once the plan started."""
    run_dirs = {t.input.run_dir for t in inp.tasks if t.input.run_dir}
    if len(run_dirs) != 1:
        return await start(inp)
    run_dir = Path(run_dirs.pop())
    lock = await asyncio.to_thread(_lock, run_dir)
    try:
        live = await _live_claims(client, run_dir)
        order = max((c.order for c in live), default=0)
        tasks: list[PlanTask] = []
        earlier: list[Claim] = []
        for task in inp.tasks:
            ancestors = _ancestors(inp, task.input.spec.task_id)
            siblings = [c for c in earlier if c.task_id not in ancestors]
            waits = overlapping([*live, *siblings], task.input)
            task_input = replace(task.input, wait_for=waits) if waits else task.input
            tasks.append(replace(task, input=task_input))
            order += 1
            if task_input.spec.task_files:
                earlier.append(claim_of(task_input, order))
        started = await start(replace(inp, tasks=tasks))
        for claim in earlier:
            await asyncio.to_thread(_write, run_dir, claim)
        return started
    finally:
        await asyncio.to_thread(os.close, lock)


def _ancestors(inp: PlanInput, task_id: str) -> set[str]:
    """The plan tasks ``task_id`` depends on, directly or through others."""
    needs = {t.input.spec.task_id: t.depends_on for t in inp.tasks}
    found: set[str] = set()
    todo = list(needs.get(task_id, []))
    while todo:
        dep = todo.pop()
        if dep not in found:
            found.add(dep)
            todo += needs.get(dep, [])
    return found


async def _live_claims(client: Client, run_dir: Path) -> list[Claim]:
    """The run dir's claims of tasks still running (or yet to be started by their plan), in
    order; the others are removed. A task that already ended is not waited for, even when its
    approved work has not landed: it is no longer active, so it cannot collide with a new task
    (its land rebases or reports a conflict), and nothing would end a wait on work its user
    may never land."""
    live: list[Claim] = []
    for claim in await asyncio.to_thread(read_claims, run_dir):
        plan_id = claim.plan_id
        state = await waited_state(
            client, claim.task_id, Path(claim.repo), claim.base_branch, plan_id
        )
        if state.closed:
            await asyncio.to_thread(_remove, run_dir, claim.task_id)
        else:
            live.append(claim)
    return live


def _lock(run_dir: Path) -> int:
    """An exclusive flock on the run dir's claims lock (blocks while another submit holds it)."""
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_claims(run_dir: Path) -> list[Claim]:
    """The readable claims of the run dir, in submission order."""
    folder = run_dir / CLAIMS_DIR
    if not folder.is_dir():
        return []
    found = [claim for path in sorted(folder.glob("*.json")) if (claim := _read(path))]
    return sorted(found, key=lambda c: c.order)


def _read(path: Path) -> Claim | None:
    with contextlib.suppress(OSError, ValueError, TypeError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not _is_regular(handle.fileno()):
                return None
            raw = json.loads(handle.read(MAX_CLAIM_BYTES + 1)[:MAX_CLAIM_BYTES])
        claim = Claim(**raw)
        strings = [claim.task_id, claim.repo, claim.base_branch, claim.plan_id, *claim.files]
        fine = all(isinstance(s, str) for s in strings) and type(claim.order) is int
        if fine and isinstance(claim.files, list) and path.stem == claim.task_id:
            return claim
    return None


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _write(run_dir: Path, claim: Claim) -> None:
    folder = run_dir / CLAIMS_DIR
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = folder / f".{claim.task_id}.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(claim), handle)
    os.replace(tmp, folder / f"{claim.task_id}.json")


def _remove(run_dir: Path, task_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (run_dir / CLAIMS_DIR / f"{task_id}.json").unlink()
