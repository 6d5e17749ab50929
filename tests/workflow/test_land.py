"""Landing approved task branches on a copy of mdurl, with real git as the oracle.

Each test builds the task branch the way the loop does (``ensure_worktree`` + ``commit_task``),
moves the base branch as a user would, lands, and checks the result with the git CLI.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from semspec.cli.task_cmd import land_text
from semspec.core.errors import GitError
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.git.commit import commit_task
from semspec.workflow.git.land import move_base, prepare_land
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.land.landing import (
    ALREADY_LANDED,
    CONFLICT,
    GATE_FAILED,
    LANDED,
    REFUSED,
    LandRequest,
    land_task,
)
from tests.support.mdurl_project import FORMAT_PY, original, package_sources, with_new_function
from tests.support.repos import make_repo

ENCODE_PY = "mdurl/_encode.py"
INIT_PY = "mdurl/__init__.py"
CHECK = (
    "from mdurl._format import format_without_hash\n"
    "import mdurl\n"
    "assert format_without_hash(mdurl.parse('https://a.example/b?q=1#top')) == "
    "'https://a.example/b?q=1'\n"
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "mdurl"
    make_repo(repo, {**package_sources(), ".gitignore": "__pycache__/\n"})
    return repo


def task_with(repo: Path, tmp_path: Path, task_id: str, files: dict[str, str]) -> str:
    """Commit ``files`` on the task's branch in its own worktree; return the commit."""
    info = ensure_worktree(repo, task_id, "main", tmp_path / "worktrees")
    for rel, text in files.items():
        (Path(info.path) / rel).write_text(text, encoding="utf-8")
    return commit_task(Path(info.path), task_id, f"{task_id}: change", f"{task_id}-1").commit_id


def user_commit(repo: Path, rel: str, text: str, message: str = "user change") -> str:
    """A commit on main in the user's checkout, as the user would make it."""
    (repo / rel).write_text(text, encoding="utf-8")
    git(repo, "add", rel)
    git(repo, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def check_gate(name: str = "check") -> GateSpec:
    return GateSpec(name=name, command=f'{sys.executable} -c "$1"', args=[CHECK])


def request(repo: Path, tmp_path: Path, task_id: str, strategy: str = "rebase") -> LandRequest:
    return LandRequest(
        repo_path=str(repo),
        task_id=task_id,
        base_branch="main",
        strategy=strategy,
        scratch_root=str(tmp_path / "land"),
        log_dir=str(tmp_path / "logs" / task_id),
    )


def worktree_paths(repo: Path) -> list[str]:
    lines = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line.removeprefix("worktree ") for line in lines if line.startswith("worktree ")]


async def test_an_unmoved_base_fast_forwards_and_the_clean_checkout_follows(
    project: Path, tmp_path: Path
) -> None:
    tip = task_with(project, tmp_path, "ff", {FORMAT_PY: with_new_function()})
    result = await land_task(request(project, tmp_path, "ff"), [check_gate()])
    assert (result.outcome, result.method, result.commit) == (LANDED, "fast-forward", tip)
    assert git(project, "rev-parse", "main") == tip
    assert result.checkout == str(project)
    assert git(project, "status", "--porcelain") == ""
    assert (project / FORMAT_PY).read_text() == with_new_function()


async def test_a_moved_base_is_rebased_and_gated_on_the_combined_result(
    project: Path, tmp_path: Path
) -> None:
    task_with(project, tmp_path, "rb", {FORMAT_PY: with_new_function()})
    moved = user_commit(project, ENCODE_PY, original(ENCODE_PY) + "\n# tuned by the user\n")
    result = await land_task(request(project, tmp_path, "rb"), [check_gate()])
    assert (result.outcome, result.method, result.base_before) == (LANDED, "rebase", moved)
    assert git(project, "rev-parse", "main") == result.commit
    assert git(project, "rev-parse", f"{result.commit}^") == moved
    assert git(project, "log", "-1", "--format=%an", result.commit) == "semspec"
    assert git(project, "show", f"{result.commit}:{FORMAT_PY}") == with_new_function().strip()
    assert "tuned by the user" in git(project, "show", f"{result.commit}:{ENCODE_PY}")
    assert (project / FORMAT_PY).read_text() == with_new_function()
    assert worktree_paths(project) == [str(project), str(tmp_path / "worktrees" / "rb")]
    assert git(project, "branch", "--list", "semspec/land/*") == ""
    git(project, "fsck", "--strict")
    assert (tmp_path / "logs" / "rb" / "check.log").exists()


