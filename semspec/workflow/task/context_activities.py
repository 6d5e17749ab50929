"""Activities for the task's context: the budget check, checkpoints and end-of-task bookkeeping.

They read the model registry, the token estimator and the knowledge graph; all of it is I/O,
so it lives here and the workflow only sees the typed results. All of it blocks, too (files,
git, a graph server a round trip away), so these are plain ``def`` activities: the worker runs
them on its thread pool, never on its event loop.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rdflib import Literal
from temporalio import activity

from semspec.agents.tools.files import read_regular, regular_size
from semspec.agents.workspace import ToolError
from semspec.core.config import load_config
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import SemspecError
from semspec.core.logging import get_logger
from semspec.core.run_folder import run_dir_of
from semspec.graph.access import graph_config, open_store
from semspec.graph.store import GraphStore
from semspec.knowledge.sources.pinned import rules_on_commit
from semspec.knowledge.sources.sop_document import SopDocument
from semspec.model.performance import MemoryPerformanceHistory, PerformanceHistory, TaskOutcome
from semspec.model.registry import ModelRegistry, load_registry
from semspec.vocabulary import code as C
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.activity_errors import activity_errors
from semspec.workflow.assignment import explain_assignment
from semspec.workflow.context.checkpoint import delete_checkpoints, save_checkpoint
from semspec.workflow.context.decompose import Refusal, limits_from_budget, plan_subtasks
from semspec.workflow.context.estimator import TokenEstimator
from semspec.workflow.context.sizing import raise_limit_hint, size_role, task_budget
from semspec.workflow.git.diff import worktree_diff
from semspec.workflow.knowledge import decisions_for, record_convention, record_decision
from semspec.workflow.performance_graph import GraphPerformanceHistory
from semspec.workflow.task.messages import (
    BudgetInput,
    BudgetOutcome,
    CheckpointInput,
    CheckpointStep,
    FinalizeInput,
    FinalizeStep,
    TaskSpec,
)
from semspec.workflow.task.secret_guard import change_findings
from semspec.workflow.task.worktree_cleanup import remove_finished_worktree

log = get_logger("task-context")


def repo_config(repo: Path) -> SemspecConfig:
    """The repository's config, or the defaults when it cannot be read (the task was already
    validated at submit; a later edit must not break a running task)."""
    try:
        return load_config(repo)
    except SemspecError:
        return SemspecConfig()


@contextmanager
def graph_of(repo: Path, config: SemspecConfig, create: bool) -> Iterator[GraphStore | None]:
    """The repository's graph store for the duration of a block, or None when there is none.

    Opened per use and closed after: while the stack runs this is its graph server (shared by
    every worker and command), otherwise the store directory that only one process may hold.
    """
    graph = graph_config(config, repo)
    if graph.mode == "embedded" and not create and not (repo / graph.path).exists():
        yield None
        return
    store = open_store(graph, repo)
    try:
        yield store
    finally:
        store.close()


def _imports_between(store: GraphStore | None, files: list[str]) -> dict[str, set[str]]:
    """Which task files import which, from the meaning graph (Python module paths only)."""
    if store is None or not files:
        return {}
    by_module: dict[str, str] = {}
    for path in files:
        if path.endswith(".py"):
            stem = path[:-3].removesuffix("/__init__")
            by_module[stem.replace("/", ".")] = path
    rows = store.select(
        f"""SELECT ?path ?module WHERE {{ GRAPH ?g {{
  ?ev <{C.PATH}> ?path . ?imp <{C.EVIDENCE}> ?ev . ?imp <{C.NAME}> ?module .
  ?file <{C.IMPORTS}> ?imp }} }}""",
        {"path": [Literal(f) for f in sorted(set(files))]},
    )
    edges: dict[str, set[str]] = {}
    for row in rows:
        source, target = str(row["path"]), by_module.get(str(row["module"]))
        if source in files and target and target != source:
            edges.setdefault(source, set()).add(target)
    return edges


def sop_requirements(
    store: GraphStore | None, files: list[str], pinned: Sequence[SopDocument] | None = None
) -> list[str]:
    """Every requirement of the SOPs whose ``applies_to`` matches a task file, most severe SOP
    first, each prefixed with its severity and SOP id (nothing is cut: the developer must see
    every error-severity requirement). With ``pinned`` (the rule files of the task's base
    commit), rule files come from it, as for the reviewer (``matching_sops``)."""
    if store is None or not files:
        return []
    from semspec.workflow.context.assembler_sops import matching_sops

    return [
        f"[{sop.severity}] {sop.sop_id}: {requirement}"
        for sop in matching_sops(store, files, pinned)
        for requirement in sop.requirements
    ]


def task_file_text(root: Path, rel: str) -> str:
    """The text of task file ``rel`` under ``root`` ('' when it does not exist yet).

    Agent-written code may leave anything at a task file's path: only a regular file of the size
    the tools read is read (a FIFO would block the read, a sparse file claim gigabytes, a link
    lead anywhere); anything else is a ``ToolError`` saying what is there.
    """
    path = root / rel
    if regular_size(path, rel) is None:
        return ""
    return read_regular(path, rel).decode("utf-8", errors="replace")


def _task_text(spec: TaskSpec) -> str:
    return "\n".join([spec.title, spec.description, *spec.criteria])


@activity.defn(name="task.check_budget")
@activity_errors
def check_budget(inp: BudgetInput) -> BudgetOutcome:
    """Count the task's tokens for its developer model; fit, split into groups, or refuse."""
    spec = inp.spec
    repo = Path(spec.repo_path)
    config = repo_config(repo)
    registry = load_registry(repo)
    # The same sizing as `semspec budget` and `semspec models list` (workflow/context/sizing.py).
    role = config.models.developer.model_copy(update={"model": spec.developer.model})
    sized = size_role(role, registry)
    notes = [sized.note] if sized.note else []
    profile = sized.profile
    estimator = TokenEstimator(sized.spec.tokenizer)
    file_tokens = {}
    unreadable = []
    for rel in spec.task_files:
        try:
            file_tokens[rel] = estimator.count(task_file_text(repo, rel))
        except ToolError as exc:
            file_tokens[rel] = 0
            unreadable.append(f"task file {exc}")
    task_tokens = estimator.count(_task_text(spec))
    report = task_budget(sized, config.context, file_tokens, task_tokens=task_tokens)
    lines = notes + [f"{line.sign:>1} {line.label}: {line.tokens:,}" for line in report.lines]
    lines += [f"too large: {r.message}" for r in report.reasons]
    raise_hint = raise_limit_hint(sized, report, config.context, "developer")
    if report.oversized_file is not None or any(
        r.code == "file_tokens_over_limit" for r in report.reasons
    ):
        lines.append(f"to raise the file limit: {raise_hint}")
    lines += [f"unreadable: {problem}" for problem in unreadable]
    assignment = _assignment(repo, config, registry, sum(file_tokens.values()) + task_tokens)
    base = profile.system_prompt_overhead + task_tokens + sum(file_tokens.values())
    common = {
        "window": profile.context_window,
        "lines": lines,
        "assignment": assignment,
        "file_tokens": file_tokens,
    }
    if unreadable:
        refusal = "; ".join(unreadable)
        return BudgetOutcome(fits=False, refusal=refusal, base_tokens=base, **common)  # type: ignore[arg-type]
    if report.fits:
        return BudgetOutcome(fits=True, base_tokens=base, **common)  # type: ignore[arg-type]
    imports = _imports_of(repo, config, list(spec.task_files))
    plan = plan_subtasks(file_tokens, imports, limits_from_budget(report))
    if isinstance(plan, Refusal):
        refusal = f"{plan.message}; {raise_hint}"
        return BudgetOutcome(fits=False, refusal=refusal, base_tokens=base, **common)  # type: ignore[arg-type]
    return BudgetOutcome(fits=False, groups=plan, base_tokens=base, **common)  # type: ignore[arg-type]


