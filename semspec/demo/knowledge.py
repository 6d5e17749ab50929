"""Step 1 of the demo, before any task runs: sync the sample's SOPs into its graph (as
``semspec sources sync`` does) and read back what each agent of a task would be given.

The agents' context comes from the very functions the task's activities call
(``review_context`` for the reviewer, ``developer_context`` for the developer), so what the demo
prints is what the reviewer of the task receives. Every store is closed before a task starts:
the worker opens the sample's graph itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from semspec.core.config import load_config
from semspec.core.errors import SemspecError
from semspec.graph.access import open_graph
from semspec.knowledge.sources.catalog import SopDetail, list_sops, show_sop
from semspec.knowledge.sources.sync import SyncReport, sync_sources
from semspec.workflow.task.context_activities import developer_context
from semspec.workflow.task.messages import TaskSpec
from semspec.workflow.task.review_context import review_context


@dataclass
class SopRecord:
    """One synced SOP, and whether all its requirements reach a task's agents."""

    sop_id: str
    severity: str
    applies_to: list[str]
    requirements: list[str]
    in_reviewer_context: bool = False
    in_developer_prompt: bool = False


@dataclass
class KnowledgeRecord:
    """What the sync did and what the agents of the first task get from it."""

    sync: SyncReport = field(default_factory=SyncReport)
    sops: list[SopRecord] = field(default_factory=list)
    task_files: list[str] = field(default_factory=list)

    def reaching_reviewer(self) -> list[SopRecord]:
        """The SOPs whose every requirement is in the reviewer's assembled context."""
        return [s for s in self.sops if s.in_reviewer_context]


def sync_sops(sample: Path) -> tuple[SyncReport, list[SopDetail]]:
    """Sync the sample's SOP files into its graph and read each SOP back from the graph."""
    config = load_config(sample)
    store = open_graph(config, sample)
    try:
        report = sync_sources(store, sample)
        details = [show_sop(store, entry.sop_id) for entry in list_sops(store)]
    finally:
        store.close()
    return report, details


def agents_context(sample: Path, spec: TaskSpec) -> tuple[str, str]:
    """The reviewer's assembled context (before any diff) and the developer's SOP and
    decisions section for ``spec``, as the review and develop activities build them."""
    return review_context(sample, spec, diff=""), developer_context(spec, [])


def knowledge_step(sample: Path, spec: TaskSpec) -> KnowledgeRecord:
    """Sync the SOPs, then check which SOPs' requirements reach ``spec``'s agents in full."""
    report, details = sync_sops(sample)
    if report.failed:
        problems = "; ".join(f"{path}: {problem}" for path, problem in report.failed)
        raise SemspecError(
            f"the sample's SOPs did not sync: {problems}",
            hint="this is a bug in the demo's sample; please report it",
        )
    record = KnowledgeRecord(sync=report, task_files=list(spec.task_files))
    reviewer, developer = agents_context(sample, spec)
    for detail in details:
        reqs = list(detail.requirements)
        record.sops.append(
            SopRecord(
                sop_id=detail.entry.sop_id,
                severity=detail.entry.severity,
                applies_to=list(detail.entry.applies_to),
                requirements=reqs,
                in_reviewer_context=bool(reqs) and all(r in reviewer for r in reqs),
                in_developer_prompt=bool(reqs) and all(r in developer for r in reqs),
            )
        )
    return record
