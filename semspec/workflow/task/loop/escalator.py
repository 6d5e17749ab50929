"""Asking a human: publish the escalation, wait for ``resolve_escalation``, return the answer.

``TaskWorkflow`` asks whenever a bound is hit, a step fails in a way no retry fixes, or a halt
stops the loop; the answer comes back as ``Answered`` and the workflow decides what follows
(abort, approve, retry, more budget). Questions about the dollar budget are answered in place
when the answer lets the agent call go ahead (``about_dollars``). Call only from the workflow:
the wait is ``workflow.wait_condition`` and the nonce is ``workflow.uuid4()``.
"""

from __future__ import annotations

from temporalio import workflow

from semspec.core.reasons import FallbackReason
from semspec.workflow.task.dollars import usd
from semspec.workflow.task.loop.bounds import Escalate, granted_retries
from semspec.workflow.task.loop.escalations import Escalations
from semspec.workflow.task.loop.outbox import Outbox
from semspec.workflow.task.loop.outcomes import Answered
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.loop.state import TaskState
from semspec.workflow.task.messages import EscalationSource, Resolution


class Escalator:
    """The task's questions to a human, asked one at a time."""

    def __init__(
        self,
        state: TaskState,
        escalations: Escalations,
        signals: RiskSignals,
        outbox: Outbox,
        configured_retries: int,
    ) -> None:
        self._state = state
        self._escalations = escalations
        self._signals = signals
        self._outbox = outbox
        self._configured_retries = configured_retries
        """``LoopLimits.max_retries``: what an ``extend_budget`` naming no number grants."""

    async def ask(
        self,
        reason: str,
        message: str,
        fingerprint: str | None = None,
        source: EscalationSource = "loop",
        dollars: bool = False,
    ) -> Answered:
        """Publish an escalation and wait for the human's answer.

        ``dollars``: the question is about the dollar budget (spent, or an unpriced model).
        """
        state, status = self._state, self._state.status
        state.loop.escalations += 1
        # The nonce binds a signed answer to this one question (random, but replayed alike).
        nonce = str(workflow.uuid4())
        escalation = self._escalations.open(
            state.loop.escalations, str(reason), message, fingerprint, source, nonce
        )
        state.log("escalation", f"{reason}: {message}", {"escalation_id": escalation.escalation_id})
        self._outbox.queue(
            "escalation",
            {
                "reason": str(reason),
                "retries": status.retries,
                "fingerprint": fingerprint,
                "question": message,
                "source": source,
                "escalation_id": escalation.escalation_id,
                "event_key": escalation.escalation_id,
                "cost_usd": round(status.usage.cost_usd, 6),
                "budget_usd": status.budget_usd,
                "max_retries": status.max_retries,
                "unpriced_models": list(status.usage.unpriced_models),
            },
            signal_level="escalate",
            signal_reason=str(reason),
            signal_message=message,
        )
        await workflow.wait_condition(lambda: self._escalations.answered)
        resolution = self._escalations.close()
        self._signals.answered()
        extra_usd = state.grant_usd(resolution, str(reason), dollars)
        state.log(
            "resolution",
            f"{resolution.action} by {resolution.resolved_by}"
            + (f": {resolution.guidance}" if resolution.guidance else "")
            + (f" (+{usd(extra_usd)})" if extra_usd else ""),
        )
        self._outbox.queue(
            "escalation",
            {
                "resolved": True,
                "action": resolution.action,
                # The risk monitor raises its own retry threshold by what the human granted;
                # an answer to a question about dollars grants dollars only.
                "extra_retries": 0 if dollars else self.granted_retries(resolution),
                "extra_usd": round(extra_usd, 6),
                "escalation_id": escalation.escalation_id,
                "event_key": f"{escalation.escalation_id}-resolved",
            },
        )
        return Answered(resolution, str(reason))

    async def about_dollars(self, stop: Escalate) -> Answered | None:
        """Ask about a dollar budget that stops an agent call; None when the answer lets the
        call go ahead (dollars added, or the unpriced model accepted), else the answer for the
        loop to act on (abort, approve the work, retry)."""
        answer = await self.ask(stop.reason, stop.message, dollars=True)
        res, loop = answer.resolution, self._state.loop
        if stop.reason == FallbackReason.UNKNOWN_PRICE and res.action != "abort":
            # Asked once per task: any answer but abort accepts the model.
            loop.dollars.accept_unpriced = True
            if res.action == "retry":
                loop.guidance = res.guidance
            return None
        return None if res.action == "extend_budget" else answer

    def granted_retries(self, resolution: Resolution) -> int:
        """Retries ``resolution`` adds to the bound (``bounds.granted_retries``)."""
        return granted_retries(
            resolution.action, resolution.extra_retries, self._configured_retries
        )
