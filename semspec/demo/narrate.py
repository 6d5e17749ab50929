"""The demo's words: the SOP step, the callouts that name a step as it happens, the recap.

Pure text from records, so the wording can be read (and tested) without a stack.
"""

from __future__ import annotations

from semspec.demo.knowledge import KnowledgeRecord
from semspec.demo.steps import NO_NEW_EVIDENCE, PRESSURE_CHECKPOINT, step_title
from semspec.demo.summary import StepRecord, TaskRecord, is_scope_flag
from semspec.workflow.task.messages import LogEntry

MARK = ">>"
"""Starts every line that names one of the demo's steps."""


def knowledge_lines(record: KnowledgeRecord, sops_dir: str) -> list[str]:
    """What the sync did and which SOPs reach the first task's agents."""
    sync = record.sync
    counts = [
        f"{len(sync.added)} added",
        f"{len(sync.updated)} updated",
        f"{len(sync.skipped)} unchanged",
    ]
    lines = [
        f"\n{MARK} {step_title('sops')}",
        f"synced {sops_dir}/ into the sample's graph (as `semspec sources sync`): "
        + ", ".join(counts),
    ]
    for sop in record.sops:
        count = len(sop.requirements)
        lines.append(
            f"  {sop.sop_id} ({sop.severity}, applies to {', '.join(sop.applies_to)}): "
            f"{count} requirement{'s' if count != 1 else ''}"
        )
    files = ", ".join(record.task_files)
    lines.append(
        f"what task 1's agents get for {files}, built by the functions its review and develop "
        "steps call:"
    )
    for sop in record.sops:
        if sop.in_reviewer_context:
            where = "the reviewer's context" + (
                " and the developer's prompt" if sop.in_developer_prompt else ""
            )
            lines.append(f"  {sop.sop_id}: every requirement is in {where}")
            lines += [f"    {n}. {req}" for n, req in enumerate(sop.requirements, 1)]
        else:
            lines.append(f"  {sop.sop_id}: left out (its applies_to matches none of the files)")
    return lines


def task_heading(number: int, task_id: str, title: str, shows: tuple[str, ...]) -> str:
    """The line that opens a task, naming the steps it is there to show."""
    steps = ", ".join(step_title(name).split(" (")[0] for name in shows)
    return f"\ntask {number} {task_id}: {title} (shows {steps})"


def callouts(entry: LogEntry, record: TaskRecord) -> list[str]:
    """Lines naming the steps a new log line shows (none for most lines)."""
    lines = []
    if is_scope_flag(entry):
        lines.append(
            f"  {MARK} {step_title('risk_signal')}: the risk monitor flagged the task; "
            "the workflow hands the flag to every later reviewer call"
        )
    if entry.kind == "review":
        cited = [c for c in record.sop_citations if c.iteration == entry.iteration]
        if cited:
            names = ", ".join(dict.fromkeys(c.sop_id for c in cited))
            lines.append(
                f"  {MARK} {step_title('sops')}: the reviewer cites SOP {names}: {cited[0].message}"
            )
        if record.reviews_after_flag[:1] == [entry.iteration]:
            lines.append(f"  {MARK} {step_title('risk_signal')}: this reviewer call had the flag")
    if entry.kind == "checkpoint" and entry.message.startswith(PRESSURE_CHECKPOINT):
        lines.append(
            f"  {MARK} {step_title('checkpoint')}: context pressure; the worktree is saved on "
            "a checkpoint branch and the task continues as a new run with a fresh context"
        )
    if entry.kind == "escalation" and NO_NEW_EVIDENCE in entry.message:
        lines.append(
            f"  {MARK} {step_title('escalation')}: same diff, same gate failure: no retry, "
            "a human decides"
        )
    return lines


def recap_lines(steps: list[StepRecord]) -> list[str]:
    """The closing list: each step, whether this run showed it, and the evidence."""
    lines = ["\nwhat this run showed:"]
    for step in steps:
        mark = "yes" if step.shown else "NO "
        where = f" (task {step.task})" if step.task else ""
        lines.append(f"  [{mark}] {step.number}. {step.title}{where}")
        if step.detail:
            lines.append(f"        {step.detail}")
    return lines
