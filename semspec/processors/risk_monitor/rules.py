"""The risk rules as one pure function: task states + index + event → new states + signals.

Nothing here touches NATS, clocks or randomness, so every rule is tested without a server and a
replayed event always yields the same signals with the same ids.

Human resolution closes an episode (levels reset, the ladder starts again) on any of:
an ``escalation`` event with ``data.resolved == true``; an ``iteration`` event with a non-empty
``data.resolution``; a ``finished`` event (which also drops the task from the file index).

The loop escalates by itself on its own bounds and publishes ``user.signal.escalate``; its
``escalation`` event (one with ``data.escalation_id``) marks the rules that watch the same bounds
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
from semspec.vocabulary.events import MonitorEvent, UserSignal

MAX_FINGERPRINTS = 64
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
        own.retry_allowance += _granted_retries(event)
    if event.kind == "finished":
        own.active = False
        step.index = index.remove(own.task_id)
        return step
    own.active = True
    if _is_loop_escalation(event):
        own.levels = {**own.levels, **dict.fromkeys(LOOP_BOUND_RULES, TOP)}

    for reason, rule, evidence in _own_triggers(own, event, risk):
        _fire(step, own, reason, rule, evidence, event.at)
    if event.kind == "files":
        _check_conflicts(step, own, event, states, risk)
    return step


def _own_triggers(
    state: TaskState, event: MonitorEvent, risk: RiskConfig
) -> Iterator[tuple[str, RiskRule, dict[str, Any]]]:
    """Rules that look only at the event's own task (conflicts need the index)."""
    data = event.data
    base = {"event_id": event.event_id, "iteration": event.iteration}

    retries = _number(data.get("retries"))
    if retries is not None and event.kind in ("iteration", "escalation"):
        state.retries = int(retries)
        rule = risk.retry_count
        # A human who extended the budget has accepted that many more retries.
        threshold = rule.threshold + state.retry_allowance
        if rule.enabled and retries > threshold:
            yield (
                RiskReason.RETRY_LIMIT,
                rule,
                {**base, "retries": int(retries), "threshold": threshold},
            )

    fingerprint = data.get("fingerprint")
    if isinstance(fingerprint, str) and fingerprint:
        count = state.fingerprints.pop(fingerprint, 0) + 1
        # Re-inserted last, so the oldest fingerprints are the ones dropped at the bound.
        state.fingerprints[fingerprint] = count
        state.fingerprints = dict(list(state.fingerprints.items())[-MAX_FINGERPRINTS:])
        rule = risk.repeated_fingerprint
        if rule.enabled and count >= rule.threshold:
            yield (
                RiskReason.REPEATED_FINGERPRINT,
                rule,
                {**base, "fingerprint": fingerprint, "count": count},
            )

    if event.kind == "context":
        yield from _context_triggers(state, data, risk, base)

    if event.kind == "files":
        yield from _scope_triggers(state, data, risk, base)


def _context_triggers(
    state: TaskState, data: dict[str, Any], risk: RiskConfig, base: dict[str, Any]
) -> Iterator[tuple[str, RiskRule, dict[str, Any]]]:
    used = _number(data.get("tokens_used"))
    window = _number(data.get("window"))
    utilization = _number(data.get("utilization"))
    if utilization is None and used is not None and window:
        utilization = used / window
    if utilization is not None and utilization > 1:
        utilization /= 100  # sent as a percentage
    counts = {"tokens_used": used, "window": window}

    rule = risk.context_utilization
    if utilization is not None:
        state.utilization = utilization
        if rule.enabled and utilization > rule.threshold:
            evidence = {**base, **counts, "utilization": utilization, "threshold": rule.threshold}
            yield RiskReason.CONTEXT_PRESSURE, rule, evidence

    rule = risk.context_exhaustion
    per_iteration = _number(data.get("tokens_per_iteration"))
    remaining = _number(data.get("iterations_remaining"))
    if not rule.enabled:
        return
    if per_iteration and per_iteration > 0 and used is not None and window:
        left = window - used
        if left <= per_iteration * rule.threshold:
            evidence = {
                **base,
                **counts,
                "tokens_per_iteration": per_iteration,
                "tokens_left": left,
            }
            yield RiskReason.CONTEXT_EXHAUSTION, rule, evidence
    elif remaining is not None and remaining <= rule.threshold:
        yield RiskReason.CONTEXT_EXHAUSTION, rule, {**base, "iterations_remaining": remaining}


