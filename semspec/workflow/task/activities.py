"""Activities of the task loop: all of its I/O (git, agents, gates, NATS) happens here.

Each activity is safe to re-run: worktree creation is idempotent, the approval commit carries
a key that is checked before committing, and events carry stable ``Nats-Msg-Id`` values.

Loop events go out through the workflow's outbox: a step validates its events and hands them
back in its result, the workflow queues them in its outbox with its own, and ``publish_events``
sends the queue in order, failing (to be retried) while NATS does not acknowledge. A step first
publishes its events itself, just before it returns (``EventPublisher.publish_now``), so they
reach the monitor without waiting for the workflow and the outbox (issue 26); it hands back only
those NATS did not acknowledge, as the agent turns do with their steps. Everything the workflow
queues after the step still goes out after them, so ``finished`` stays last.

The agents' steps are published as they happen by the turn's observer (``step_events.py``),
which also stops an agent at its next step on a halt or pause for the task.

The worker's event loop serves every task, so nothing here blocks it: git and file work are
plain ``def`` activities run on the worker's thread pool; the steps that wait on LLMs, gates
and NATS stay ``async`` and move each blocking call (config, git, graph, tools) to a thread.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2
from temporalio import activity

from semspec.agents.workspace import ToolError
from semspec.core.errors import GitError, ServiceError
from semspec.core.reasons import FallbackReason
from semspec.vocabulary.event_payloads import (
    AgentRole,
    ContextPayload,
    EventPayload,
    FilesPayload,
    GatePayload,
    GateRun,
    ReviewPayload,
)
from semspec.vocabulary.events import LoopEvent, MonitorEvent, UserSignal, monitor_event
from semspec.vocabulary.suggestions import suggested_actions
from semspec.workflow.activity_errors import activity_errors
from semspec.workflow.gates.baseline import GateSetup, base_of, judge_against_base
from semspec.workflow.gates.changed_files import specs_for_change
from semspec.workflow.gates.runner import run_gates
from semspec.workflow.git.commit import commit_task
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.task.agent_turns import (
    awaiting_cancellation,
    cancelled_by_workflow,
    developer_turn,
    gate_fencing,
    reviewer_turn,
    with_heartbeat,
)
from semspec.workflow.task.context_activities import (
    task_file_text,
)
from semspec.workflow.task.iteration_tree import iteration_tree
from semspec.workflow.task.messages import (
    STEP_CANCELLED,
    CommitInput,
    CommitStep,
    DeveloperInput,
    DeveloperStep,
    EnrichInput,
    Enrichment,
    EventContext,
    GatesInput,
    GatesStep,
    PublishBatch,
    PublishedBatch,
    PublishInput,
    ReviewInput,
    ReviewStep,
    Workspace,
    WorkspaceInput,
)
from semspec.workflow.task.publisher import EventPublisher
from semspec.workflow.task.secret_guard import masked, refuse_secrets
from semspec.workflow.task.step_events import TurnObserver, step_outbox

FEEDBACK_CHARS = 8_000
ENRICH_FILE_CHARS = 6_000
EVIDENCE_ALLOWLIST = ("task_files", "gate_logs", "sop_chunks", "decisions", "related_symbols")


@dataclass
class StepEvents:
    """The loop events of one step: queued for the workflow's outbox, or counted as refused."""

    dropped: int = 0
    queued: list[PublishInput] = field(default_factory=list)
    built: list[MonitorEvent] = field(default_factory=list)
    """The same events as published, for ``publish_now`` (not part of the step's result)."""


def _event_id(ctx: EventContext, kind: str, suffix: str = "") -> str:
    base = f"{ctx.workflow_id}/{ctx.run_id}/{ctx.iteration}/{kind}"
    return f"{base}/{suffix}" if suffix else base


