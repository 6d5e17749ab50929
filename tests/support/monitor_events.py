"""Loop events for the risk monitor's tests: a valid event of any kind, naming only what matters.

``loop_event("context", utilization=0.9)`` fills every other field of the payload the way the
task loop would, and the result is validated by the real models, so a test can never feed the
monitor an event the loop could not send.
"""

from __future__ import annotations

import itertools
from typing import Any

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.rules import apply_event, related_tasks
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.vocabulary.events import MonitorEvent, UserSignal, monitor_event
from semspec.vocabulary.signal_evidence import ContextPressureEvidence

_ids = itertools.count()

RAISED = {
    "reason": "budget_exhausted",
    "retries": 0,
    "fingerprint": None,
    "question": "what now?",
    "source": "loop",
    "escalation_id": "t1-1",
}
RESOLVED = {"resolved": True, "action": "retry", "extra_retries": 0, "escalation_id": "t1-1"}


def payload(kind: str, **data: Any) -> dict[str, Any]:
    """A complete payload of ``kind``: the given fields, the rest as the loop would send them."""
    match kind:
        case "iteration":
            return {"phase": "developer", "retries": 0, **data}
        case "gate":
            return {"results": [], **data}
        case "review":
            return {"verdict": "approve", "findings": 0, "flagged": False, **data}
        case "context":
            return _context(data)
        case "files":
            files, task_files = data.get("files", []), data.get("task_files", [])
            # What the loop reports when ``scope.allow`` permits nothing more.
            outside = sorted(set(files) - set(task_files)) if task_files else []
            return {"files": [], "task_files": [], "repo": "", "out_of_scope": outside, **data}
        case "escalation":
            return {**(RESOLVED if data.get("resolved") else RAISED), **data}
        case "finished":
            return {"outcome": "approved", "commit": None, "reason": None, **data}
        case "step":  # the required fields; tokens, cost and timing have defaults
            return {
                "role": "developer",
                "step": 1,
                "kind": "tool",
                "tool": "bash",
                "action_hash": "a1",
                "observation_hash": "o1",
                "error": False,
                **data,
            }
    raise ValueError(f"no such event kind: {kind}")


def _context(data: dict[str, Any]) -> dict[str, Any]:
    window = data.get("window", 10_000)
    if "utilization" in data:
        used = data.get("tokens_used", round(data["utilization"] * window))
    else:
        used = data.get("tokens_used", 0)
    return {
        "iteration": 1,
        "tokens_used": used,
        "window": window,
        "utilization": used / window,
        "tokens_per_iteration": None,
        "iterations_remaining": None,
        "pressure": "green",
        **data,
    }


def loop_event(
    kind: str,
    task: str = "t1",
    *,
    event_id: str | None = None,
    iteration: int = 1,
    **data: Any,
) -> MonitorEvent:
    """A valid loop event of ``kind`` for ``task`` (``data`` overrides payload fields)."""
    return monitor_event(
        kind,
        payload(kind, **data),
        event_id=event_id or f"ev-{next(_ids)}",
        task_id=task,
        run_id="run",
        iteration=iteration,
        at="2026-01-01T00:00:00Z",
    )


def one_monitor(
    events: list[MonitorEvent], risk: RiskConfig
) -> tuple[set[str], dict[str, TaskState]]:
    """The ids of the signals one monitor publishes for ``events`` in this order, and the task
    states it leaves: the rules themselves, run over the events one by one."""
    states: dict[str, TaskState] = {}
    index = FileIndex()
    ids: set[str] = set()
    for ev in events:
        related = related_tasks(ev, index)
        step = apply_event(ev, {t: states[t] for t in related if t in states}, index, risk)
        states.update(step.states)
        index = step.index
        ids.update(e.signal.signal_id for e in step.emissions if e.published)
    return ids, states


def pause_signal(task_id: str, signal_id: str = "sig-1") -> UserSignal:
    """A context-pressure pause for ``task_id``, as the monitor would send it to the bridge."""
    return UserSignal(
        signal_id=signal_id,
        task_id=task_id,
        level="pause",
        reason="context_pressure",
        evidence=ContextPressureEvidence(
            event_id="e1", iteration=1, tokens_used=8, window=10, utilization=0.8, threshold=0.7
        ),
        message="m",
    )