def _scope_triggers(
    state: TaskState, data: dict[str, Any], risk: RiskConfig, base: dict[str, Any]
) -> Iterator[tuple[str, RiskRule, dict[str, Any]]]:
    files = _paths(data.get("files"))
    task_files = _paths(data.get("task_files"))
    if task_files:
        state.task_files = sorted(set(task_files))
    state.touched = sorted(set(state.touched) | set(files))
    rule = risk.scope_creep
    if not (rule.enabled and state.task_files):
        return  # without the task's files there is no scope to creep out of
    reported = data.get("out_of_scope")
    if isinstance(reported, list):
        # The loop already left out the files ``scope.allow`` permits (tests for the change).
        outside = sorted(set(_paths(reported)))
    else:
        outside = sorted(set(files) - set(state.task_files))  # an event from an older worker
    # The files event carries the whole diff against the base, so a stray file stays in every
    # later iteration's event; only a file not signalled before in this episode is new creep.
    new = sorted(set(outside) - set(state.outside_scope))
    if len(outside) > rule.threshold and new:
        state.outside_scope = sorted({*state.outside_scope, *outside})
        evidence = {**base, "outside": outside, "new": new, "task_files": state.task_files}
        yield RiskReason.SCOPE_CREEP, rule, evidence


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
        evidence = {
            "event_id": event.event_id,
            "files": sorted(shared[task_id]),
            "other_tasks": [t for t in involved if t != task_id],
        }
        _fire(step, state, RiskReason.CONFLICTING_CHANGES, rule, evidence, event.at)


def _indexed_files(event: MonitorEvent) -> list[tuple[str, str]]:
    """(index key, path) for each file the event names.

    Keys carry the repository's identity (its root commit) when the event gives one, so tasks
    in unrelated repositories sharing one stack never look like rivals over a path.
    """
    repo = event.data.get("repo")
    prefix = f"{repo}:" if isinstance(repo, str) and repo else ""
    return [(prefix + path, path) for path in _paths(event.data.get("files"))]


def _fire(
    step: Step, state: TaskState, reason: str, rule: RiskRule, evidence: dict[str, Any], at: str
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
    if emission.published:
        pending = PendingSignal(_signal_body(signal), emission.action)
        state.outbox = [*state.outbox, pending]
    step.emissions.append(emission)


def _signal_body(signal: UserSignal) -> dict[str, Any]:
    """The signal as a JSON-ready dict (what ``UserSignal.to_json`` writes)."""
    return {**vars(signal), "suggested_actions": [vars(a) for a in signal.suggested_actions]}


def _is_resolution(event: MonitorEvent) -> bool:
    data = event.data
    if event.kind == "finished":
        return True
    if event.kind == "escalation":
        return data.get("resolved") is True
    return event.kind == "iteration" and bool(data.get("resolution"))


def _granted_retries(event: MonitorEvent) -> int:
    """Extra retries an ``extend_budget`` resolution granted (0 for any other event)."""
    if event.data.get("action") != "extend_budget":
        return 0
    granted = _number(event.data.get("extra_retries"))
    return max(int(granted), 0) if granted is not None else 0


def _is_loop_escalation(event: MonitorEvent) -> bool:
    """The loop asked a human itself (its escalation events carry an ``escalation_id``)."""
    data = event.data
    return (
        event.kind == "escalation"
        and data.get("resolved") is not True
        and bool(data.get("escalation_id"))
    )


def _copy(state: TaskState) -> TaskState:
    """A copy whose containers can be replaced without touching the caller's state."""
    return replace(
        state,
        levels=dict(state.levels),
        fingerprints=dict(state.fingerprints),
        outbox=list(state.outbox),
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _paths(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, str) and p]