class TaskActivities:
    """The task loop's activities, sharing one event publisher per worker."""

    def __init__(self, publisher: EventPublisher | None) -> None:
        self.publisher = publisher

    async def _emit(
        self,
        out: StepEvents,
        ctx: EventContext,
        kind: str,
        payload: Callable[[], EventPayload | dict[str, Any]],
        suffix: str = "",
    ) -> None:
        """Validate one loop event, then queue it in ``out`` for the workflow's outbox.

        ``payload`` is built inside the publisher's validation, so a bad payload is refused and
        counted there rather than failing the activity (see ``publisher.py``).
        """
        if self.publisher is None:
            return

        def event() -> MonitorEvent:
            return monitor_event(
                kind,
                payload(),
                event_id=_event_id(ctx, kind, suffix),
                task_id=ctx.task_id,
                plan_id=ctx.plan_id,
                run_id=ctx.run_id,
                iteration=ctx.iteration,
                at=datetime.now(UTC).isoformat(),
            )

        built = self.publisher.build(event, kind)
        if not isinstance(built, LoopEvent):
            out.dropped += 1
            return
        data = built.data.model_dump(mode="json")
        if suffix:
            data["event_key"] = suffix
        out.queued.append(PublishInput(ctx, kind, data, at=built.at))
        out.built.append(built)

    async def _publish_now(self, out: StepEvents) -> None:
        """Send the step's events at once and keep for the outbox only those NATS did not take.

        The last thing before the step returns: an attempt that fails earlier publishes
        nothing, so the events stored are those of the attempt whose result the workflow gets;
        only an attempt whose result is lost after it published leaves its own (its retry's
        events, under the same ids, are then dropped as duplicates).
        """
        if self.publisher is not None and out.built:
            sent = await self.publisher.publish_now(out.built)
            del out.queued[:sent]

    def _messages(self, inp: PublishInput) -> tuple[list[MonitorEvent | UserSignal], int]:
        """The event of ``inp`` and, for escalations, its user signal, both validated; and how
        many of the two were refused.

        ``data`` is the event's payload, plus ``event_key`` (the event id's suffix) when the
        workflow sends one event kind more than once per iteration; the key is not published.
        """
        assert self.publisher is not None
        data = dict(inp.data)
        suffix = str(data.pop("event_key", ""))
        ctx, at = inp.events, inp.at or datetime.now(UTC).isoformat()

        def event() -> MonitorEvent:
            return monitor_event(
                inp.kind,
                data,
                event_id=_event_id(ctx, inp.kind, suffix),
                task_id=ctx.task_id,
                plan_id=ctx.plan_id,
                run_id=ctx.run_id,
                iteration=ctx.iteration,
                at=at,
            )

        built = [self.publisher.build(event, inp.kind)]
        if level := inp.signal_level:

            def signal() -> UserSignal:
                return UserSignal.model_validate(
                    {
                        "signal_id": _event_id(ctx, f"signal-{level}", suffix),
                        "task_id": ctx.task_id,
                        "plan_id": ctx.plan_id,
                        "level": level,
                        "reason": inp.signal_reason or "",
                        "evidence": data,  # the escalation's payload
                        "suggested_actions": suggested_actions(
                            ctx.task_id, inp.signal_reason or "", level
                        ),
                        "message": inp.signal_message,
                        "at": at,
                    }
                )

            built.append(self.publisher.build(signal, f"signal {level}"))
        messages = [m for m in built if m is not None]
        return messages, len(built) - len(messages)

    def _observer(self, ctx: EventContext, role: AgentRole, budget: float | None) -> TurnObserver:
        """The observer of this activity's agent turn; its steps are keyed by the activity's id,
        which Temporal keeps across retries."""
        return TurnObserver(self.publisher, ctx, role, activity.info().activity_id, budget)

    @activity.defn(name="task.prepare_workspace")
    @activity_errors
    def prepare_workspace(self, inp: WorkspaceInput) -> Workspace:
        """Create (or find) the task's worktree on ``semspec/task/<id>``."""
        info = ensure_worktree(
            Path(inp.repo_path),
            inp.task_id,
            inp.base_branch,
            Path(inp.run_dir) / "worktrees",
            inp.after_commits,
        )
        return Workspace(path=info.path, branch=info.branch, base_commit=info.base_commit)

    @activity.defn(name="task.develop")
    @activity_errors
    async def develop(self, inp: DeveloperInput) -> DeveloperStep:
        """Run the developer agent for one iteration, then read what it changed from git."""
        # The workflow queued this iteration's ``iteration`` event before the step.
        spec, events = inp.spec, StepEvents()
        observer = self._observer(inp.events, "developer", inp.cost_budget_usd)
        try:
            async with observer:
                result, diff, changes = await with_heartbeat(developer_turn(inp, observer))
            await awaiting_cancellation(result.stopped)
        except asyncio.CancelledError:
            if not cancelled_by_workflow():
                raise
            usage = observer.usage
            steps, steps_dropped = step_outbox(observer)
            return DeveloperStep(
                outcome="failed",
                summary="cancelled by a halt or pause",
                tokens_used=usage.input_tokens + usage.output_tokens,
                reason=FallbackReason.ABSTAIN.value,
                files_touched=[],
                diff_hash="",
                insertions=0,
                deletions=0,
                events_dropped=events.dropped + steps_dropped,
                events=[*steps, *events.queued],
                usage=usage,
                stopped=STEP_CANCELLED,
            )
        steps, steps_dropped = step_outbox(observer)
        outside = changes.outside
        ws = inp.workspace
        tree = await asyncio.to_thread(iteration_tree, ws.path, ws.base_commit, diff.files)
        files = FilesPayload(
            files=diff.files,
            task_files=sorted(set(spec.task_files)),
            repo=changes.identity,
            out_of_scope=outside,
            escaping_symlinks=changes.escaping_symlinks,
        )
        await self._emit(events, inp.events, "files", lambda: files)
        # The summary goes into the history and an escalation's question: no secret of the
        # worker's (an agent's own key included) in it.
        summary = await asyncio.to_thread(masked, Path(spec.repo_path), result.summary)
        await self._publish_now(events)
        return DeveloperStep(
            outcome=result.outcome,
            summary=summary,
            tokens_used=result.tokens_used,
            reason=result.reason,
            files_touched=diff.files,
            diff_hash=diff.diff_hash,
            insertions=diff.insertions,
            deletions=diff.deletions,
            out_of_scope=outside,
            events_dropped=events.dropped + steps_dropped,
            events=[*steps, *events.queued],
            usage=result.usage,
            stopped=result.stopped,
            tree=tree,
        )

    @activity.defn(name="task.run_gates")
    @activity_errors
    async def run_gates(self, inp: GatesInput) -> GatesStep:
        """Run the configured gates in the worktree with timeouts and bounded output."""
        log_dir = Path(inp.log_dir) / f"iteration-{inp.events.iteration}"
        fencing = await asyncio.to_thread(gate_fencing, inp)
        worktree = Path(inp.workspace.path)
        gates = await asyncio.to_thread(
            specs_for_change, list(inp.gates), worktree, inp.workspace.base_commit
        )
        report = await run_gates(
            gates,
            worktree,
            log_dir,
            inp.max_output_bytes,
            heartbeat=activity.heartbeat,
            fencing=fencing,
        )
        # What already failed on the base commit does not count (gates/baseline.py).
        report = await judge_against_base(
            report,
            gates,
            worktree,
            base_of(inp.workspace.base_commit, inp.run_dir),
            GateSetup(log_dir, inp.max_output_bytes, activity.heartbeat, fencing),
        )
        runs = [
            GateRun(name=r.name, passed=r.passed, required=r.required, duration_ms=r.duration_ms)
            for r in report.results
        ]
        events = StepEvents()
        await self._emit(events, inp.events, "gate", lambda: GatePayload(results=runs))
        if (context := inp.context) is not None:
            snapshot = asdict(context)
            await self._emit(
                events, inp.events, "context", lambda: ContextPayload.model_validate(snapshot)
            )
        await self._publish_now(events)
        return GatesStep(
            results=list(report.results),
            passed=report.passed,
            feedback=report.feedback_text(FEEDBACK_CHARS),
            summary=report.summary_text(),
            events_dropped=events.dropped,
            events=events.queued,
        )

    @activity.defn(name="task.review")
    @activity_errors
    async def review(self, inp: ReviewInput) -> ReviewStep:
        """Run the reviewer on the diff, gate summary, assembled context and risk flags."""
        observer = self._observer(inp.events, "reviewer", inp.cost_budget_usd)
        try:
            async with observer:
                verdict, used = await with_heartbeat(reviewer_turn(inp, observer))
            await awaiting_cancellation(verdict.stopped)
        except asyncio.CancelledError:
            if not cancelled_by_workflow():
                raise
            usage = observer.usage
            steps, steps_dropped = step_outbox(observer)
            return ReviewStep(
                verdict="request_changes",
                summary="cancelled by a halt or pause",
                findings=[],
                reviewer="",
                reason=FallbackReason.ABSTAIN.value,
                tokens_used=usage.input_tokens + usage.output_tokens,
                events_dropped=steps_dropped,
                events=steps,
                usage=usage,
                stopped=STEP_CANCELLED,
            )
        steps, steps_dropped = step_outbox(observer)
        events = StepEvents()
        await self._emit(
            events,
            inp.events,
            "review",
            lambda: ReviewPayload(
                verdict=verdict.verdict, findings=len(verdict.findings), flagged=bool(inp.flags)
            ),
            suffix="followup" if inp.evidence else "",
        )
        await self._publish_now(events)
        return ReviewStep(
            verdict=verdict.verdict,
            summary=verdict.summary,
            findings=list(verdict.findings),
            reviewer=verdict.reviewer,
            reason=verdict.reason,
            needed_evidence=list(verdict.needed_evidence),
            noted_patterns=[
                {"name": p.name, "description": p.description, "applies_to": p.applies_to}
                for p in verdict.noted_patterns
            ],
            tokens_used=verdict.tokens_used,
            events_dropped=events.dropped + steps_dropped,
            events=[*steps, *events.queued],
            usage=verdict.usage,
            stopped=verdict.stopped,
            context=used,
        )

    @activity.defn(name="task.enrich")
    def enrich(self, inp: EnrichInput) -> Enrichment:
        """Gather at most two allow-listed evidence kinds the reviewer asked for."""
        kinds = [k for k in inp.needed_evidence if k in EVIDENCE_ALLOWLIST][:2]
        parts: list[str] = []
        if "task_files" in kinds:
            for rel in inp.spec.task_files:
                try:
                    text = task_file_text(Path(inp.workspace.path), rel)[:ENRICH_FILE_CHARS]
                    text = masked(Path(inp.spec.repo_path), text)
                except ToolError as exc:
                    text = f"(not shown: {exc})"
                parts.append(f"### {rel}\n{text}")
        if "gate_logs" in kinds:
            for log_path in inp.gate_logs:
                path = Path(log_path)
                if path.is_file():
                    parts.append(f"### {path.name}\n{_tail(path, ENRICH_FILE_CHARS)}")
        text = "\n\n".join(parts)
        digest = hashlib.sha256(text.encode()).hexdigest() if text else ""
        return Enrichment(text=text, fingerprint=digest, kinds=kinds)

    @activity.defn(name="task.commit")
    @activity_errors
    def commit(self, inp: CommitInput) -> CommitStep:
        """Commit the approved worktree once on the task branch (keyed, so retries reuse it)."""
        message = (
            f"semspec: {inp.spec.title}\n\n"
            f"Task {inp.spec.task_id} approved by {inp.approved_by} (reviewer: {inp.reviewer})."
        )
        worktree = Path(inp.workspace.path)
        # Never a secret into git: a change holding one escalates secret_in_change instead.
        refuse_secrets(Path(inp.spec.repo_path), worktree, inp.workspace.base_commit)
        try:
            info = commit_task(worktree, inp.spec.workspace_key, message, inp.commit_key)
        except GitError as exc:
            if "nothing to commit" not in exc.message:
                raise
            # An approved task that changed nothing new (e.g. a later subtask) keeps the tip.
            tip = pygit2.Repository(inp.workspace.path).head.target
            return CommitStep(commit_id=str(tip), created=False)
        return CommitStep(commit_id=info.commit_id, created=info.created)

    @activity.defn(name="task.publish_events")
    @activity_errors
    async def publish_events(self, batch: PublishBatch) -> PublishedBatch:
        """Publish the outbox's first events in order (an escalation's signal right after it).

        Stops at the first event NATS does not acknowledge: with some sent it returns how many,
        with none it raises ``ServiceError`` and Temporal tries again, for as long as it takes.
        """
        if self.publisher is None:
            return PublishedBatch(sent=len(batch.events))
        sent = refused = 0
        for inp in batch.events:
            messages, bad = self._messages(inp)
            try:
                for message in messages:
                    await self.publisher.deliver(message)
            except ServiceError:
                if sent:
                    break  # the workflow drops these from its outbox; the rest comes next call
                raise
            sent, refused = sent + 1, refused + bad
        return PublishedBatch(sent=sent, refused=refused)

    def all(self) -> list[Callable[..., Any]]:
        """Every activity of the task loop, for the worker."""
        return [
            self.prepare_workspace,
            self.develop,
            self.run_gates,
            self.review,
            self.enrich,
            self.commit,
            self.publish_events,
        ]


def _tail(path: Path, chars: int) -> str:
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - chars))
        return handle.read().decode("utf-8", errors="replace")
