"""The ``task.restart_on_base`` activity: a task whose approved work did not land starts again
on the base branch as it is now.

A ``retry`` answer to ``land_conflict`` or ``land_gate_failed`` (docs/landing.md) asks the
developer to make the change again where the base moved to. The task branch is moved to the
base's tip and the task's worktree checked out there (made again if it is gone), untracked
files removed; the approved change the branch held comes back as a patch, for the developer's
feedback. Blocking git work: a plain ``def`` activity on the worker's threads.

Types are evaluated here (no postponed annotations): Temporal's sandbox decodes the result from
its hints.
"""

from dataclasses import dataclass
from pathlib import Path

import pygit2
from pygit2.enums import CheckoutStrategy
from temporalio import activity

from semspec.workflow.activity_errors import activity_errors
from semspec.workflow.git.names import task_branch
from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.start_point import branch_tip
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.task.step_messages import Workspace

RESTART_ACTIVITY = "task.restart_on_base"


@dataclass(frozen=True)
class RestartInput:
    """Which task starts again, on which base, and the approved work it held."""

    task_id: str
    """The workspace key (the ``semspec/task/<id>`` branch's id)."""
    repo_path: str
    base_branch: str
    run_dir: str
    forked_from: str
    """The commit the approved work started from (the workspace's ``base_commit``)."""
    approved_commit: str
    """The approved commit that did not land; empty when none was made."""
    max_diff_bytes: int = 16_384
    """The approved change's text is cut here (it goes into the developer's prompt)."""


@dataclass(frozen=True)
class RestartStep:
    """The workspace on the base's tip, and the change that was approved before."""

    workspace: Workspace
    approved_diff: str = ""
    diff_cut: bool = False
    """The approved change was longer than ``max_diff_bytes`` and is cut."""


@activity.defn(name=RESTART_ACTIVITY)
@activity_errors
def restart_on_base(inp: RestartInput) -> RestartStep:
    """Move the task branch to the base's tip and check its worktree out there."""
    repo_path = Path(inp.repo_path)
    repo = open_repository(repo_path)
    diff, cut = _approved_diff(repo, inp)
    tip = branch_tip(repo, inp.base_branch, repo_path)
    name = task_branch(inp.task_id)
    # Forced, as a reference (a branch checked out in a worktree refuses a forced branch
    # update): the branch moves back off the approved commit, to where the base is now.
    repo.references.create(f"refs/heads/{name}", tip.id, force=True)
    info = ensure_worktree(repo_path, inp.task_id, inp.base_branch, Path(inp.run_dir) / "worktrees")
    worktree = open_repository(Path(info.path))
    # The worktree's HEAD is the branch, already at the tip: the files follow it, and what the
    # developer left untracked goes too, so the next turn starts from the base as it is.
    commit = worktree.get(tip.id)
    assert isinstance(commit, pygit2.Commit)
    worktree.checkout_tree(commit.tree, strategy=CheckoutStrategy.FORCE | _REMOVE_UNTRACKED)
    worktree.index.read_tree(commit.tree)
    worktree.index.write()
    workspace = Workspace(path=info.path, branch=info.branch, base_commit=str(tip.id))
    return RestartStep(workspace, diff, cut)


_REMOVE_UNTRACKED = CheckoutStrategy.REMOVE_UNTRACKED


def _approved_diff(repo: pygit2.Repository, inp: RestartInput) -> tuple[str, bool]:
    """The approved change as a patch (cut at ``max_diff_bytes``), and whether it was cut."""
    if not inp.approved_commit or not inp.forked_from:
        return "", False
    try:
        old = repo[inp.forked_from].peel(pygit2.Commit)
        new = repo[inp.approved_commit].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return "", False  # a commit gone (gc'd): the developer goes on without the old change
    patch = repo.diff(old, new).patch or ""
    data = patch.encode("utf-8")
    if len(data) <= inp.max_diff_bytes:
        return patch, False
    return data[: inp.max_diff_bytes].decode("utf-8", errors="ignore"), True
