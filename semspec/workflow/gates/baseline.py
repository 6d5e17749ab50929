"""Gates judge the change, not the repository: what already fails on the base commit does not
count against a task (DESIGN.md section 9, issue 29 item 2).

After the gates ran in the worktree, ``judge_against_base`` reads the output of each failed
gate that names a ``format`` (``parsers.FORMATS``) into items. When the gate's ``baseline`` is
``auto`` it runs the same gate once on a clean export of the task's base commit, reads that
too, and keeps only the items the base does not have (``findings.split_new``). A gate whose
items are all on the base passes, with a note saying how many were set aside; one with new
items fails with those items, which the developer, the reviewer, ``task status`` and the
console show before the raw output.

The base's items are cached in the run folder (``baselines/<key>.json``, the key a hash of
the base commit and the gate's command, working folder and format), so a base commit's gate
runs once however many tasks and iterations start from it. The export is plain files written
from git's objects (no checkout, no index touched) under the run folder, and is removed after
the run; it runs with the same fence, environment and limits as the worktree's gates.

When the base cannot be judged (its run timed out, crashed or printed nothing readable) every
item counts and the note says why: a gate never passes on a guess.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import stat
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pygit2

from semspec.core.errors import SemspecError
from semspec.core.logging import get_logger
from semspec.workflow.gates.findings import MAX_ITEMS, MAX_KNOWN_EXAMPLES, split_new
from semspec.workflow.gates.junit import read_report_file
from semspec.workflow.gates.parsers import FORMATS, Paths
from semspec.workflow.gates.runner import GateFencing, Heartbeat, run_gates, working_dir_of
from semspec.workflow.gates.types import GateItem, GateReport, GateResult, GateSpec
from semspec.workflow.git.repository import commit_of, open_repository

logger = get_logger(__name__)

MAX_READ_BYTES = 16 * 1024 * 1024
"""Bytes of a gate's log read for items; a longer log is read from its inline text only."""
BASE_RUN_EXTRA_S = 60.0
"""Seconds a base run may take beyond twice the worktree run's time."""
_CACHE_VERSION = 1
_FILE_MODES = {pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE}


@dataclass(frozen=True)
class BaseCommit:
    """What a baseline needs to know about the task: its base commit and where to cache."""

    commit: str
    cache_dir: Path
    """``<run folder>/baselines``; hidden from fenced gates like the rest of the run folder."""


@dataclass(frozen=True)
class GateSetup:
    """How the worktree's gates ran, so the base's run is the same."""

    log_dir: Path
    max_output_bytes: int
    heartbeat: Heartbeat | None = None
    fencing: GateFencing = field(default_factory=GateFencing)


async def judge_against_base(
    report: GateReport,
    specs: list[GateSpec],
    worktree: Path,
    base: BaseCommit | None,
    run: GateSetup,
) -> GateReport:
    """``report`` with each readable failed gate's items, judged against ``base``."""
    by_name = {spec.name: spec for spec in specs}
    judged = []
    for result in report.results:
        spec = by_name.get(result.name)
        if spec is None or spec.format not in FORMATS or result.passed:
            judged.append(result)
            continue
        judged.append(await _judge(result, spec, worktree, base, run))
    return GateReport(results=judged)


async def _judge(
    result: GateResult, spec: GateSpec, worktree: Path, base: BaseCommit | None, run: GateSetup
) -> GateResult:
    if result.timed_out or result.exit_code is None:
        return result
    items = await asyncio.to_thread(read_items, result, spec, worktree)
    if not items:
        # Nothing readable (a crash, a usage error): the exit code and raw output decide.
        return result
    if spec.baseline == "off" or base is None:
        return _with_items(result, items, [], "")
    try:
        base_items = await _base_items(spec, worktree, base, run, result.duration_ms / 1000)
    except (SemspecError, OSError, pygit2.GitError) as exc:
        logger.warning("gate baseline failed", gate=spec.name, error=str(exc))
        base_items, why = None, str(exc)
    else:
        why = "the gate's output on the base commit could not be read"
    if base_items is None:
        note = f"every finding counts: no baseline ({why})"
        return _with_items(result, items, [], note[:500])
    renames = await asyncio.to_thread(renamed_paths, worktree, base.commit)
    split = split_new(items, base_items, renames)
    fmt = FORMATS[spec.format]
    note = _known_note(len(split.known), fmt.tests, base.commit) if split.known else ""
    if not split.new and result.exit_code not in fmt.found_codes:
        # Everything it found was on the base, but it did not run through (pytest's exit 2:
        # a collection error stopped the session): what it did not run cannot pass.
        note = f"{note}; the gate stopped early (exit code {result.exit_code}), so it counts"
        return _with_items(result, split.known, [], note.lstrip("; "))
    judged = _with_items(result, split.new, split.known, note)
    if not split.new:
        judged = replace(judged, passed=True)
    return judged


def _with_items(
    result: GateResult, new: list[GateItem], known: list[GateItem], note: str
) -> GateResult:
    return replace(
        result,
        items=new[:MAX_ITEMS],
        items_more=max(0, len(new) - MAX_ITEMS),
        known=len(known),
        known_examples=known[:MAX_KNOWN_EXAMPLES],
        note=note,
    )


def _known_note(count: int, tests: bool, commit: str) -> str:
    what = "test already failing" if tests else "finding already there"
    plural = f"{what.split()[0]}s {' '.join(what.split()[1:])}" if count != 1 else what
    return f"{count} {plural} on the base commit {commit[:12]}: not counted against this change"


