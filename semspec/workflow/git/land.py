"""Landing an approved task branch on its base branch, with pygit2 only (docs/landing.md).

Three steps, so the gates can run between them on exactly what will land:

1. ``prepare_land`` computes the commit the base branch would move to, writing objects only (no
   ref, no index, no working file changes): the task tip itself when the base has not moved
   (fast-forward), else the task's commits replayed on the current base (``rebase``, the
   default) or one merge commit (``merge``). A conflict names the files and moves nothing.
2. The caller runs the required gates on that commit in a scratch worktree
   (``open_scratch`` / ``close_scratch``), never in the user's checkout.
3. ``move_base`` moves the base ref from the commit the gates saw to the new one as a
   compare-and-swap under git's own ref lock: if anyone moved the base meanwhile, nothing
   changes and the land is tried again on the new base. A checkout that has the base branch
   checked out is updated in the same locked step when it is clean; when it is dirty the land
   is refused, since moving the ref under modified files would leave that checkout half-changed.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import CheckoutStrategy, SortMode

from semspec.core.errors import GitError, InputError
from semspec.workflow.git.names import SEMSPEC_AUTHOR, task_branch, validate_task_id
from semspec.workflow.git.repository import open_repository
from semspec.workflow.git.start_point import branch_tip

LAND_BRANCH_PREFIX = "semspec/land/"
"""Scratch branches a land's gates run on; removed after each land (``semspec gc`` too)."""
STRATEGIES = ("rebase", "merge")


@dataclass
class LandPlan:
    """What ``prepare_land`` found: how the task would land and on top of which base commit."""

    task_id: str
    base_branch: str
    base_commit: str
    """The base tip the plan was made on; ``move_base`` moves the ref only from this commit."""
    new_commit: str = ""
    """The commit the base moves to; empty when nothing lands (conflict or already landed)."""
    method: str = ""
    """``fast-forward``, ``rebase``, ``merge``, or ``already-landed``."""
    conflicts: list[str] = field(default_factory=list)
    """Files that conflict between the task's change and the base; non-empty: no land."""

    @property
    def needs_gates(self) -> bool:
        """Whether the result differs from what the task's own gates saw at approval."""
        return self.method in STRATEGIES


@dataclass
class BaseMove:
    """What ``move_base`` did: whether the ref moved, and what happened to a checkout on it."""

    moved: bool
    checkout: str = ""
    """Path of the checkout that was updated along with the ref; empty when none has the base."""
    base_now: str = ""
    """The base tip after the call (the new commit, or whatever moved it meanwhile)."""


