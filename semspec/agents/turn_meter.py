"""One agent turn's steps as its observer sees them, and the dollars they cost.

The LLM developer and reviewer take their steps through a ``TurnMeter``: it asks, before each
step, whether the turn must stop (the observer's halt or pause, then the turn's dollar budget),
numbers each finished step, prices its tokens with the registry's price and hands the record to
the observer. What it adds up is the turn's ``TurnUsage``. With telemetry on, each step is also a
span (``chat``, ``execute_tool``) of the task's trace, a child of the activity's.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from semspec.agents.protocol import (
    DeveloperRequest,
    DeveloperResult,
    ReviewRequest,
    ReviewVerdict,
    TurnUsage,
)
from semspec.agents.steps import (
    NoObserver,
    StepObserver,
    StepRecord,
    StopReason,
    action_hash,
    observation_hash,
)
from semspec.core import telemetry
from semspec.core.errors import ProviderError
from semspec.core.reasons import FallbackReason
from semspec.core.telemetry.spans import chat_span, tool_span
from semspec.model.pricing import Price
from semspec.model.providers.types import AssistantReply, ToolCall, Usage
from semspec.vocabulary.event_payloads import AgentRole

# What OpenAI-style servers and Anthropic say when a prompt does not fit the window (HTTP 400;
# some gateways answer 413). The rules count these apart from other failures.
_OVER_WINDOW = re.compile(
    r"context[ _]length|context[ _]window|maximum context|prompt is too long|too many tokens"
    r"|reduce the length",
    re.IGNORECASE,
)


def is_context_window_error(exc: ProviderError) -> bool:
    """Whether the provider refused the call because the prompt exceeds the model's window."""
    return exc.status in (400, 413) and _OVER_WINDOW.search(exc.message) is not None


def calls_hash(calls: Sequence[ToolCall]) -> str:
    """The action of a model step: the tool calls it asked for (empty string for none)."""
    if not calls:
        return ""
    return action_hash("tool_calls", [[call.name, call.arguments] for call in calls])


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - started) * 1000


