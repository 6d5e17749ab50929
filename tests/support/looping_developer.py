"""An LLM developer stuck in a loop, run as a task on the embedded stack until it stops.

The fake model (``tests/fakes/llm_server.py``) answers every developer call with the same
``list_dir`` of a folder that does not exist, as a model stuck on a wrong path does: every tool
step fails the same way. Each reply comes ``delay_s`` late and bills what a real provider would
for a conversation that grows by one call and one tool answer per step: a prompt of
``BASE_PROMPT_TOKENS`` plus ``TOKENS_PER_MESSAGE`` for each message sent, and
``OUTPUT_TOKENS`` out.

What the run spent is counted at the fake server, never by the clock: each request is a model
call the agent made, each call's usage the tokens it cost, and a request whose conversation does
not grow from the one before starts a new developer turn (a checkpoint's fresh run, a new
iteration).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any

from semspec.core.config.models import StepRulesConfig
from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, call
from tests.fakes.llm_task import fake_model_entry
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config
from tests.support.scenario_tasks import new_id, submit
from tests.support.stack import Stack

BASE_PROMPT_TOKENS = 1_800
"""The system prompt, the task and its project context."""
TOKENS_PER_MESSAGE = 120
"""A tool call and its short JSON error answer, as the model is sent them again each step."""
OUTPUT_TOKENS = 60
STUCK = call("list_dir", {"path": "no-such-folder"})


def without_step_rules() -> dict[str, Any]:
    """The ``risk`` section that turns every step rule off (the iteration rules stay).

    A rule given in the config replaces its default whole, so each keeps a valid threshold.
    """
    rules = StepRulesConfig().model_dump()
    return {
        "steps": {
            name: {**rule, "enabled": False}
            for name, rule in rules.items()
            if isinstance(rule, dict)
        }
    }


@dataclass
class Calls:
    """The developer's model calls as the fake server answered them, each with ``reply``."""

    reply: FakeReply
    delay_s: float
    messages: list[int] = field(default_factory=list)
    """Messages sent with each call, in arrival order."""
    input_tokens: int = 0
    output_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: RecordedRequest) -> FakeReply:
        sent = len(request.body.get("messages") or [])
        prompt = BASE_PROMPT_TOKENS + TOKENS_PER_MESSAGE * sent
        with self._lock:
            self.messages.append(sent)
            self.input_tokens += prompt
            self.output_tokens += OUTPUT_TOKENS
        return replace(self.reply, usage=(prompt, OUTPUT_TOKENS), delay_s=self.delay_s)

    def per_turn(self) -> list[int]:
        """Model calls of each developer turn, in order."""
        return calls_per_turn(self.messages)


def calls_per_turn(sent: list[int]) -> list[int]:
    """Model calls of each turn, from the messages each call sent (in arrival order): a call
    whose conversation did not grow from the one before starts a new turn."""
    turns: list[int] = []
    previous = None
    for count in sent:
        if previous is None or count <= previous:
            turns.append(0)
        turns[-1] += 1
        previous = count
    return turns


@dataclass(frozen=True)
class LoopRun:
    """What a looping task spent until it stopped for a human."""

    calls_per_turn: list[int]
    input_tokens: int
    output_tokens: int
    seconds: float
    status: dict[str, Any]

    @property
    def model_calls(self) -> int:
        """Model calls the developer made, over every turn."""
        return sum(self.calls_per_turn)

    @property
    def tokens(self) -> int:
        """Tokens the provider billed for them."""
        return self.input_tokens + self.output_tokens


def run_looping_developer(
    stack: Stack, name: str, max_steps: int, delay_s: float, timeout_s: float = 300.0
) -> LoopRun:
    """Submit a task to ``stack`` whose developer loops, wait until it waits for a human (the
    rules halted it, or its turn ran out of steps) and say what it spent."""
    calls = Calls(STUCK, delay_s)
    with FakeLLMServer.for_roles(developer=[calls.answer] * 4 * max_steps) as llm:
        role = {
            "provider": "openai",
            "model": "fake-model",
            "base_url": llm.base_url,
            "max_steps": max_steps,
        }
        config = project_config(stack, name, models={"developer": role, "reviewer": role})
        registry = {"models": {"fake-model": fake_model_entry(llm.base_url)}}
        repo = make_project(stack, name, config, registry=registry)
        task_id = new_id(name)
        started = time.monotonic()
        code, _ = submit(stack, repo, task_id, [FORMAT_PY], wait=False)
        assert code == 0
        status = stack.wait_status(
            task_id, lambda s: s["phase"] == "escalated", timeout_s=timeout_s, repo=repo
        )
        seconds = time.monotonic() - started
    return LoopRun(calls.per_turn(), calls.input_tokens, calls.output_tokens, seconds, status)
