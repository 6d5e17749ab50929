"""What an agent reports of each step it takes, and how it learns it must stop before the next.

An agent's turn (one developer iteration, one review) is many steps: a model call, then the tool
calls the model asked for. The agent hands each finished step to a ``StepObserver`` (the task
loop's activity publishes it as ``agent.monitor.step``) and asks the observer, before every step,
whether it must stop: a pause or halt from the risk monitor, or a spent dollar budget, takes
effect at the next step rather than at the end of the turn.

The observer's methods never block and never raise: publishing is the observer's business, and a
step is never slowed by more than bookkeeping.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from semspec.vocabulary.event_payloads import AgentRole, StepKind, StepPayload
from semspec.vocabulary.step_text import output_digest, text_digest

StopReason = Literal["halt", "pause", "cost_budget", "unknown_price"]
"""Why an agent must stop before its next step."""


def action_hash(tool: str, arguments: Any) -> str:
    """A short hash of a tool call: its name and its arguments as normalized JSON.

    Key order and whitespace do not matter, so the same call spelled twice hashes the same.
    """
    text = json.dumps([tool, arguments], sort_keys=True, separators=(",", ":"), default=str)
    return text_digest(text)


def observation_hash(text: str) -> str:
    """A short hash of what a step returned (tool output, or the model's text).

    Timings, timestamps and memory addresses do not count (``semspec.vocabulary.step_text``):
    a test failing the same way twice hashes the same however long each run took, exactly as
    ``semspec monitor replay`` hashes it.
    """
    return output_digest(text)


@dataclass(frozen=True)
class StepRecord:
    """One finished step; the same fields as the ``step`` event's payload."""

    role: AgentRole
    step: int
    kind: StepKind
    action_hash: str
    observation_hash: str
    tool: str | None = None
    error: bool = False
    error_kind: str | None = None
    wait: bool = False
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    duration_ms: float = 0.0

    def payload(self) -> StepPayload:
        """The event payload (validated)."""
        return StepPayload(
            role=self.role,
            step=self.step,
            kind=self.kind,
            tool=self.tool,
            action_hash=self.action_hash,
            observation_hash=self.observation_hash,
            error=self.error,
            error_kind=self.error_kind,
            wait=self.wait,
            model=self.model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            cost_usd=self.cost_usd,
            duration_ms=self.duration_ms,
        )


class StepObserver(Protocol):
    """Receives an agent's steps and tells it when to stop."""

    def step(self, record: StepRecord) -> None:
        """Take a finished step; must not block or raise."""

    def stop_requested(self) -> StopReason | None:
        """Why the agent must stop before its next step, or None to go on."""


class NoObserver:
    """The observer of agents run outside a task loop (tests, ``semspec review context``)."""

    def step(self, record: StepRecord) -> None:
        """Forget the step."""

    def stop_requested(self) -> StopReason | None:
        """Never stop."""
        return None
