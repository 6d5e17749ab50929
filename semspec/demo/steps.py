"""The four things the demo sets out to show, judged from what the run recorded.

Pure: it reads the SOP sync's record and the tasks' records, so a run that lost a step (a flag
that never reached the reviewer, a checkpoint that did not happen) is reported as such and the
demo exits 1 instead of claiming it.
"""

from __future__ import annotations

from collections.abc import Callable

from semspec.demo.knowledge import KnowledgeRecord
from semspec.demo.summary import SCOPE_CREEP, StepRecord, TaskRecord

CHECKPOINT_BRANCH = "semspec/checkpoint/"
PRESSURE_CHECKPOINT = "context "
"""How the log's checkpoint line starts when context pressure caused it."""
NO_NEW_EVIDENCE = "no_new_evidence"

STEPS = (
    (1, "sops", "SOPs synced into the graph and cited by the reviewer"),
    (2, "risk_signal", "a risk-monitor signal reaches the reviewer"),
    (3, "escalation", "the evidence fingerprint escalates and a human answers"),
    (4, "checkpoint", "a checkpoint under context pressure, then approval"),
)


def sops_step(knowledge: KnowledgeRecord, tasks: list[TaskRecord]) -> tuple[str | None, str]:
    """Task key and detail when a synced SOP reached the reviewer's context and was cited."""
    reaching = {s.sop_id for s in knowledge.reaching_reviewer()}
    for task in tasks:
        for cite in task.sop_citations:
            if cite.sop_id in reaching:
                synced = len(knowledge.sops)
                return task.key, (
                    f"{synced} SOPs synced; {cite.sop_id} in the reviewer's context for "
                    f"{', '.join(knowledge.task_files)}; cited in iteration {cite.iteration}: "
                    f"{cite.message}"
                )
    return None, ""


def risk_signal_step(tasks: list[TaskRecord]) -> tuple[str | None, str]:
    """Task key and detail when a scope-creep flag was held before a reviewer call."""
    for task in tasks:
        flags = [f for f in task.flags if f.startswith(SCOPE_CREEP)]
        if flags and task.reviews_after_flag:
            return task.key, (
                f"{flags[0]}; carried into the reviewer's call in iteration "
                f"{task.reviews_after_flag[0]}"
            )
    return None, ""


def escalation_step(tasks: list[TaskRecord], yes: bool) -> tuple[str | None, str]:
    """Task key and detail when a no_new_evidence escalation was raised and answered (with
    ``--yes``) or left waiting for the user (without)."""
    for task in tasks:
        for esc in task.escalations:
            if esc.reason != NO_NEW_EVIDENCE or not esc.fingerprint:
                continue
            fingerprint = esc.fingerprint[:12]
            where = f"{NO_NEW_EVIDENCE} in iteration {esc.iteration} (fingerprint {fingerprint})"
            if esc.resolution is not None and task.state == "approved":
                return task.key, f"{where}; a human answered {esc.resolution}; approved"
            if not yes and esc.resolution is None and task.state == "escalated":
                return task.key, f"{where}; waiting for your answer"
    return None, ""


def checkpoint_step(tasks: list[TaskRecord]) -> tuple[str | None, str]:
    """Task key and detail when context pressure made a task save a checkpoint branch, go on
    in a fresh run and be approved (a checkpoint for another reason, such as a pause from the
    risk monitor, does not count)."""
    for task in tasks:
        saved = [
            c
            for c in task.checkpoints
            if c.startswith(PRESSURE_CHECKPOINT) and CHECKPOINT_BRANCH in c
        ]
        if saved and task.resumed and task.state == "approved":
            return task.key, f"{saved[0]}; continued in a fresh run; approved"
    return None, ""


def judge_steps(knowledge: KnowledgeRecord, tasks: list[TaskRecord], yes: bool) -> list[StepRecord]:
    """One record per step, in order, saying whether this run showed it."""
    judges: dict[str, Callable[[], tuple[str | None, str]]] = {
        "sops": lambda: sops_step(knowledge, tasks),
        "risk_signal": lambda: risk_signal_step(tasks),
        "escalation": lambda: escalation_step(tasks, yes),
        "checkpoint": lambda: checkpoint_step(tasks),
    }
    records = []
    for number, name, title in STEPS:
        task, detail = judges[name]()
        records.append(StepRecord(number, name, title, task is not None, task, detail))
    return records


def step_title(name: str) -> str:
    """``step N (title)`` for a step's name."""
    for number, known, title in STEPS:
        if known == name:
            return f"step {number} ({title})"
    raise KeyError(name)
