"""The risk rules as one pure function: task states + index + event → new states + signals.

Nothing here touches NATS, clocks or randomness, so every rule is tested without a server and a
replayed event always yields the same signals with the same ids.

Events arrive validated (``semspec.vocabulary.events``), so the rules read typed fields.

A human's answer closes an episode (levels reset, the ladder starts again): the loop publishes
it as an ``escalation`` event whose payload is ``EscalationResolved``; a ``finished`` event does
the same and also drops the task from the file index.

The loop escalates by itself on its own bounds and publishes ``user.signal.escalate``; its
``escalation`` event (``EscalationRaised``) marks the rules that watch the same bounds
(``LOOP_BOUND_RULES``) as escalated for the episode, so a human is asked once, not twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from semspec.core.config.models import RiskConfig, RiskRule
from semspec.core.reasons import RiskReason
from semspec.processors.risk_monitor.ladder import TOP, is_published, next_level, workflow_action
from semspec.processors.risk_monitor.signals import build_signal
from semspec.processors.risk_monitor.state import FileIndex, PendingSignal, TaskState, event_digest
from semspec.processors.risk_monitor.step_rules import forget_steps, step_triggers
from semspec.vocabulary.event_payloads import (
    ContextPayload,
    EscalationRaised,
    EscalationResolved,
    FilesPayload,
)
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.signal_evidence import (
    ConflictEvidence,
    ContextPressureEvidence,
    FingerprintEvidence,
    ProtectedPathEvidence,
    RetryLimitEvidence,
    ScopeCreepEvidence,
    SignalEvidence,
    TokensLeftEvidence,
)

MAX_FINGERPRINTS = 64
MAX_FILE_HOLDERS = 1_000
"""Most active tasks one file of the index may hold; a ``files`` event beyond it is refused
(by the processor), which keeps every stored index value small."""
LOOP_BOUND_RULES: tuple[str, ...] = (RiskReason.RETRY_LIMIT, RiskReason.REPEATED_FINGERPRINT)
"""Rules whose condition the task loop escalates on by itself (retries, unchanged evidence)."""


@dataclass(frozen=True)
class Emission:
    """A rule that climbed to a new level; ``published`` is false for observe/log levels."""

    signal: UserSignal
    action: str
    published: bool


@dataclass
class Step:
    """The result of one event: every changed task state, the index, and what was emitted."""

    states: dict[str, TaskState] = field(default_factory=dict)
    index: FileIndex = field(default_factory=FileIndex)
    emissions: list[Emission] = field(default_factory=list)
    duplicate: bool = False


def related_tasks(event: MonitorEvent, index: FileIndex) -> set[str]:
    """Task ids whose state ``event`` may change: its own, plus those sharing a touched file."""
    tasks = {event.task_id}
    for key, _ in _indexed_files(event):
        tasks.update(index.holders(key))
    return tasks


def apply_event(
    event: MonitorEvent,
    states: Mapping[str, TaskState],
    index: FileIndex,
    risk: RiskConfig,
) -> Step:
    """Evaluate every rule for ``event``; ``states`` must hold the ``related_tasks`` that exist."""
    own = _copy(states.get(event.task_id) or TaskState(event.task_id))
    digest = event_digest(event.event_id)
    if digest in own.seen:
        return Step(index=index, duplicate=True)
    own.seen = [*own.seen, digest][-risk.dedupe_ids :]
    own.events += 1
    own.plan_id = event.plan_id or own.plan_id
    own.last_event_at = event.at or own.last_event_at
    step = Step(states={own.task_id: own}, index=index)

    if _is_resolution(event):
        own.episode += 1
        own.levels = {}
        own.fingerprints = {}
        own.outside_scope = []
        own.protected = []
        own.retry_allowance += _granted_retries(event)
        forget_steps(own)
    if event.kind == "finished":
        own.active = False
        step.index = index.remove(own.task_id)
        return step
    own.active = True
    if _is_loop_escalation(event):
        own.levels = {**own.levels, **dict.fromkeys(LOOP_BOUND_RULES, TOP)}

    for reason, rule, evidence in _own_triggers(own, event, risk):
        _fire(step, own, reason, rule, evidence, event.at)
    if _is_resolution(event):
        for reason, rule, evidence in _later_files_triggers(own, event, risk):
            _fire(step, own, reason, rule, evidence, event.at)
    if event.kind == "files":
        _check_conflicts(step, own, event, states, risk)
    return step


def _own_triggers(
    state: TaskState, event: MonitorEvent, risk: RiskConfig
) -> Iterator[tuple[str, RiskRule, SignalEvidence]]:
    """Rules that look only at the event's own task (conflicts need the index)."""
    where: dict[str, Any] = {"event_id": event.event_id, "iteration": event.iteration}
    raised = event.data if isinstance(event.data, EscalationRaised) else None

    retries = raised.retries if raised else None
    if event.kind == "iteration":
        retries = event.data.retries
    if retries is not None:
        state.retries = retries
        rule = risk.retry_count
        # A human who extended the budget has accepted that many more retries.
        threshold = rule.threshold + state.retry_allowance
        if rule.enabled and retries > threshold:
            too_many = RetryLimitEvidence(**where, retries=retries, threshold=threshold)
            yield RiskReason.RETRY_LIMIT, rule, too_many

    fingerprint = raised.fingerprint if raised else None
    if fingerprint:
        count = state.fingerprints.pop(fingerprint, 0) + 1
        # Re-inserted last, so the oldest fingerprints are the ones dropped at the bound.
        state.fingerprints[fingerprint] = count
        state.fingerprints = dict(list(state.fingerprints.items())[-MAX_FINGERPRINTS:])
        rule = risk.repeated_fingerprint
        if rule.enabled and count >= rule.threshold:
            repeated = FingerprintEvidence(**where, fingerprint=fingerprint, count=count)
            yield RiskReason.REPEATED_FINGERPRINT, rule, repeated

    if event.kind == "context":
        yield from _context_triggers(state, event.data, risk, where)

    if event.kind == "step":
        yield from step_triggers(state, event, risk.steps)

    if event.kind == "files":
        _remember_files(state, event)
        yield from _scope_triggers(state, event.data, risk, where)
        yield from _protected_triggers(state, event.data, risk, where)


