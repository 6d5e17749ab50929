"""Node gates import the worktree's packages, not the user's checkout (issue 29, item 1).

A real npm workspace (``npm install`` offline links ``node_modules/@me/lib`` to
``packages/lib``) with a git worktree under the default run folder inside it. Node itself is the
oracle: run in the worktree, ``require("@me/lib")`` loads the checkout's copy, so the change
to the worktree's ``packages/lib`` would go untested; the check refuses before any gate runs,
and lets the gates run once the worktree has its own ``node_modules`` or the run folder is
outside the repository.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from semspec.core.errors import GateError
from semspec.workflow.gates import GateSpec
from semspec.workflow.gates.node_links import check_node_links
from semspec.workflow.gates.runner import run_gates

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="node and npm needed"
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
WHICH = "console.log(require('@me/lib').where)"


def npm_workspace(folder: Path) -> Path:
    """A committed npm workspace with its packages installed (linked) by npm itself."""
    files = {
        "package.json": {"name": "root", "private": True, "workspaces": ["packages/*"]},
        "packages/lib/package.json": {"name": "@me/lib", "version": "1.0.0", "main": "i.js"},
        "packages/app/package.json": {"name": "@me/app", "version": "1.0.0"},
    }
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps(data), encoding="utf-8")
    (folder / "packages/lib/i.js").write_text("exports.where = 'base';\n", encoding="utf-8")
    (folder / ".gitignore").write_text("node_modules/\n.semspec/\n", encoding="utf-8")
    npm = ["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"]
    subprocess.run(npm, cwd=folder, check=True, capture_output=True, timeout=300)
    assert (folder / "node_modules/@me/lib").is_symlink()
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, "-C", str(folder), *args], check=True, capture_output=True)
    return folder


def worktree_of(checkout: Path, at: Path) -> Path:
    subprocess.run(
        [*GIT, "-C", str(checkout), "worktree", "add", "-q", str(at)],
        check=True,
        capture_output=True,
    )
    (at / "packages/lib/i.js").write_text("exports.where = 'change';\n", encoding="utf-8")
    return at


def node_loads(worktree: Path) -> str:
    done = subprocess.run(
        ["node", "-e", WHICH], cwd=worktree / "packages/app", capture_output=True, text=True
    )
    return done.stdout.strip()


async def test_a_worktree_inside_the_checkout_would_load_the_checkouts_package_and_is_refused(
    tmp_path: Path,
) -> None:
    checkout = npm_workspace(tmp_path / "checkout")
    worktree = worktree_of(checkout, checkout / ".semspec/run/worktrees/t1")
    assert node_loads(worktree) == "base"  # the bug: the change is not what Node loads
    with pytest.raises(GateError) as caught:
        await run_gates([GateSpec("test", "node -e 1")], worktree, tmp_path / "logs", 4096)
    # The first link in name order: @me/app, whose copy the worktree has too.
    assert "links the package @me/app to " in caught.value.message
    assert str(checkout / "packages/app") in caught.value.message
    assert caught.value.hint and "services.run_dir" in caught.value.hint


def test_the_worktrees_own_node_modules_or_a_run_folder_outside_are_fine(
    tmp_path: Path,
) -> None:
    checkout = npm_workspace(tmp_path / "checkout")
    outside = worktree_of(checkout, tmp_path / "run/worktrees/t1")
    check_node_links(outside)
    assert node_loads(outside) == ""  # nothing installed there: nothing of the checkout's
    inside = worktree_of(checkout, checkout / ".semspec/run/worktrees/t2")
    npm = ["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts"]
    subprocess.run(npm, cwd=inside, check=True, capture_output=True, timeout=300)
    check_node_links(inside)
    assert node_loads(inside) == "change"