@dataclass
class TurnMeter:
    """Counts, prices and reports the steps of one turn; asks whether the next may start."""

    role: AgentRole
    observer: StepObserver
    model: str | None = None
    price: Price | None = None
    budget_usd: float | None = None
    """Dollars the turn may spend; None = no dollar budget."""
    accept_unpriced: bool = False
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    peak_tokens: int = 0
    estimated: bool = False
    """Some tokens were estimated (``TurnUsage.estimated``)."""
    conversation: str = ""
    """The task id: the ``gen_ai.conversation.id`` of the turn's spans."""
    provider: str | None = None
    """The provider's name (``openai``, ``anthropic``) for the spans; None = not said."""

    @classmethod
    def for_turn(
        cls,
        role: AgentRole,
        observer: StepObserver | None,
        model: str | None,
        price: Price | None,
        request: DeveloperRequest | ReviewRequest,
        *,
        provider: str | None = None,
    ) -> TurnMeter:
        """A meter for the turn ``request`` asks for, with its dollar budget (``observer``
        None: steps are only counted)."""
        return cls(
            role,
            observer or NoObserver(),
            model,
            price,
            request.cost_budget_usd,
            request.accept_unpriced,
            conversation=request.task_id,
            provider=provider,
        )

    def stop(self) -> StopReason | None:
        """Why the next step must not start: the observer's halt or pause, a spent dollar
        budget, or a dollar budget over a model without a price (then nothing starts)."""
        asked = self.observer.stop_requested()
        if asked is not None:
            return asked
        if self.budget_usd is None:
            return None
        if self.price is None and not self.accept_unpriced:
            return "unknown_price"
        return "cost_budget" if self.cost_usd >= self.budget_usd else None

    def stop_summary(self, reason: StopReason) -> str:
        """One line for the turn's summary saying why it stopped."""
        if reason == "unknown_price":
            return (
                f"not started: model {self.model or '(unnamed)'} has no price in the registry "
                f"and the task has a dollar budget of ${self.budget_usd:g}"
            )
        if reason == "cost_budget":
            return (
                f"stopped after {self.steps} steps: ${self.cost_usd:.4f} spent of a "
                f"${self.budget_usd:g} budget"
            )
        return f"stopped after {self.steps} steps: {reason} from the risk monitor"

    def model_step(self, reply: AssistantReply, duration_ms: float) -> None:
        """Report a model call that answered."""
        usage = reply.usage
        cost = None if self.price is None else self.price.cost_usd(usage)
        self.input_tokens += usage.prompt_tokens
        self.output_tokens += usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        self.peak_tokens = max(self.peak_tokens, usage.total)
        if cost is None:
            self.unpriced = True
        else:
            self.cost_usd += cost
        step = self._next()
        self._chat_span(step, duration_ms, usage=usage, cost_usd=cost)
        self.observer.step(
            StepRecord(
                self.role,
                step,
                "model",
                action_hash=calls_hash(reply.tool_calls),
                observation_hash=observation_hash(reply.text),
                model=self.model,
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens,
                cost_usd=cost,
                duration_ms=duration_ms,
            )
        )

    def model_error(self, exc: ProviderError, duration_ms: float) -> None:
        """Report a model call the provider refused or failed (the caller raises it on)."""
        kind = "context_window" if is_context_window_error(exc) else exc.reason.value
        self.model_failure(exc.message, duration_ms, kind)

    def model_failure(self, message: str, duration_ms: float, kind: str | None = None) -> None:
        """Report a failed model call by its message (an agent CLI's, or a provider's)."""
        if kind is None and _OVER_WINDOW.search(message):
            kind = "context_window"
        step = self._next()
        self._chat_span(step, duration_ms, error_type=kind or "model_error")
        self.observer.step(
            StepRecord(
                self.role,
                step,
                "model",
                action_hash="",
                observation_hash=observation_hash(message),
                error=True,
                error_kind=kind,
                model=self.model,
                duration_ms=duration_ms,
            )
        )

    def tool_step(
        self,
        call: ToolCall,
        output: str,
        *,
        error: bool,
        duration_ms: float,
        wait: bool = False,
    ) -> None:
        """Report a tool call and what it returned."""
        step = self._next()
        tool_span(
            telemetry.current(),
            conversation=self.conversation,
            role=self.role,
            step=step,
            tool=call.name,
            call_id=call.id,
            duration_ms=duration_ms,
            error=error,
        )
        self.observer.step(
            StepRecord(
                self.role,
                step,
                "tool",
                tool=call.name,
                action_hash=action_hash(call.name, call.arguments),
                observation_hash=observation_hash(output),
                error=error,
                wait=wait,
                duration_ms=duration_ms,
            )
        )

    def usage(self) -> TurnUsage:
        """What the turn spent so far."""
        return TurnUsage(
            steps=self.steps,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            cost_usd=self.cost_usd,
            model=self.model,
            unpriced=self.unpriced,
            peak_tokens=self.peak_tokens,
            estimated=self.estimated,
        )

    def stopped_development(self, stop: StopReason, tokens_used: int) -> DeveloperResult:
        """The developer's result when ``stop`` ended its turn before submit."""
        dollars = stop in ("cost_budget", "unknown_price")
        return DeveloperResult(
            # A halt or pause is the workflow's to act on: it cancels the step (see
            # ``workflow/task/loop/steps.py``); ``failed`` only shows if that never comes.
            outcome="budget_exhausted" if dollars else "failed",
            summary=self.stop_summary(stop),
            tokens_used=tokens_used,
            reason=_stop_reason(stop).value,
            usage=self.usage(),
            stopped=stop,
        )

    def stopped_review(self, stop: StopReason, reviewer: str, tokens_used: int) -> ReviewVerdict:
        """The reviewer's verdict when ``stop`` ended the review: never an approval."""
        return ReviewVerdict(
            verdict="request_changes",
            summary=self.stop_summary(stop),
            reviewer=reviewer,
            tokens_used=tokens_used,
            reason=_stop_reason(stop).value,
            usage=self.usage(),
            stopped=stop,
        )

    def _chat_span(
        self,
        step: int,
        duration_ms: float,
        *,
        usage: Usage | None = None,
        cost_usd: float | None = None,
        error_type: str | None = None,
    ) -> None:
        """The model call as a span of the task's trace (nothing while telemetry is off)."""
        tokens = usage or Usage()
        # The output tokens' share, so backends can show prompt and completion cost apart.
        completion_cost = (
            None
            if cost_usd is None or self.price is None
            else tokens.completion_tokens * self.price.output_per_1m / 1_000_000
        )
        chat_span(
            telemetry.current(),
            conversation=self.conversation,
            role=self.role,
            step=step,
            model=self.model,
            provider=self.provider,
            duration_ms=duration_ms,
            input_tokens=tokens.prompt_tokens,
            output_tokens=tokens.completion_tokens,
            cached_tokens=tokens.cached_tokens,
            cost_usd=cost_usd,
            completion_cost_usd=completion_cost,
            error_type=error_type,
        )

    def _next(self) -> int:
        self.steps += 1
        return self.steps


def _stop_reason(stop: StopReason) -> FallbackReason:
    """Dollars spent (or not countable) exhaust the budget; a halt or pause that never reached
    the workflow leaves the turn to a human (``abstain``)."""
    if stop in ("cost_budget", "unknown_price"):
        return FallbackReason.BUDGET_EXHAUSTED
    return FallbackReason.ABSTAIN
