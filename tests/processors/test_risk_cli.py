"""``semspec monitor state`` and ``semspec monitor watch`` end to end, as subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from nats.aio.client import Client as NATS

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.processor import RiskMonitor
from semspec.vocabulary.events import MonitorEvent, UserSignal
from semspec.vocabulary.signal_evidence import ConflictEvidence, RetryLimitEvidence
from semspec.vocabulary.subjects import (
    monitor_subject,
    signal_intake_subject,
)
from tests.support.monitor_events import loop_event


async def semspec(repo: Path, nats_url: str, *args: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "SEMSPEC_SERVICES__NATS__URL": nats_url,
        # Never contacted by these commands, but an endpoint must be configured.
        "SEMSPEC_SERVICES__TEMPORAL__ADDRESS": "127.0.0.1:9",
        "SEMSPEC_LOG_FORMAT": "json",
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "semspec",
        "--repo",
        str(repo),
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def process_one(nc: NATS, ev: MonitorEvent) -> None:
    monitor = RiskMonitor(nc, RiskConfig())
    await monitor.start()
    await nc.jetstream().publish(monitor_subject(ev.kind), ev.to_json())
    stop = asyncio.Event()
    runner = asyncio.create_task(monitor.run(stop, idle_wait=0.05))
    for _ in range(400):
        if monitor.stats.events:
            break
        await asyncio.sleep(0.025)
    stop.set()
    await runner


async def test_monitor_state_prints_what_the_monitor_holds_as_json(
    nc: NATS, nats_url: str, tmp_path: Path
) -> None:
    await process_one(nc, loop_event("context", "cli-task", iteration=2, utilization=0.8))
    proc = await semspec(tmp_path, nats_url, "monitor", "state", "--json")
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    [state] = json.loads(out)
    assert state["task_id"] == "cli-task"
    assert state["levels"] == {"context_pressure": "pause"}
    assert state["events"] == 1


async def test_monitor_state_of_an_unknown_task_says_so_and_exits_2(
    nc: NATS, nats_url: str, tmp_path: Path
) -> None:
    await process_one(nc, loop_event("iteration", "known", retries=0))
    proc = await semspec(tmp_path, nats_url, "monitor", "state", "nope")
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert "error: task 'nope' not found" in err.decode()
    assert "hint:" in err.decode()


async def test_monitor_watch_prints_new_signals_with_their_commands(
    nc: NATS, nats_url: str, tmp_path: Path
) -> None:
    proc = await semspec(tmp_path, nats_url, "monitor", "watch", "--json", "--count", "1")
    signal = UserSignal(
        signal_id="sig-w",
        task_id="w-task",
        level="halt",
        reason="conflicting_changes",
        evidence=ConflictEvidence(event_id="e9", files=["calc.py"], other_tasks=["v-task"]),
        message="task w-task: conflict",
    )
    # The watcher reads only signals newer than itself: publish until it has one.
    for n in range(400):
        await nc.jetstream().publish(
            signal_intake_subject("halt"), signal.to_json(), headers={"Nats-Msg-Id": f"sig-w-{n}"}
        )
        try:
            await asyncio.wait_for(proc.wait(), 0.1)
            break
        except TimeoutError:
            continue
    else:
        proc.kill()
        raise AssertionError("watch printed nothing")
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    printed = UserSignal.from_json(out.splitlines()[0])
    assert (printed.task_id, printed.level, printed.reason) == (
        "w-task",
        "halt",
        "conflicting_changes",
    )


def test_watch_output_for_people_shows_level_task_reason_and_commands() -> None:
    import io

    from rich.console import Console

    from semspec.cli.escalations_watch import show_signal
    from semspec.vocabulary.events import SuggestedAction

    buffer = io.StringIO()
    signal = UserSignal(
        signal_id="sig-p",
        task_id="t9",
        level="escalate",
        reason="retry_limit",
        evidence=RetryLimitEvidence(event_id="e9", iteration=4, retries=4, threshold=3),
        suggested_actions=[
            SuggestedAction(description="stop the task", command="semspec task cancel t9")
        ],
        message="task t9: 4 retries (limit 3) → escalate",
    )
    show_signal(Console(file=buffer, width=200, color_system=None), signal, as_json=False)
    text = buffer.getvalue()
    assert "ESCALATE" in text and "t9" in text and "retry_limit" in text
    assert "stop the task: semspec task cancel t9" in text