async def test_merge_strategy_lands_one_merge_commit_with_both_parents(
    project: Path, tmp_path: Path
) -> None:
    tip = task_with(project, tmp_path, "mg", {FORMAT_PY: with_new_function()})
    moved = user_commit(project, ENCODE_PY, original(ENCODE_PY) + "\n# tuned\n")
    result = await land_task(request(project, tmp_path, "mg", "merge"), [check_gate()])
    assert (result.outcome, result.method) == (LANDED, "merge")
    assert git(project, "log", "-1", "--format=%P", result.commit).split() == [moved, tip]


async def test_a_rebase_conflict_names_the_file_and_moves_nothing(
    project: Path, tmp_path: Path
) -> None:
    task_with(project, tmp_path, "cf", {FORMAT_PY: with_new_function()})
    moved = user_commit(project, FORMAT_PY, original(FORMAT_PY) + "\n\ndef other():\n    pass\n")
    result = await land_task(request(project, tmp_path, "cf"), [check_gate()])
    assert (result.outcome, result.conflicts) == (CONFLICT, [FORMAT_PY])
    assert FORMAT_PY in result.message
    # No escalation is opened (docs/landing.md): the hint says how to resolve it by hand.
    assert "retry" not in result.hint
    assert "rebase semspec/task/cf on main" in result.hint
    assert "semspec task land cf" in result.hint
    assert git(project, "rev-parse", "main") == moved
    assert git(project, "status", "--porcelain") == ""
    assert len(worktree_paths(project)) == 2


async def test_a_gate_failing_only_on_the_combined_result_is_named_and_nothing_lands(
    project: Path, tmp_path: Path
) -> None:
    # The user renames `format`; the task's new function, written against the old base, calls it.
    task_with(project, tmp_path, "gf", {FORMAT_PY: with_new_function()})
    renamed = original(FORMAT_PY).replace("def format(", "def format_url(")
    (project / INIT_PY).write_text(
        original(INIT_PY).replace(
            "from mdurl._format import format", "from mdurl._format import format_url as format"
        )
    )
    git(project, "add", INIT_PY)
    moved = user_commit(project, FORMAT_PY, renamed, "rename format")
    result = await land_task(request(project, tmp_path, "gf"), [check_gate()])
    assert (result.outcome, result.failed_gates) == (GATE_FAILED, ["check"])
    # Inside mdurl/_format.py the old name now means the builtin: the check's assert fails.
    assert "AssertionError" in result.gate_feedback
    assert git(project, "rev-parse", "main") == moved
    assert git(project, "branch", "--list", "semspec/land/*") == ""
    assert not (tmp_path / "land" / "gf").exists()


async def test_a_dirty_checkout_of_the_base_refuses_and_keeps_the_users_edit(
    project: Path, tmp_path: Path
) -> None:
    task_with(project, tmp_path, "dt", {FORMAT_PY: with_new_function()})
    before = git(project, "rev-parse", "main")
    (project / ENCODE_PY).write_text("# half-done edit\n")
    result = await land_task(request(project, tmp_path, "dt"), [check_gate()])
    assert result.outcome == REFUSED
    assert ENCODE_PY in result.message and "stash" in result.hint
    assert git(project, "rev-parse", "main") == before
    assert (project / ENCODE_PY).read_text() == "# half-done edit\n"


