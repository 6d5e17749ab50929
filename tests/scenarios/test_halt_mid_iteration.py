"""Scenario: an LLM developer that repeats the same failing tool call is stopped inside its turn.

The fake model asks for the same ``list_dir`` of a folder that does not exist at every step,
each reply 0.3 s slow, as a model stuck on a wrong path does. Every call and tool call is a step
event; the stack's risk monitor sees the same failure three times (``risk.steps.repeated_failure``)
and pauses the task: the agent stops at its next step, the loop checkpoints and continues in a
fresh run. The fresh run loops again, the rule climbs to ``halt`` (ADR 0006), and the agent stops
for good: the model gets no call the agent made after the halt reached it, and the task waits for
a human naming the rule, long before the developer's step limit.

When the halt goes out, one call may already be on its way (the agent asked for it right after
the step that completed the pattern, before the monitor had seen that step); any call made after
the halt arrived would have to wait for that call's slow reply first. So every call must reach
the fake server less than one reply's delay after the halt.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from types import TracebackType

import nats
from nats.aio.msg import Msg

from semspec.vocabulary.subjects import signal_subject
from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, call, slow
from tests.fakes.llm_task import fake_model_entry
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config
from tests.support.scenario_tasks import entries, new_id, submit
from tests.support.stack import Stack

MAX_STEPS = 40
DELAY_S = 0.3
STUCK = slow(call("list_dir", {"path": "no-such-folder"}), DELAY_S)


class HaltWatch:
    """Listens on ``user.signal.halt`` in a thread of its own and notes when (``monotonic``) the
    first halt for ``task_id`` arrives."""

    def __init__(self, nats_url: str, task_id: str) -> None:
        self.nats_url = nats_url
        self.task_id = task_id
        self.halted_at: float | None = None
        self._ready = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)

    async def _watch(self) -> None:
        nc = await nats.connect(self.nats_url, connect_timeout=5)

        async def seen(msg: Msg) -> None:
            if self.halted_at is None and json.loads(msg.data).get("task_id") == self.task_id:
                self.halted_at = time.monotonic()

        try:
            await nc.subscribe(signal_subject("halt"), cb=seen)
            await nc.flush()
            self._ready.set()
            while not self._done.is_set():
                await asyncio.sleep(0.05)
        finally:
            await nc.close()

    def __enter__(self) -> HaltWatch:
        self._thread.start()
        assert self._ready.wait(10), "could not subscribe to the halt signals"
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        self._thread.join(10)


def test_a_developer_repeating_a_failing_call_is_halted_mid_iteration_and_the_model_is_not_called_again(  # noqa: E501
    stack: Stack,
) -> None:
    arrivals: list[float] = []

    def stuck(_request: RecordedRequest) -> FakeReply:
        arrivals.append(time.monotonic())
        return STUCK

    with FakeLLMServer.for_roles(developer=[stuck] * 2 * MAX_STEPS) as llm:
        role = {
            "provider": "openai",
            "model": "fake-model",
            "base_url": llm.base_url,
            "max_steps": MAX_STEPS,
        }
        config = project_config(stack, "stuck", models={"developer": role, "reviewer": role})
        registry = {"models": {"fake-model": fake_model_entry(llm.base_url)}}
        repo = make_project(stack, "stuck", config, registry=registry)
        task_id = new_id("stuck")
        with HaltWatch(stack.nats_url(), task_id) as watch:
            code, _ = submit(stack, repo, task_id, [FORMAT_PY], wait=False)
            assert code == 0
            status = stack.wait_status(
                task_id, lambda s: s["phase"] == "escalated", timeout_s=150, repo=repo
            )
            time.sleep(2.0)  # a call still coming after the halt would arrive by now

    halted_at = watch.halted_at
    assert halted_at is not None, json.dumps(status)[-3000:]
    late = [round(t - halted_at, 3) for t in arrivals if t > halted_at]
    assert all(delay < DELAY_S for delay in late), late  # at most the call already under way
    assert len(late) <= 1, late
    escalation = status["pending_escalation"]
    assert (escalation["source"], escalation["reason"]) == ("halt", "repeated_failure")
    assert escalation["message"].endswith("the running developer step was cancelled")
    # First a pause (checkpoint, a fresh run in iteration 2), then the halt: each inside the
    # developer's turn, so no gate ever ran.
    assert entries(status, "checkpoint"), status["log"]
    assert status["iteration"] == 2 and not entries(status, "gate")
    assert len(arrivals) < MAX_STEPS  # stopped by the rules in both runs, not the step limit
    # The two stopped turns still count what they spent: every answered call's tokens (10 in
    # each fake reply), all but the call under way at each stop.
    answered = status["usage"]["input_tokens"] // 10
    assert len(arrivals) - 2 <= answered <= len(arrivals), (answered, len(arrivals))

    # The run's steps, saved from the stack and backtested, fire the rule the live monitor fired,
    # first at pause and then at halt.
    saved = stack.cli("monitor", "events", task_id, "--kind", "step", repo=repo)
    assert saved.returncode == 0, saved.stderr
    lines = saved.stdout.splitlines()
    assert lines and all(json.loads(line)["kind"] == "step" for line in lines)
    record = repo.parent / "stuck.steps.jsonl"
    record.write_text(saved.stdout, encoding="utf-8")
    replayed = stack.cli_json("monitor", "replay", str(record), repo=repo)
    (run,) = replayed["runs"]
    fired = [(f["rule"], f["level"]) for f in run["firings"]]
    assert fired == [("repeated_failure", "pause"), ("repeated_failure", "halt")], fired
    assert run["stopped_at"] is not None