def _remember_files(state: TaskState, event: MonitorEvent) -> None:
    """Keep what the task's newest ``files`` event (by the iteration it names) showed."""
    if not isinstance(event.data, FilesPayload) or event.iteration < state.files_iteration:
        return
    state.files_iteration = event.iteration
    state.files_event_id = event.event_id
    state.files_outside = sorted(set(event.data.out_of_scope))
    state.files_semspec = sorted({p for p in event.data.files if p.startswith(SEMSPEC_DIR)})
    state.files_symlinks = sorted(set(event.data.escaping_symlinks))


def _later_files_triggers(
    state: TaskState, event: MonitorEvent, risk: RiskConfig
) -> Iterator[tuple[str, RiskRule, SignalEvidence]]:
    """The scope and protected rules, in the episode a human's answer just started, for a
    ``files`` event of a later iteration than the answer's that arrived before it.

    A step publishes its ``files`` event as it returns while the answer waits in the loop's
    outbox (docs/operations.md), so the retry's change can reach the monitor first; it
    belongs to the new episode all the same, and signals there as if it came after.
    """
    if state.files_iteration <= event.iteration:
        return
    where: dict[str, Any] = {"event_id": state.files_event_id, "iteration": state.files_iteration}
    data = FilesPayload(
        files=state.files_semspec,
        task_files=[],  # the state keeps the task's files and repository already
        repo="",
        out_of_scope=state.files_outside,
        escaping_symlinks=state.files_symlinks,
    )
    yield from _scope_triggers(state, data, risk, where)
    yield from _protected_triggers(state, data, risk, where)


def _context_triggers(
    state: TaskState, data: ContextPayload, risk: RiskConfig, where: dict[str, Any]
) -> Iterator[tuple[str, RiskRule, SignalEvidence]]:
    counts: dict[str, Any] = {"tokens_used": data.tokens_used, "window": data.window}
    state.utilization = data.utilization
    rule = risk.context_utilization
    if rule.enabled and data.utilization > rule.threshold:
        yield (
            RiskReason.CONTEXT_PRESSURE,
            rule,
            ContextPressureEvidence(
                **where, **counts, utilization=data.utilization, threshold=rule.threshold
            ),
        )

    rule = risk.context_exhaustion
    per_iteration = data.tokens_per_iteration
    # Without growth (fewer than two samples, or none) there is nothing to extrapolate.
    if not (rule.enabled and per_iteration and per_iteration > 0):
        return
    left = data.window - data.tokens_used
    if left <= per_iteration * rule.threshold:
        evidence = TokensLeftEvidence(
            **where, **counts, tokens_per_iteration=per_iteration, tokens_left=left
        )
        yield RiskReason.CONTEXT_EXHAUSTION, rule, evidence


def _scope_triggers(
    state: TaskState, data: FilesPayload, risk: RiskConfig, where: dict[str, Any]
) -> Iterator[tuple[str, RiskRule, SignalEvidence]]:
    if data.task_files:
        state.task_files = sorted(set(data.task_files))
    state.touched = sorted(set(state.touched) | set(data.files))
    state.repo = data.repo or state.repo
    rule = risk.scope_creep
    if not (rule.enabled and state.task_files):
        return  # without the task's files there is no scope to creep out of
    # The loop already left out the files ``scope.allow`` permits (tests for the change).
    outside = sorted(set(data.out_of_scope))
    # The files event carries the whole diff against the base, so a stray file stays in every
    # later iteration's event; only a file not signalled before in this episode is new creep.
    new = sorted(set(outside) - set(state.outside_scope))
    if len(outside) > rule.threshold and new:
        state.outside_scope = sorted({*state.outside_scope, *outside})
        evidence = ScopeCreepEvidence(
            **where, outside=outside, new=new, task_files=state.task_files
        )
        yield RiskReason.SCOPE_CREEP, rule, evidence


