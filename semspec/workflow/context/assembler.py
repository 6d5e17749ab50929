"""The reviewer's context assembler: SOPs that apply to the task files, then decisions, then
file summaries, then conventions, cut to the token budget the reviewer's window leaves.

Budget = window - system prompt - diff - working memory - output - safety margin. The heading
and requirements of every error SOP always go in (``ContextBudgetError`` naming the tokens they
need when they alone cannot); then error SOP summaries, decisions, error SOP sections, warning
SOPs and info SOPs (``sop_budget`` has the order); file summaries are trimmed and conventions
dropped first. The function only reads the store, so the same graph and request give
byte-identical text.
"""

from __future__ import annotations

from semspec.core.errors import ContextBudgetError
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.summary import file_summaries
from semspec.model.tokens import TokenCounter, count_tokens
from semspec.workflow import knowledge
from semspec.workflow.context.assembler_model import (
    AssembledContext,
    AssemblyRequest,
    RuleReport,
    Section,
)
from semspec.workflow.context.assembler_sops import matching_sops
from semspec.workflow.context.sop_budget import SopSelection

__all__ = ["AssembledContext", "AssemblyRequest", "Section", "assemble_review_context"]

_MIN_SUMMARY_TOKENS = 16
"""A file summary cut below this many tokens says too little to be worth its space."""


def context_budget(request: AssemblyRequest, count: TokenCounter) -> int:
    """Tokens left for assembled context once the window's fixed parts are taken out."""
    margin = int(request.window_tokens * request.safety_margin + 0.5)
    fixed = request.system_prompt_tokens + request.working_memory_tokens + request.output_tokens
    return request.window_tokens - fixed - count(request.diff) - margin


class _Ledger:
    """Running total of tokens against the budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0

    @property
    def left(self) -> int:
        return max(self.budget - self.used, 0)


def assemble_review_context(
    store: GraphStore, request: AssemblyRequest, count_tokens: TokenCounter = count_tokens
) -> AssembledContext:
    """Assemble the reviewer's context for ``request`` from ``store`` within its token budget."""
    count = count_tokens
    files = sorted(set(request.task_files))
    budget = context_budget(request, count)
    ledger = _Ledger(max(budget, 0))
    notes = [f"budget {budget} tokens for {len(files)} task file(s)"]

    selection = SopSelection(matching_sops(store, files, request.pinned_rules))
    if request.rules_commit:
        notes.append(f"rule files as on the base commit {request.rules_commit[:12]}")
    required = selection.core_tokens(count)
    if required > ledger.left:
        errors = [s.sop_id for s in selection.of("error")]
        ids = ", ".join(errors[:5]) + (f" and {len(errors) - 5} more" if len(errors) > 5 else "")
        raise ContextBudgetError(
            f"the requirements of the error-severity SOP(s) {ids} do not fit the reviewer's "
            f"context (window {request.window_tokens}; error requirements are never cut)",
            needed=required,
            available=max(budget, 0),
        )
    ledger.used += selection.take_error_cores(count)
    ledger.used += selection.take_error_summaries(ledger.left, count)

    decisions = knowledge.decisions_for(store, request.task_id, request.plan_id, files)
    decision_section, decision_blocks = _whole(
        "decisions",
        [(f"{d.task_id}: {d.title}", _decision_block(d)) for d in decisions],
        ledger,
        count,
        "no budget left after the error SOPs' summaries and requirements",
    )

    ledger.used += selection.take_the_rest(ledger.left, count)
    sop_section, sop_blocks = _sop_section(selection, count)

    summaries = request.file_summaries
    if summaries is None:
        summaries = file_summaries(store, files)
    summary_section, summary_blocks = _summaries(files, summaries, ledger, count)

    conventions = knowledge.conventions_for(store, files)
    convention_section, convention_blocks = _whole(
        "conventions",
        [(f"{c.project}/{c.name}", _convention_block(c)) for c in conventions],
        ledger,
        count,
        "conventions are dropped first when the budget runs out",
    )

    sections = [sop_section, decision_section, summary_section, convention_section]
    blocks = [sop_blocks, decision_blocks, summary_blocks, convention_blocks]
    titles = ["SOPs", "Decisions", "File summaries", "Conventions"]
    parts = [
        f"## {title}\n\n" + "\n\n".join(found)
        for title, found in zip(titles, blocks, strict=True)
        if found
    ]
    for section in sections:
        section.share = round(section.tokens / ledger.budget, 4) if ledger.budget else 0.0
        if section.trimmed or section.dropped:
            notes.append(f"{section.name}: {section.reason}")
    return AssembledContext(
        sections=sections,
        text="\n\n".join(parts) + ("\n" if parts else ""),
        budget_tokens=budget,
        used_tokens=ledger.used,
        notes=notes,
        rules=rules_report(selection),
        rules_commit=request.rules_commit,
    )