def prepare_land(repo_path: Path, task_id: str, base_branch: str, strategy: str) -> LandPlan:
    """Plan landing ``semspec/task/<task_id>`` on ``base_branch`` (see the module docstring)."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown land strategy {strategy!r}", hint="use rebase or merge")
    repo = open_repository(repo_path)
    base = branch_tip(repo, base_branch, repo_path)
    task = _task_tip(repo, task_id, repo_path)
    plan = LandPlan(task_id=task_id, base_branch=base_branch, base_commit=str(base.id))
    if task.id == base.id or repo.descendant_of(base.id, task.id):
        plan.method = "already-landed"
        return plan
    if repo.descendant_of(task.id, base.id):
        plan.method, plan.new_commit = "fast-forward", str(task.id)
        return plan
    plan.method = strategy
    if strategy == "merge":
        new, conflicts = _merge(repo, base, task)
    else:
        new, conflicts = _rebase(repo, base, task)
    plan.conflicts = conflicts
    plan.new_commit = str(new) if new is not None and new != base.id else ""
    if not conflicts and not plan.new_commit:
        # Every change of the task is already on the base (landed by other means).
        plan.method = "already-landed"
    return plan


def open_scratch(repo_path: Path, task_id: str, commit_id: str, scratch_root: Path) -> Path:
    """A worktree at ``scratch_root/<task_id>`` on a scratch branch at ``commit_id``.

    A leftover of an earlier land of the same task (crash) is removed first.
    """
    close_scratch(repo_path, task_id, scratch_root)
    repo = open_repository(repo_path)
    commit = repo.get(commit_id)
    assert isinstance(commit, pygit2.Commit)
    branch = repo.branches.local.create(LAND_BRANCH_PREFIX + task_id, commit, force=True)
    path = (scratch_root / validate_task_id(task_id)).absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.add_worktree(_scratch_name(task_id), str(path), branch)
    return path


def close_scratch(repo_path: Path, task_id: str, scratch_root: Path) -> None:
    """Remove the land's scratch worktree and branch; nothing to remove is fine.

    Only ``scratch_root/<task_id>`` is deleted, never the path the registration names: the
    gates that ran there could write the scratch worktree's own git folder.
    """
    repo = open_repository(repo_path)
    name = _scratch_name(task_id)
    path = scratch_root / validate_task_id(task_id)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    if name in repo.list_worktrees():
        try:
            repo.lookup_worktree(name).prune(True)
        except pygit2.GitError:
            shutil.rmtree(Path(repo.path) / "worktrees" / name, ignore_errors=True)
    branch = repo.branches.local.get(LAND_BRANCH_PREFIX + task_id)
    if branch is not None:
        branch.delete()


def move_base(repo_path: Path, base_branch: str, new_commit: str, old_commit: str) -> BaseMove:
    """Move ``base_branch`` from ``old_commit`` to ``new_commit`` if it is still there.

    Holds git's lock on the ref throughout. A checkout with the branch checked out is brought to
    the new commit first (a safe checkout: it refuses to overwrite changes); a dirty one makes
    this a GitError and nothing moves. Returns ``moved=False`` when the base moved meanwhile.
    """
    repo = open_repository(repo_path)
    ref_name = "refs/heads/" + base_branch
    new_id, old_id = pygit2.Oid(hex=new_commit), pygit2.Oid(hex=old_commit)
    checkout = _checkout_on(repo, ref_name)
    if checkout is not None:
        _refuse_dirty(checkout, base_branch)
    message = f"semspec land: {base_branch} {old_commit[:12]} -> {new_commit[:12]}"
    with repo.transaction() as txn:
        txn.lock_ref(ref_name)
        current = repo.references[ref_name].target
        if current != old_id:
            return BaseMove(moved=False, base_now=str(current))
        if checkout is not None:
            _bring_checkout(checkout, new_id, base_branch)
        # No signature: pygit2 1.21 cannot pass one here; the reflog takes the repo's identity.
        txn.set_target(ref_name, new_id, message=message)
    where = checkout.workdir.rstrip("/") if checkout is not None else ""
    return BaseMove(moved=True, checkout=where, base_now=new_commit)


def _task_tip(repo: pygit2.Repository, task_id: str, repo_path: Path) -> pygit2.Commit:
    branch = repo.branches.local.get(task_branch(task_id))
    if branch is None:
        raise GitError(
            f"task {task_id} has no branch {task_branch(task_id)}",
            repo=str(repo_path),
            hint="only an approved task has work to land; see `semspec task status ID`",
        )
    commit = branch.peel(pygit2.Commit)
    assert isinstance(commit, pygit2.Commit)
    return commit


def _merge(
    repo: pygit2.Repository, base: pygit2.Commit, task: pygit2.Commit
) -> tuple[pygit2.Oid | None, list[str]]:
    index = repo.merge_commits(base, task)
    if index.conflicts is not None:
        return None, _conflict_paths(index)
    tree = index.write_tree(repo)
    signature = pygit2.Signature(*SEMSPEC_AUTHOR)
    message = f"Land {_branch_of(task)} on {base.short_id}\n"
    return repo.create_commit(None, signature, signature, message, tree, [base.id, task.id]), []


def _rebase(
    repo: pygit2.Repository, base: pygit2.Commit, task: pygit2.Commit
) -> tuple[pygit2.Oid | None, list[str]]:
    """Replay the task's commits (oldest first) on ``base``; one that adds nothing is dropped.

    A merge commit among them (a plan task started from several dependencies) is replayed as
    the change from its first parent, which is what it added on top of that line.
    """
    walker = repo.walk(task.id, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    walker.hide(base.id)
    onto = base
    for commit in walker:
        parent_tree = commit.parents[0].tree_id if commit.parents else _empty_tree(repo)
        index = repo.merge_trees(parent_tree, onto.tree, commit.tree)
        if index.conflicts is not None:
            return None, _conflict_paths(index)
        tree = index.write_tree(repo)
        if tree == onto.tree_id:
            continue
        committer = pygit2.Signature(*SEMSPEC_AUTHOR)
        new_id = repo.create_commit(None, commit.author, committer, commit.message, tree, [onto.id])
        replayed = repo.get(new_id)
        assert isinstance(replayed, pygit2.Commit)
        onto = replayed
    return onto.id, []


def _conflict_paths(index: pygit2.Index) -> list[str]:
    assert index.conflicts is not None
    paths = set()
    for ancestor, ours, theirs in index.conflicts:
        for entry in (ancestor, ours, theirs):
            if entry is not None:
                paths.add(entry.path)
    return sorted(paths)


def _empty_tree(repo: pygit2.Repository) -> pygit2.Oid:
    return repo.TreeBuilder().write()


def _branch_of(task: pygit2.Commit) -> str:
    for line in task.message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key == "Semspec-Task":
            return task_branch(value.strip())
    return task.short_id


def _scratch_name(task_id: str) -> str:
    return f"semspec-land-{validate_task_id(task_id)}"


def _checkout_on(repo: pygit2.Repository, ref_name: str) -> pygit2.Repository | None:
    """The checkout (main or linked worktree) whose HEAD is ``ref_name``, if any."""
    candidates = [repo.workdir] if repo.workdir and not repo.is_bare else []
    for name in repo.list_worktrees():
        try:
            worktree = repo.lookup_worktree(name)
        except pygit2.GitError:
            continue
        if not worktree.is_prunable:
            candidates.append(worktree.path)
    for path in candidates:
        checkout = open_repository(Path(path))
        head = checkout.references.get("HEAD")
        if head is not None and head.target == ref_name:
            return checkout
    return None


def _refuse_dirty(checkout: pygit2.Repository, base_branch: str) -> None:
    changed = sorted(checkout.status(untracked_files="no"))
    if changed:
        shown = ", ".join(changed[:5]) + (" …" if len(changed) > 5 else "")
        raise GitError(
            f"{base_branch} is checked out with uncommitted changes ({shown})",
            repo=checkout.workdir,
            hint=f"commit or stash them, or check out another branch, then land again; "
            f"semspec does not move {base_branch} under modified files",
        )


def _bring_checkout(checkout: pygit2.Repository, new_id: pygit2.Oid, base_branch: str) -> None:
    """Safe checkout of the new tree while HEAD still names the old commit (the baseline)."""
    commit = checkout.get(new_id)
    assert isinstance(commit, pygit2.Commit)
    try:
        checkout.checkout_tree(commit.tree, strategy=CheckoutStrategy.SAFE)
    except pygit2.GitError as exc:
        raise GitError(
            f"cannot update the checkout of {base_branch}: {exc}",
            repo=checkout.workdir,
            hint="an untracked file is in the way of the landed change; move it, then land again",
        ) from exc