def _imports_of(repo: Path, config: SemspecConfig, files: list[str]) -> dict[str, set[str]]:
    with graph_of(repo, config, create=False) as store:
        return _imports_between(store, files)


def _assignment(
    repo: Path, config: SemspecConfig, registry: ModelRegistry, tokens: int
) -> list[str]:
    """One line per role: the model that would be chosen and why, from recorded performance."""
    lines = []
    with graph_of(repo, config, create=False) as store:
        history: PerformanceHistory = (
            GraphPerformanceHistory(store) if store is not None else MemoryPerformanceHistory()
        )
        # The scripted model only replays scripts: never a real candidate for a role.
        models = [m for m in registry if m.provider != "scripted"]
        for role in ("developer", "reviewer"):
            result = explain_assignment(models, role, tokens, history)
            chosen = result.chosen or "none qualifies"
            ranked = [c for c in result.candidates if c.eligible][:3]
            why = "; ".join(f"{c.model}: {c.reason}" for c in ranked)
            lines.append(f"{role}: {chosen} ({why})" if why else f"{role}: {chosen}")
    return lines


@activity.defn(name="task.checkpoint")
@activity_errors
def checkpoint(inp: CheckpointInput) -> CheckpointStep:
    """Snapshot the worktree onto ``semspec/checkpoint/<task>/<n>`` and gather decisions.

    The snapshot is built from the base tree and the changed paths only, and the task branch
    does not move; a retry finds the branch already at an identical commit. After a cancelled
    step (``scan``) the worktree's diff names the paths, since the step never reported them.
    """
    spec = inp.spec
    repo = Path(spec.repo_path)
    ws = inp.workspace
    ref, commit_id = "", ws.base_commit
    changed = set(inp.changed)
    if inp.scan:
        changed.update(worktree_diff(Path(ws.path), ws.base_commit).files)
    # A file holding a secret stays out of git; the worktree keeps it for the next run.
    held = {f.path for f in change_findings(repo, Path(ws.path), ws.base_commit)}
    if held & changed:
        log.warning("checkpoint leaves out files holding a secret", files=sorted(held & changed))
    changed -= held
    if changed:
        ref, commit_id = save_checkpoint(
            repo,
            Path(ws.path),
            ws.base_commit,
            ws.branch,
            sorted(changed),
            spec.task_id,
            inp.number,
        )
    return CheckpointStep(ref=ref, commit_id=commit_id, decisions=_decisions_of(repo, spec))


