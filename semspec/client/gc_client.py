"""Which leftovers ``semspec gc`` may remove: those whose task or land Temporal says is over.

Each owner is described by id (strongly consistent, unlike visibility's lists): a task that runs,
waits on an escalation, or is halted is a running workflow, and nothing of it is touched. A
completed task's checkpoint branches and worktree are kept (the task's end removes them unless
it keeps them on purpose: ``--keep-checkpoints``, ``loop.keep_worktrees``); a task that failed,
was cancelled or terminated, or that Temporal does not know, left them behind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from semspec.client.task_client import state_name
from semspec.core.errors import SemspecError
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.git.leftovers import Leftover, find_leftovers, remove_leftover
from semspec.workflow.land.messages import land_workflow_id

UNKNOWN = "unknown"
"""State of an owner whose workflow Temporal does not know (removed from its history)."""


@dataclass
class Collection:
    """What gc found: removed (or, dry, would remove), and kept with the reason."""

    removed: list[Leftover] = field(default_factory=list)
    kept: list[tuple[Leftover, str]] = field(default_factory=list)


async def collect(client: Client, repo: Path, run_dir: Path, *, dry_run: bool) -> Collection:
    """Find leftovers, keep what a live owner holds, remove (unless ``dry_run``) the rest."""
    import asyncio

    items = await asyncio.to_thread(find_leftovers, repo, run_dir)
    states: dict[str, str] = {}
    result = Collection()
    for item in items:
        workflow_id = land_workflow_id(item.owner) if item.of_land else task_workflow_id(item.owner)
        if workflow_id not in states:
            states[workflow_id] = await _state(client, workflow_id)
        state = states[workflow_id]
        if state == "running":
            result.kept.append((item, f"{workflow_id} is running"))
            continue
        if item.of_land and await _lands_itself(client, item.owner, states):
            # A task that lands itself (`loop.land: auto`) runs its land in its own workflow.
            result.kept.append((item, f"{task_workflow_id(item.owner)} is running its land"))
            continue
        if item.kind == "checkpoint" and state == "completed":
            result.kept.append((item, f"{workflow_id} completed and kept its checkpoints"))
            continue
        if item.kind == "worktree" and item.registered and state == "completed":
            result.kept.append((item, f"{workflow_id} completed and kept its worktree"))
            continue
        try:
            gone = dry_run or await asyncio.to_thread(remove_leftover, repo, run_dir, item)
        except (OSError, SemspecError, pygit2.GitError) as exc:
            # One thing that cannot go (a folder made unwritable) does not stop the rest.
            result.kept.append((item, f"not removed: {exc}"))
            continue
        if gone:
            result.removed.append(item)
        else:
            result.kept.append((item, "in use"))
    return result


async def _lands_itself(client: Client, task_id: str, states: dict[str, str]) -> bool:
    """Whether the task's own workflow runs: its land scratch may be in use by it."""
    workflow_id = task_workflow_id(task_id)
    if workflow_id not in states:
        states[workflow_id] = await _state(client, workflow_id)
    return states[workflow_id] == "running"


async def _state(client: Client, workflow_id: str) -> str:
    try:
        described = await client.get_workflow_handle(workflow_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return UNKNOWN
        raise
    return state_name(described.status)
