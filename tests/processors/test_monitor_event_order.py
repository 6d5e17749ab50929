"""The monitor's signals do not depend on whether a step's ``files`` event arrives before or
after the loop's own event of its turn (docs/operations.md: a step publishes its events as it
returns, while the loop's go through the workflow's outbox). Real NATS, the real monitor."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS

from semspec.vocabulary.events import MonitorEvent, UserSignal
from tests.processors.test_risk_monitor import publish, signals_on_stream
from tests.support.monitor_events import loop_event
from tests.support.polling import until
from tests.support.running_monitor import Running

CREEP = {"files": ["README.md", "docs/notes.md"], "task_files": ["README.md"]}


async def _signals_after(nc: NATS, events: list[MonitorEvent]) -> list[UserSignal]:
    async with Running(nc) as monitor:
        for event in events:
            await publish(nc, event)
        await until(lambda: monitor.stats.events == len(events), "events processed", 10.0)
    return await signals_on_stream(nc)


async def test_a_files_event_before_its_iteration_event_is_flagged_once(nc: NATS) -> None:
    events = [loop_event("files", **CREEP), loop_event("iteration")]
    signals = await _signals_after(nc, events)
    assert [(s.reason, s.level) for s in signals] == [("scope_creep", "warn")]
    assert signals[0].evidence.model_dump()["outside"] == ["docs/notes.md"]


@pytest.mark.parametrize("retry_files_first", [False, True], ids=["answer-first", "files-first"])
async def test_a_retrys_creep_is_flagged_again_in_the_new_episode_whatever_arrives_first(
    nc: NATS, retry_files_first: bool
) -> None:
    answer = loop_event("escalation", iteration=1, resolved=True)
    retry = [loop_event("iteration", iteration=2), loop_event("files", iteration=2, **CREEP)]
    after = [*retry[1:], answer, retry[0]] if retry_files_first else [answer, *retry]
    first = [loop_event("iteration"), loop_event("files", **CREEP), loop_event("escalation")]
    signals = await _signals_after(nc, [*first, *after])
    creep = [s for s in signals if s.reason == "scope_creep"]
    assert [(s.level, s.evidence.model_dump()["iteration"]) for s in creep] == [
        ("warn", 1),
        ("warn", 2),
    ]
    assert creep[0].signal_id != creep[1].signal_id
