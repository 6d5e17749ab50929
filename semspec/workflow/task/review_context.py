"""The reviewer's assembled context for a task, in the window the reviewer role really has.

The review activity and ``semspec review context`` share both halves, so the command shows what
the reviewer gets: ``assemble_for_review`` builds the context, and ``reviewer_window`` is the
window: the configured ``models.reviewer.context_window``, else the registry entry of the
reviewer's model, else 32,768 (``semspec.workflow.context.windows``).
"""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import SemspecConfig
from semspec.graph.store import GraphStore
from semspec.knowledge.sources.pinned import rules_on_commit
from semspec.workflow.context.assembler import assemble_review_context
from semspec.workflow.context.assembler_model import AssembledContext, AssemblyRequest
from semspec.workflow.context.windows import role_window_in
from semspec.workflow.task.context_activities import graph_of, repo_config
from semspec.workflow.task.messages import ContextItem, ReviewContextUse, RuleUse, TaskSpec

MAX_LISTED_ITEMS = 60
"""Items (and left-out items) a review records: the task's log carries one record per review."""


def reviewer_window(repo: Path, config: SemspecConfig, model: str | None = None) -> int:
    """Context window of the reviewer role; ``model`` is the model a task was submitted with
    (the configured ``context_window`` still wins, as it does for the agent itself)."""
    role = config.models.reviewer
    if model is not None and model != role.model:
        role = role.model_copy(update={"model": model})
    return role_window_in(repo, role)


def assemble_for_review(
    store: GraphStore,
    config: SemspecConfig,
    files: list[str],
    window: int,
    *,
    task_id: str | None = None,
    plan_id: str | None = None,
    diff: str = "",
    base: tuple[Path, str] | None = None,
) -> AssembledContext:
    """The reviewer's context for ``files`` in ``window`` tokens, with the reserved parts from
    the config: the one builder of the review activity and ``semspec review context``.

    ``base`` (repository, commit) pins the rule files to that commit: a task is reviewed
    against the rules on its base commit, whatever its change or the synced graph holds.
    """
    reviewer = config.context.reviewer
    pinned = rules_on_commit(base[0], base[1], config.sources.rules) if base else None
    request = AssemblyRequest(
        task_files=tuple(files),
        plan_id=plan_id,
        task_id=task_id,
        diff=diff,
        window_tokens=window,
        system_prompt_tokens=reviewer.system_prompt_tokens,
        working_memory_tokens=reviewer.working_memory_tokens,
        output_tokens=reviewer.output_tokens,
        safety_margin=reviewer.safety_margin,
        pinned_rules=None if pinned is None else pinned.docs,
        rules_commit=None if pinned is None else pinned.commit,
    )
    return assemble_review_context(store, request)


def review_context(repo: Path, spec: TaskSpec, diff: str, window_tokens: int | None = None) -> str:
    """Assembled reviewer context from the repository's graph; empty when there is none."""
    return review_context_used(repo, spec, diff, window_tokens)[0]


def review_context_used(
    repo: Path,
    spec: TaskSpec,
    diff: str,
    window_tokens: int | None = None,
    base_commit: str | None = None,
) -> tuple[str, ReviewContextUse | None]:
    """The reviewer's context text and what it held (None and "" without a graph); rule files
    as on ``base_commit`` when given."""
    config = repo_config(repo)
    window = window_tokens or reviewer_window(repo, config, spec.reviewer.model)
    with graph_of(repo, config, create=False) as store:
        if store is None:
            return "", None
        assembled = assemble_for_review(
            store,
            config,
            list(spec.task_files),
            window,
            task_id=spec.task_id,
            plan_id=spec.plan_id,
            diff=diff,
            base=(repo, base_commit) if base_commit else None,
        )
    return assembled.text, context_use(assembled)


def context_use(assembled: AssembledContext, most: int = MAX_LISTED_ITEMS) -> ReviewContextUse:
    """Each item of ``assembled`` with its tokens, and what the budget left out: at most
    ``most`` of each, in context order, and how many more there were."""
    items = [
        ContextItem(section.name, label, tokens, label in section.trimmed)
        for section in assembled.sections
        for label, tokens in section.item_tokens.items()
    ]
    dropped = [f"{s.name}: {label}" for s in assembled.sections for label in s.dropped]
    unlisted = max(len(items) - most, 0) + max(len(dropped) - most, 0)
    rules = [
        RuleUse(
            r.rule_id, r.origin, r.path, r.severity, r.given, r.sections_given, r.sections_total
        )
        for r in assembled.rules[:most]
    ]
    return ReviewContextUse(
        assembled.budget_tokens,
        assembled.used_tokens,
        items[:most],
        dropped[:most],
        unlisted,
        rules,
        assembled.rules_commit,
    )