SEMSPEC_DIR = ".semspec/"
"""Changes under this prefix alter semspec's own config, prompts and sources for every task."""


def _protected_triggers(
    state: TaskState, data: FilesPayload, risk: RiskConfig, where: dict[str, Any]
) -> Iterator[tuple[str, RiskRule, SignalEvidence]]:
    rule = risk.protected_paths
    if not rule.enabled:
        return
    semspec_paths = sorted({p for p in data.files if p.startswith(SEMSPEC_DIR)})
    symlinks = sorted(set(data.escaping_symlinks))
    # Like scope creep: the event repeats the whole diff, so only a path not yet signalled in
    # this episode climbs the ladder again.
    new = sorted({*semspec_paths, *symlinks} - set(state.protected))
    if len(semspec_paths) + len(symlinks) > rule.threshold and new:
        state.protected = sorted({*state.protected, *new})
        evidence = ProtectedPathEvidence(
            **where, semspec_paths=semspec_paths, escaping_symlinks=symlinks, new=new
        )
        yield RiskReason.PROTECTED_PATH, rule, evidence


def _check_conflicts(
    step: Step,
    own: TaskState,
    event: MonitorEvent,
    states: Mapping[str, TaskState],
    risk: RiskConfig,
) -> None:
    files = _indexed_files(event)
    step.index = step.index.add(own.task_id, [key for key, _ in files])
    rule = risk.conflicting_changes
    if not rule.enabled:
        return
    shared: dict[str, set[str]] = {}  # task id → files it shares with this event
    for key, path in files:
        holders = step.index.holders(key)
        if len(holders) >= max(rule.threshold, 2):
            for task in holders:
                shared.setdefault(task, set()).add(path)
    if not shared:
        return
    involved = sorted(shared)
    for task_id in involved:
        state = step.states.get(task_id) or _copy(states.get(task_id) or TaskState(task_id))
        step.states[task_id] = state
        evidence = ConflictEvidence(
            event_id=event.event_id,
            files=sorted(shared[task_id]),
            other_tasks=[t for t in involved if t != task_id],
        )
        _fire(step, state, RiskReason.CONFLICTING_CHANGES, rule, evidence, event.at)


def _indexed_files(event: MonitorEvent) -> list[tuple[str, str]]:
    """(index key, path) for each file the event names.

    Keys carry the repository's identity (its root commit) when the event gives one, so tasks
    in unrelated repositories sharing one stack never look like rivals over a path.
    """
    if event.kind != "files":
        return []
    paths = [path for path in event.data.files if path]
    return list(zip(index_keys(event.data.repo, paths), paths, strict=True))


def index_keys(repo: str, paths: list[str]) -> list[str]:
    """The index keys of ``paths`` in the repository whose identity is ``repo``."""
    prefix = f"{repo}:" if repo else ""
    return [prefix + path for path in paths if path]


def _fire(
    step: Step,
    state: TaskState,
    reason: str,
    rule: RiskRule,
    evidence: SignalEvidence,
    at: str,
) -> None:
    """Climb the rule's ladder for ``state``; record and emit only a level not reached before."""
    level = next_level(rule.level, state.levels.get(reason))
    if level is None:
        return
    state.levels = {**state.levels, reason: level}
    signal = build_signal(
        task_id=state.task_id,
        plan_id=state.plan_id,
        reason=str(reason),
        level=level,
        episode=state.episode,
        evidence=evidence,
        at=at,
    )
    emission = Emission(signal, workflow_action(level, reason), is_published(level))
    if emission.action == "pause":
        state.step_paused = True  # the rest of this turn's steps are observed only (step_rules)
    if emission.published:
        pending = PendingSignal(_signal_body(signal), emission.action)
        state.outbox = [*state.outbox, pending]
    step.emissions.append(emission)


def _signal_body(signal: UserSignal) -> dict[str, Any]:
    """The signal as a JSON-ready dict (what ``UserSignal.to_json`` writes)."""
    return signal.model_dump(mode="json")


def _is_resolution(event: MonitorEvent) -> bool:
    return event.kind == "finished" or isinstance(event.data, EscalationResolved)


def _granted_retries(event: MonitorEvent) -> int:
    """Extra retries an ``extend_budget`` answer granted (0 for any other event)."""
    data = event.data
    if isinstance(data, EscalationResolved) and data.action == "extend_budget":
        return data.extra_retries
    return 0


def _is_loop_escalation(event: MonitorEvent) -> bool:
    """The loop asked a human itself (``EscalationRaised`` is only ever the loop's)."""
    return isinstance(event.data, EscalationRaised)


def _copy(state: TaskState) -> TaskState:
    """A copy whose containers can be replaced without touching the caller's state."""
    return replace(
        state,
        levels=dict(state.levels),
        fingerprints=dict(state.fingerprints),
        outbox=list(state.outbox),
    )