def _decisions_of(repo: Path, spec: TaskSpec) -> list[str]:
    """The decisions a continuation carries, read from the graph."""
    with graph_of(repo, repo_config(repo), create=False) as store:
        found = decisions_for(store, spec.task_id, spec.plan_id, spec.task_files) if store else []
    return [f"{d.title}: {d.text}" for d in found]


@activity.defn(name="task.finalize")
@activity_errors
def finalize(inp: FinalizeInput) -> FinalizeStep:
    """Record the decision and conventions of an approval, the models' performance, and delete
    checkpoint branches and the worktree unless the task keeps them (``worktree_cleanup``)."""
    spec = inp.spec
    repo = Path(spec.repo_path)
    config = repo_config(repo)
    decision = None
    conventions: list[str] = []
    if inp.outcome == "approved":
        with graph_of(repo, config, create=True) as store:
            assert store is not None
            text = inp.review_summary or "approved"
            if inp.commit_id:
                text = f"{text} (commit {inp.commit_id[:12]})"
            decision = record_decision(
                store,
                spec.task_id,
                spec.plan_id or task_workflow_id(spec.task_id),
                spec.title,
                text,
                inp.files or spec.task_files,
            )
            for pattern in inp.noted_patterns:
                conventions.append(
                    record_convention(
                        store,
                        spec.project,
                        pattern.get("name", "convention"),
                        pattern.get("applies_to") or "*",
                        pattern.get("description", ""),
                        f"task {spec.task_id} reviewed by {inp.reviewer}",
                        # The convention's scope is the glob the approved files share.
                        files=inp.files or spec.task_files,
                        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    )
                )
    if inp.outcome in ("approved", "aborted", "failed"):
        outcome = TaskOutcome(
            approved=inp.outcome == "approved",
            iterations=inp.iterations,
            tokens=inp.tokens,
            latency_s=inp.latency_s,
        )
        with graph_of(repo, config, create=True) as store:
            assert store is not None
            history = GraphPerformanceHistory(store)
            history.record_task(spec.task_id, spec.developer.model, "developer", outcome)
            history.record_task(spec.task_id, spec.reviewer.model, "reviewer", outcome)
    deleted: list[str] = []
    if not spec.keep_checkpoints:
        try:
            deleted = delete_checkpoints(repo, spec.task_id)
        except SemspecError:
            deleted = []
    # Runs started before ``FinalizeInput.run_dir`` existed carry none: the config's folder.
    run_dir = Path(inp.run_dir) if inp.run_dir else run_dir_of(config, repo)
    worktree = remove_finished_worktree(spec, run_dir)
    return FinalizeStep(
        decision=decision,
        conventions=conventions,
        checkpoints_deleted=deleted,
        worktree_removed=worktree,
    )


def developer_context(spec: TaskSpec, carried: list[str], base_commit: str | None = None) -> str:
    """SOP requirements for the task files plus decisions carried over a checkpoint.

    With ``base_commit``, rule files (``AGENTS.md``, ``CLAUDE.md``, …) are read as they are on
    it, as the reviewer's are (``review_context``): a change that edits them, or a checkout
    synced after the task started, does not change the rules the developer is guided by.
    """
    repo = Path(spec.repo_path)
    config = repo_config(repo)
    pinned = rules_on_commit(repo, base_commit, config.sources.rules) if base_commit else None
    with graph_of(repo, config, create=False) as store:
        requirements = sop_requirements(
            store, list(spec.task_files), None if pinned is None else pinned.docs
        )
    parts = []
    if requirements:
        parts.append("## SOP requirements\n" + "\n".join(f"- {r}" for r in requirements))
    if carried:
        parts.append("## Decisions so far\n" + "\n".join(f"- {d}" for d in carried))
    return "\n\n".join(parts)