async def test_with_another_branch_checked_out_only_the_ref_moves(
    project: Path, tmp_path: Path
) -> None:
    tip = task_with(project, tmp_path, "ob", {FORMAT_PY: with_new_function()})
    git(project, "switch", "-qc", "feature")
    (project / ENCODE_PY).write_text("# edit on feature\n")
    result = await land_task(request(project, tmp_path, "ob"), [check_gate()])
    assert (result.outcome, result.commit, result.checkout) == (LANDED, tip, "")
    assert git(project, "rev-parse", "main") == tip
    assert git(project, "symbolic-ref", "HEAD") == "refs/heads/feature"
    assert (project / FORMAT_PY).read_text() == original(FORMAT_PY)
    assert (project / ENCODE_PY).read_text() == "# edit on feature\n"


async def test_landing_twice_is_already_landed(project: Path, tmp_path: Path) -> None:
    task_with(project, tmp_path, "tw", {FORMAT_PY: with_new_function()})
    first = await land_task(request(project, tmp_path, "tw"), [])
    again = await land_task(request(project, tmp_path, "tw"), [])
    assert (first.outcome, again.outcome, again.commit) == (LANDED, ALREADY_LANDED, first.commit)


async def test_export_of_a_landed_task_says_there_is_nothing_and_writes_no_folder(
    project: Path, tmp_path: Path
) -> None:
    task_with(project, tmp_path, "ex", {FORMAT_PY: with_new_function()})
    assert (await land_task(request(project, tmp_path, "ex"), [])).outcome == LANDED
    out = tmp_path / "patches"
    argv = [sys.executable, "-m", "semspec", "--repo", str(project), "task", "export", "ex"]
    said = subprocess.run([*argv, "-o", str(out)], capture_output=True, text=True, check=False)
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip().lower() == (
        "no commits on semspec/task/ex since main: nothing to export"
    )
    assert not out.exists()
    as_json = subprocess.run(
        [*argv, "-o", str(out), "--json"], capture_output=True, text=True, check=True
    )
    found = json.loads(as_json.stdout)
    assert found["patches"] == [] and "no commits" in found["reason"]
    assert not out.exists()


def test_task_status_land_line_says_what_happened_to_the_land() -> None:
    assert land_text("t", {"state": "approved"}) == "not landed (approved; semspec task land t)"
    assert land_text("t", {"state": "queued"}) == "queued"
    assert land_text("t", {"state": "landed", "commit": "0123456789abcdef"}) == (
        "landed 0123456789ab"
    )
    failed = {"state": "land failed", "reason": "land_conflict", "message": "rebase of t ..."}
    assert land_text("t", failed) == "failed (land_conflict: rebase of t ...)"
    assert land_text("t", {"state": "land failed", "reason": "the land did not finish"}) == (
        "failed (the land did not finish)"
    )


def test_the_base_ref_moves_only_from_the_commit_the_gates_saw(
    project: Path, tmp_path: Path
) -> None:
    task_with(project, tmp_path, "cas", {FORMAT_PY: with_new_function()})
    plan = prepare_land(project, "cas", "main", "rebase")
    git(project, "switch", "-qc", "elsewhere")
    raced = user_commit(project, ENCODE_PY, "# raced\n")
    git(project, "update-ref", "refs/heads/main", raced)
    move = move_base(project, "main", plan.new_commit, plan.base_commit)
    assert (move.moved, move.base_now) == (False, raced)
    assert git(project, "rev-parse", "main") == raced


def test_a_task_without_a_branch_is_a_git_error_with_a_hint(project: Path) -> None:
    with pytest.raises(GitError) as caught:
        prepare_land(project, "never-ran", "main", "rebase")
    assert "semspec task status" in (caught.value.hint or "")


RECORD = (
    "import sys\n"
    "text = open('mdurl/_format.py').read()\n"
    "seen = [m for m in ('docstring', 'brackets', 'format_without_hash') if m in text]\n"
    "open(sys.argv[1], 'a').write(' '.join(seen) + '\\n')\n"
)