def rules_report(selection: SopSelection) -> list[RuleReport]:
    """Each matching SOP and rule, given in full, cut, or left out for the budget."""
    out: list[RuleReport] = []
    for sop in selection.sops:
        form = selection.forms.get(sop.sop_id)
        if form is None:
            given, sections = "left_out", 0
        else:
            whole = form == "parent" and sop.taken == len(sop.chunks)
            given, sections = ("full" if whole else "cut"), sop.taken
        out.append(
            RuleReport(
                sop.sop_id,
                sop.origin,
                sop.path,
                sop.severity,
                given,
                sections,
                len(sop.chunks),
            )
        )
    return out


def _sop_section(selection: SopSelection, count: TokenCounter) -> tuple[Section, list[str]]:
    section = Section("sops", tokens=selection.tokens, cuts=list(selection.cuts))
    blocks: list[str] = []
    for sop in selection.sops:
        block = selection.block(sop)
        if block is None:
            section.dropped.append(sop.sop_id)
            continue
        blocks.append(block)
        section.items.append(sop.sop_id)
        # What the selection charged the budget: the head and each section taken, one token
        # of separator each.
        head = sop.parent if selection.forms[sop.sop_id] == "parent" else sop.core
        parts = [head, *sop.chunks[: sop.taken]]
        section.item_tokens[sop.sop_id] = sum(count(part) + 1 for part in parts)
        if selection.forms[sop.sop_id] == "core" or sop.taken < len(sop.chunks):
            section.trimmed.append(sop.sop_id)
    if section.trimmed or section.dropped:
        section.reason = (
            "the window is tight: info SOPs are cut first, then warning SOPs, then the "
            "sections of error SOPs; error requirements are never cut"
        )
    return section, blocks


def _decision_block(d: knowledge.Decision) -> str:
    files = f"\nFiles: {', '.join(d.files)}" if d.files else ""
    return f"### {d.title} (task {d.task_id}, plan {d.plan_id})\n{d.text}{files}"


def _convention_block(c: knowledge.Convention) -> str:
    return f"### {c.name} ({', '.join(c.applies_to)})\n{c.description}"


def _whole(
    name: str,
    entries: list[tuple[str, str]],
    ledger: _Ledger,
    count: TokenCounter,
    reason: str,
) -> tuple[Section, list[str]]:
    """A section of ``(label, block)`` entries, each taken whole while it fits, else dropped."""
    section = Section(name)
    blocks: list[str] = []
    for label, block in entries:
        cost = count(block) + 1
        if cost > ledger.left:
            section.dropped.append(label)
            continue
        _take(section, blocks, ledger, label, block, cost)
    if section.dropped:
        section.reason = reason
    return section, blocks


def _take(
    section: Section, blocks: list[str], ledger: _Ledger, label: str, block: str, cost: int
) -> None:
    ledger.used += cost
    section.tokens += cost
    section.items.append(label)
    section.item_tokens[label] = cost
    blocks.append(block)


def _summaries(
    files: list[str], summaries: dict[str, str], ledger: _Ledger, count: TokenCounter
) -> tuple[Section, list[str]]:
    section = Section("file_summaries")
    blocks: list[str] = []
    present = [f for f in files if summaries.get(f)]
    for position, path in enumerate(present):
        # Each remaining file gets an equal part of what is left, so one long summary cannot
        # crowd out the others.
        allowance = ledger.left // (len(present) - position)
        text = summaries[path]
        block = f"### {path}\n{text}"
        cost = count(block) + 1
        if cost > allowance:
            block, cost = _trim(block, allowance, count)
            if cost < _MIN_SUMMARY_TOKENS:
                section.dropped.append(path)
                continue
            section.trimmed.append(path)
        _take(section, blocks, ledger, path, block, cost)
    if section.trimmed or section.dropped:
        section.reason = "file summaries were cut to an equal share of the budget left"
    return section, blocks


def _trim(block: str, allowance: int, count: TokenCounter) -> tuple[str, int]:
    lines = block.split("\n")
    kept: list[str] = []
    for line in lines:
        candidate = "\n".join([*kept, line, "…"])
        if count(candidate) + 1 > allowance:
            break
        kept.append(line)
    if not kept:
        return "", 0
    text = "\n".join([*kept, "…"])
    return text, count(text) + 1
