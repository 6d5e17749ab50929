"""semspec's own recorded events: one published loop event per line (JSONL).

Each line is validated by the same models the live monitor uses (``event_from_json``), so a
recording replays only what the monitor could have received. A file holding several tasks
gives one run per task, in the order each task first appears.
"""

from __future__ import annotations

from pydantic import ValidationError

from semspec.processors.risk_monitor.replay.runs import MAX_RUN_STEPS, RecordedRun, ReplayFileError
from semspec.vocabulary.events import MonitorEvent, event_from_json, validation_summary


def event_runs(name: str, text: str) -> list[RecordedRun]:
    """The runs of a JSONL file of loop events; raises ``ReplayFileError`` at the first bad line."""
    by_task: dict[str, list[MonitorEvent]] = {}
    steps = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = event_from_json(line)
        except ValidationError as exc:
            raise ReplayFileError(name, validation_summary(exc), line=number) from None
        except RecursionError:
            raise ReplayFileError(name, "JSON nested too deeply", line=number) from None
        steps += event.kind == "step"
        if steps > MAX_RUN_STEPS:
            raise ReplayFileError(name, f"more than {MAX_RUN_STEPS} steps", line=number)
        by_task.setdefault(event.task_id, []).append(event)
    if not by_task:
        raise ReplayFileError(name, "no events")
    several = len(by_task) > 1
    return [
        RecordedRun(
            name=f"{name}#{task}" if several else name,
            format="semspec",
            events=events,
            dollars_from="steps",
        )
        for task, events in by_task.items()
    ]