async def test_three_tasks_on_one_file_land_in_order_each_gated_on_top_of_the_previous(
    project: Path, tmp_path: Path
) -> None:
    text = original(FORMAT_PY)
    changes = {
        "top": '"""Turning a parsed URL back into text (docstring)."""\n' + text,
        "middle": text.replace("# ipv6 address", "# an ipv6 address goes in brackets"),
        "end": with_new_function(),
    }
    tips = {name: task_with(project, tmp_path, name, {FORMAT_PY: t}) for name, t in changes.items()}
    record = tmp_path / "gated.txt"
    gate = GateSpec(
        name="record", command=f'{sys.executable} -c "$1" "$2"', args=[RECORD, str(record)]
    )
    landed = [await land_task(request(project, tmp_path, name), [gate]) for name in changes]
    assert [(r.outcome, r.method) for r in landed] == [
        (LANDED, "fast-forward"),
        (LANDED, "rebase"),
        (LANDED, "rebase"),
    ]
    assert landed[0].commit == tips["top"]
    # The gates of the second and third land saw the earlier lands in the same file.
    assert record.read_text().splitlines() == [
        "docstring brackets",
        "docstring brackets format_without_hash",
    ]
    chain = git(project, "log", "--format=%H", "-3", "main").splitlines()
    assert chain == [landed[2].commit, landed[1].commit, landed[0].commit]
    final = (project / FORMAT_PY).read_text()
    assert all(marker in final for marker in ("docstring", "brackets", "format_without_hash"))
    assert git(project, "status", "--porcelain") == ""


def test_push_sends_the_landed_base_to_the_remote_and_an_unknown_remote_is_named(
    project: Path, tmp_path: Path
) -> None:
    from semspec.workflow.land.activities import push

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    tip = task_with(project, tmp_path, "ps", {FORMAT_PY: with_new_function()})
    assert move_base(project, "main", tip, git(project, "rev-parse", "main")).moved
    push(project, "origin", "main")
    assert git(remote, "rev-parse", "main") == tip
    with pytest.raises(GitError) as caught:
        push(project, "upstream", "main")
    assert "origin" in (caught.value.hint or "")


KNOWN_BROKEN = (
    "import mdurl\n\n\n"
    "def test_parse_keeps_the_host():\n"
    "    assert mdurl.parse('https://a.example/b').hostname == 'a.example'\n\n\n"
    "def test_known_broken():\n"
    "    assert mdurl.parse('https://a.example/b').hostname == 'b.example'\n"
)


async def test_a_test_already_failing_on_the_base_does_not_stop_the_land(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "mdurl"
    make_repo(repo, {**package_sources(), "tests/test_parse.py": KNOWN_BROKEN})
    task_with(repo, tmp_path, "bl", {FORMAT_PY: with_new_function()})
    user_commit(repo, ENCODE_PY, original(ENCODE_PY) + "\n# tuned\n")
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    gate = GateSpec(name="tests", command=command, format="pytest")
    req = request(repo, tmp_path, "bl")
    req.run_dir = str(tmp_path / "run")
    result = await land_task(req, [gate])
    assert (result.outcome, result.method) == (LANDED, "rebase"), result.gate_feedback


async def test_two_lands_at_once_both_land_the_later_one_replanned_on_the_new_base(
    project: Path, tmp_path: Path
) -> None:
    # No queue here: the compare-and-swap alone makes the slower land plan and gate again.
    text = original(FORMAT_PY)
    task_with(project, tmp_path, "x1", {FORMAT_PY: '"""Top."""\n' + text})
    task_with(project, tmp_path, "x2", {FORMAT_PY: with_new_function()})
    user_commit(project, ENCODE_PY, original(ENCODE_PY) + "\n# tuned\n")
    gate = GateSpec(name="slow", command=f'{sys.executable} -c "import time; time.sleep(1)"')
    first, second = await asyncio.gather(
        land_task(request(project, tmp_path, "x1"), [gate]),
        land_task(request(project, tmp_path, "x2"), [gate]),
    )
    assert (first.outcome, second.outcome) == (LANDED, LANDED)
    tips = {first.commit, second.commit}
    head = git(project, "rev-parse", "main")
    assert head in tips and git(project, "rev-parse", f"{head}^") in tips
    final = (project / FORMAT_PY).read_text()
    assert "Top." in final and "format_without_hash" in final
