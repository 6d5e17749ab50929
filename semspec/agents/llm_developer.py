"""The developer agent: a small tool loop over a chat provider, bounded by steps and tokens.

Each step asks the budget policy first (pointerizing old tool outputs when needed), then the
model, then runs the tool calls it asked for. The loop ends on ``submit``, on the step limit,
or when the token budget or the context window is spent (``budget_exhausted``). Provider
failures propagate as ``ProviderError`` so Temporal can retry the activity.

Every model call and tool call is a step reported to the turn's observer (``TurnMeter``), which
is asked before each step whether to go on: a halt or pause ends the turn at once (``stopped``),
and so does the turn's dollar budget (``budget_exhausted``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from semspec.agents.compaction.policy import ContextBudgetPolicy
from semspec.agents.compaction.trace import TraceCompactor
from semspec.agents.developer_prompt import SYSTEM_PROMPT, render_task
from semspec.agents.protocol import DeveloperRequest, DeveloperResult
from semspec.agents.stabilization.analytics import AnalyticsQueue
from semspec.agents.stabilization.layer import Stabilizer
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.session import SessionRegistry, new_connection_id, session_key
from semspec.agents.steps import StepObserver, StopReason
from semspec.agents.tools.specs import WAIT_TOOLS
from semspec.agents.tools.toolbox import DeveloperToolbox
from semspec.agents.turn_meter import TurnMeter, elapsed_ms, is_context_window_error
from semspec.agents.workspace import Workspace
from semspec.core.errors import ProviderError
from semspec.core.reasons import FallbackReason
from semspec.model.pricing import Price
from semspec.model.providers.types import ChatMessage, ChatProvider

NUDGE = (
    "No tool was called. Continue with a tool call, or call submit(summary) if the task is done."
)


@dataclass(frozen=True)
class DeveloperSettings:
    """Bounds of one developer iteration."""

    max_steps: int = 40
    """Model calls per iteration before the loop stops with ``step_limit``."""
    token_budget: int | None = None
    """Total tokens (prompt + completion, as reported) per iteration; None = only the window."""
    max_output_tokens: int | None = None
    """``max_tokens`` sent with each call; None = the provider's default."""
    stabilization: StabilizationPolicy = field(default_factory=StabilizationPolicy)
    """Read budget and gate of the read/search tools."""


@dataclass
class DeveloperRun:
    """What one ``develop`` call did, kept for telemetry and tests."""

    messages: list[ChatMessage]
    compactor: TraceCompactor
    toolbox: DeveloperToolbox
    meter: TurnMeter
    steps: int = 0
    """Model calls (the meter counts tool calls too)."""
    tokens_used: int = 0


class LLMDeveloper:
    """A ``DeveloperAgent`` driven by any ``ChatProvider``."""

    def __init__(
        self,
        provider: ChatProvider,
        policy: ContextBudgetPolicy,
        settings: DeveloperSettings | None = None,
        analytics: AnalyticsQueue | None = None,
        *,
        model: str | None = None,
        price: Price | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        """The registry id of the model, named in step events and usage."""
        self.price = price
        """Its registry price; None = unknown (a turn with a dollar budget does not start)."""
        self.policy = policy
        self.settings = settings or DeveloperSettings()
        self.stabilizer = Stabilizer(self.settings.stabilization, analytics)
        self.sessions = SessionRegistry()
        self.last_run: DeveloperRun | None = None

    def _start(self, request: DeveloperRequest, observer: StepObserver | None) -> DeveloperRun:
        workspace = Workspace(request.worktree)
        key = session_key(
            request.worktree,
            session_id=f"{request.task_id}:{request.iteration}",
            connection_id=new_connection_id(),
        )
        compactor = TraceCompactor(self.policy)
        toolbox = DeveloperToolbox(
            workspace, self.stabilizer, self.sessions.get(key), compactor.pointers
        )
        messages = [
            ChatMessage(role="system", content=SYSTEM_PROMPT),
            ChatMessage(role="user", content=render_task(request)),
        ]
        meter = TurnMeter.for_turn(
            "developer", observer, self.model, self.price, request, provider=self.provider.name
        )
        return DeveloperRun(messages, compactor, toolbox, meter)

    async def develop(
        self, request: DeveloperRequest, observer: StepObserver | None = None
    ) -> DeveloperResult:
        """Run the tool loop in ``request.worktree`` until submit, step limit or budget."""
        run = self._start(request, observer)
        self.last_run = run
        try:
            return await self._loop(run)
        finally:
            self.sessions.end(run.toolbox.session.key)

    async def aclose(self) -> None:
        """Close the model's HTTP client."""
        await self.provider.aclose()

    async def _loop(self, run: DeveloperRun) -> DeveloperResult:
        budget = self.settings.token_budget
        while run.steps < self.settings.max_steps:
            if budget is not None and run.tokens_used >= budget:
                return self._exhausted(run, f"token budget of {budget} spent")
            decision = run.compactor.prepare(run.messages)
            if decision.kind == "reject":
                return self._exhausted(run, f"context window: {decision.reason}")
            if stop := run.meter.stop():
                return self._stopped(run, stop)
            started = time.perf_counter()
            try:
                reply = await self.provider.complete(
                    run.messages, run.toolbox.specs, max_tokens=self.settings.max_output_tokens
                )
            except ProviderError as exc:
                run.meter.model_error(exc, elapsed_ms(started))
                if is_context_window_error(exc):
                    # Not a transport failure: retrying the same prompt fails the same way. The
                    # turn ends as its own context check would have ended it.
                    return self._exhausted(
                        run,
                        f"context window: the provider refused the prompt ({exc.message[:200]})",
                    )
                raise
            run.meter.model_step(reply, elapsed_ms(started))
            run.steps += 1
            run.tokens_used += reply.usage.total
            run.messages.append(reply.as_message())
            if not reply.tool_calls:
                run.messages.append(ChatMessage(role="user", content=NUDGE))
                continue
            for call in reply.tool_calls:
                if stop := run.meter.stop():
                    return self._stopped(run, stop)
                started = time.perf_counter()
                result = await run.toolbox.call(call)  # in a thread: off the loop
                run.meter.tool_step(
                    call,
                    result.content,
                    error=not result.ok,
                    duration_ms=elapsed_ms(started),
                    wait=call.name in WAIT_TOOLS,
                )
                run.messages.append(
                    run.compactor.admit_tool_output(
                        call.id, call.name, result.content, summarizable=result.summarizable
                    )
                )
                if result.submitted:
                    return DeveloperResult(
                        outcome="submitted",
                        summary=result.summary,
                        tokens_used=run.tokens_used,
                        usage=run.meter.usage(),
                    )
        return DeveloperResult(
            outcome="step_limit",
            summary=f"stopped after {run.steps} model calls without submit",
            tokens_used=run.tokens_used,
            reason=FallbackReason.BUDGET_EXHAUSTED.value,
            usage=run.meter.usage(),
        )

    def _exhausted(self, run: DeveloperRun, why: str) -> DeveloperResult:
        return DeveloperResult(
            outcome="budget_exhausted",
            summary=f"stopped after {run.steps} model calls: {why}",
            tokens_used=run.tokens_used,
            reason=FallbackReason.BUDGET_EXHAUSTED.value,
            usage=run.meter.usage(),
        )

    def _stopped(self, run: DeveloperRun, stop: StopReason) -> DeveloperResult:
        return run.meter.stopped_development(stop, run.tokens_used)