def read_items(result: GateResult, spec: GateSpec, worktree: Path) -> list[GateItem] | None:
    """The items of ``result`` in ``spec.format``: from the report its tool wrote when that
    names any (pytest's JUnit XML), else from its full log when that is whole and not too
    long, else from the inline text."""
    fmt = FORMATS[spec.format]
    paths = Paths(root=Path(os.path.realpath(worktree)), cwd=working_dir_of(spec, worktree))
    if fmt.report is not None and result.report_path:
        data = read_report_file(Path(result.report_path))
        from_report = fmt.report.read(data, paths) if data is not None else None
        if from_report:
            return from_report
    text = _log_text(Path(result.log_path)) if result.log_path else None
    if text is None:
        text = result.output
    return fmt.read(text, paths)


def _log_text(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as log:
        if not stat.S_ISREG(os.fstat(log.fileno()).st_mode):
            return None
        data = log.read(MAX_READ_BYTES + 1)
    if len(data) > MAX_READ_BYTES or b"[semspec: log cut at " in data[-200:]:
        return None
    return data.decode("utf-8", errors="replace")


def cache_key(commit: str, spec: GateSpec) -> str:
    """The base items' cache name: base commit, command, working folder and format."""
    fields = [_CACHE_VERSION, commit, spec.command, spec.args, spec.working_dir, spec.format]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:32]


async def _base_items(
    spec: GateSpec, worktree: Path, base: BaseCommit, run: GateSetup, took_s: float
) -> list[GateItem] | None:
    """The base commit's items for ``spec``: cached, else from one run on an export.

    The run may take twice what the worktree's took (plus a minute), never more than the
    gate's timeout: the gates step's own timeout counts each gate's once (``bounds``), so an
    unbounded second run could outlast it. A base run that times out gives no baseline."""
    key = cache_key(base.commit, spec)
    cached = await asyncio.to_thread(_read_cache, base.cache_dir / f"{key}.json")
    if cached is not None:
        return cached
    tree = base.cache_dir / "trees" / f"{key}-{uuid.uuid4().hex[:8]}"
    try:
        await asyncio.to_thread(export_commit, worktree, base.commit, tree)
        limit = min(spec.timeout_s, BASE_RUN_EXTRA_S + 2 * took_s)
        base_spec = replace(spec, required=True, timeout_s=limit)
        log_dir = base.cache_dir / "logs" / key
        report = await run_gates(
            [base_spec], tree, log_dir, run.max_output_bytes, run.heartbeat, run.fencing
        )
        (ran,) = report.results
        if ran.timed_out or ran.exit_code is None:
            return None
        items = [] if ran.passed else await asyncio.to_thread(read_items, ran, spec, tree)
    finally:
        await asyncio.to_thread(shutil.rmtree, tree, True)
    if items is None:
        return None
    await asyncio.to_thread(_write_cache, base.cache_dir / f"{key}.json", base.commit, items)
    return items


def _read_cache(path: Path) -> list[GateItem] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [GateItem(**entry) for entry in data["items"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(path: Path, commit: str, items: list[GateItem]) -> None:
    """Written whole or not at all: two tasks on one base may both compute it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    data = {"commit": commit, "items": [asdict(item) for item in items]}
    partial.write_text(json.dumps(data), encoding="utf-8")
    os.replace(partial, path)


def export_commit(repo_path: Path, commit_id: str, target: Path) -> None:
    """Write ``commit_id``'s files under ``target`` from git's objects (submodules left out)."""
    repo = open_repository(repo_path)
    commit = commit_of(repo, commit_id, repo_path)
    target.mkdir(parents=True)
    _write_tree(repo, commit.tree, target)


def _write_tree(repo: pygit2.Repository, tree: pygit2.Tree, folder: Path) -> None:
    for entry in tree:
        name = entry.name or ""
        if not name or name in (".", "..") or "/" in name:
            continue
        path = folder / name
        if entry.filemode == pygit2.GIT_FILEMODE_TREE:
            path.mkdir()
            sub = repo[entry.id]
            assert isinstance(sub, pygit2.Tree)
            _write_tree(repo, sub, path)
        elif entry.filemode == pygit2.GIT_FILEMODE_LINK:
            blob = repo[entry.id]
            assert isinstance(blob, pygit2.Blob)
            os.symlink(blob.data, path)
        elif entry.filemode in _FILE_MODES:
            blob = repo[entry.id]
            assert isinstance(blob, pygit2.Blob)
            path.write_bytes(blob.data)
            if entry.filemode == pygit2.GIT_FILEMODE_BLOB_EXECUTABLE:
                path.chmod(0o755)


def renamed_paths(worktree: Path, base_commit: str) -> dict[str, str]:
    """Files the change moved: new path → path on the base commit."""
    repo = open_repository(worktree)
    tree = commit_of(repo, base_commit, worktree).tree
    diff = tree.diff_to_workdir(
        pygit2.enums.DiffOption.INCLUDE_UNTRACKED | pygit2.enums.DiffOption.RECURSE_UNTRACKED_DIRS
    )
    diff.find_similar(pygit2.enums.DiffFind.FIND_RENAMES | pygit2.enums.DiffFind.FIND_FOR_UNTRACKED)
    moved = {}
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.RENAMED:
            moved[delta.new_file.path] = delta.old_file.path
    return moved


def base_of(commit: str, run_dir: str) -> BaseCommit | None:
    """The baseline source of a task on ``commit`` with its run folder, when both are known."""
    if not commit or not run_dir:
        return None
    return BaseCommit(commit=commit, cache_dir=Path(run_dir) / "baselines")
