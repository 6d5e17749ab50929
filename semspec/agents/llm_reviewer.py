"""The reviewer agent: a schema-validated verdict, bounded format retries, bounded enrichment.

* Malformed output is retried at most twice with the validation error; after that the review
  *abstains*: verdict ``request_changes`` with ``reason="abstain"``. ``request_changes`` because
  it never lets an unreviewed change through and is not the terminal ``reject``; the task loop
  treats ``reason == "abstain"`` as an escalation to a human.
* ``need_more_info`` (seed 001): up to two evidence types from the allowlist, one enrichment
  step through the caller's ``EvidenceSource``, and a second reviewer call only if the evidence
  fingerprint changed. Otherwise the verdict stays ``need_more_info`` with reason
  ``no_new_evidence`` (nothing new was found) or ``budget_exhausted`` (the one step was used),
  and ``summary`` holds a grounded question for the human.

Every model call (and the enrichment's fetch, a tool step) is reported to the review's observer
through a ``TurnMeter``, which is asked before each one whether to go on: a halt, a pause or a
spent dollar budget ends the review with ``request_changes`` and ``stopped`` set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from semspec.agents.evidence import (
    MAX_ENRICHMENT_STEPS,
    EvidenceBlock,
    EvidenceSource,
    EvidenceType,
    evidence_fingerprint,
    render_evidence,
)
from semspec.agents.protocol import ReviewRequest, ReviewVerdict
from semspec.agents.review_prompt import FORMAT_CORRECTION, SYSTEM_PROMPT, render_review
from semspec.agents.review_schema import VerdictFormatError, VerdictModel, parse_verdict
from semspec.agents.steps import StepObserver, StopReason
from semspec.agents.turn_meter import TurnMeter, elapsed_ms
from semspec.core.errors import ProviderError
from semspec.core.reasons import FallbackReason
from semspec.model.pricing import Price
from semspec.model.providers.types import ChatMessage, ChatProvider, ToolCall

MAX_FORMAT_RETRIES = 2
EVIDENCE_TOOL = "fetch_evidence"
"""The tool name of the enrichment's fetch in step events."""


@dataclass(frozen=True)
class ReviewTelemetry:
    """One event of a review's loop cycle (seed 001, step 5)."""

    loop_cycle_id: str
    event: str
    call_index: int
    fingerprint_before: str
    fingerprint_after: str
    retry_attempt_index: int
    """Enrichment retries made so far in this cycle."""
    retry_budget_remaining: int
    """Enrichment steps (or, for ``format_invalid``, format retries) still allowed."""


class _Stopped(Exception):
    """The observer or the dollar budget stopped the review before its next step."""

    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason)
        self.reason: StopReason = reason


@dataclass
class _Cycle:
    request: ReviewRequest
    cycle_id: str
    fingerprint: str
    evidence: list[EvidenceBlock]
    meter: TurnMeter
    calls: int = 0
    tokens: int = 0
    enrichment_steps: int = 0


class LLMReviewer:
    """A ``ReviewerAgent`` driven by any ``ChatProvider``."""

    def __init__(
        self,
        provider: ChatProvider,
        evidence: EvidenceSource | None = None,
        *,
        name: str = "reviewer",
        max_output_tokens: int | None = None,
        on_telemetry: Callable[[ReviewTelemetry], None] | None = None,
        model: str | None = None,
        price: Price | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        """The registry id of the model, named in step events and usage."""
        self.price = price
        """Its registry price; None = unknown (a review with a dollar budget does not start)."""
        self.evidence = evidence
        self.name = name
        self.max_output_tokens = max_output_tokens
        self.on_telemetry = on_telemetry
        self.telemetry: list[ReviewTelemetry] = []
        """Events of the latest review."""

    async def aclose(self) -> None:
        """Close the model's HTTP client."""
        await self.provider.aclose()

    async def review(
        self, request: ReviewRequest, observer: StepObserver | None = None
    ) -> ReviewVerdict:
        """Review ``request``; provider failures propagate as ``ProviderError``."""
        self.telemetry = []
        cycle = _Cycle(
            request,
            cycle_id=f"{request.task_id}:{request.iteration}:review",
            fingerprint=evidence_fingerprint(request, []),
            evidence=[],
            meter=TurnMeter.for_turn(
                "reviewer", observer, self.model, self.price, request, provider=self.provider.name
            ),
        )
        try:
            verdict = await self._cycle(cycle)
        except _Stopped as stopped:
            return cycle.meter.stopped_review(stopped.reason, self.name, cycle.tokens)
        return replace(verdict, usage=cycle.meter.usage())

    async def _cycle(self, cycle: _Cycle) -> ReviewVerdict:
        while True:
            answer = await self._ask(cycle)
            if answer is None:
                return self._abstain(cycle)
            if answer.verdict != "need_more_info":
                self._emit(cycle, "verdict", cycle.fingerprint, 0)
                return answer.to_verdict(reviewer=self.name, tokens_used=cycle.tokens)
            stop = await self._enrich(cycle, answer)
            if stop is not None:
                return stop

    async def _ask(self, cycle: _Cycle) -> VerdictModel | None:
        """One reviewer call with up to two format retries; None when all replies were bad."""
        messages = [
            ChatMessage(role="system", content=SYSTEM_PROMPT),
            ChatMessage(
                role="user",
                content=render_review(cycle.request, render_evidence(cycle.evidence)),
            ),
        ]
        for attempt in range(MAX_FORMAT_RETRIES + 1):
            _check(cycle.meter)
            started = time.perf_counter()
            try:
                reply = await self.provider.complete(messages, max_tokens=self.max_output_tokens)
            except ProviderError as exc:
                cycle.meter.model_error(exc, elapsed_ms(started))
                raise
            cycle.meter.model_step(reply, elapsed_ms(started))
            cycle.calls += 1
            cycle.tokens += reply.usage.total
            try:
                return parse_verdict(reply.text)
            except VerdictFormatError as exc:
                self._emit(cycle, "format_invalid", cycle.fingerprint, MAX_FORMAT_RETRIES - attempt)
                messages += [
                    ChatMessage(role="assistant", content=reply.text),
                    ChatMessage(role="user", content=FORMAT_CORRECTION.format(error=exc)),
                ]
        return None

    async def _enrich(self, cycle: _Cycle, answer: VerdictModel) -> ReviewVerdict | None:
        """One bounded enrichment step; a verdict to return when the loop must stop."""
        before = cycle.fingerprint
        remaining = MAX_ENRICHMENT_STEPS - cycle.enrichment_steps
        if remaining <= 0:
            self._emit(cycle, "continuity_enrichment_budget_exhausted", before, 0)
            return self._stop(cycle, answer, FallbackReason.BUDGET_EXHAUSTED)
        types = list(dict.fromkeys(answer.needed_evidence))
        fetched: list[EvidenceBlock] = []
        if self.evidence is not None:
            _check(cycle.meter)
            started = time.perf_counter()
            fetched = await self.evidence.fetch(cycle.request, types)
            call = ToolCall(id="evidence", name=EVIDENCE_TOOL, arguments={"types": types})
            shown = render_evidence(fetched)
            cycle.meter.tool_step(call, shown, error=False, duration_ms=elapsed_ms(started))
        fetched = [b for b in fetched if b.type in types]
        cycle.enrichment_steps += 1
        after = evidence_fingerprint(cycle.request, [*cycle.evidence, *fetched])
        if after == before:
            self._emit(cycle, "continuity_enrichment_fingerprint_unchanged", after, remaining - 1)
            return self._stop(cycle, answer, FallbackReason.NO_NEW_EVIDENCE)
        self._emit(cycle, "continuity_enrichment_retry_called", after, remaining - 1, before)
        cycle.evidence.extend(fetched)
        cycle.fingerprint = after
        return None

    def _stop(self, cycle: _Cycle, answer: VerdictModel, reason: FallbackReason) -> ReviewVerdict:
        verdict = answer.to_verdict(reviewer=self.name, tokens_used=cycle.tokens)
        wanted = " and ".join(e.replace("_", " ") for e in verdict.needed_evidence)
        got = (
            "The evidence fetched once already did not settle it."
            if reason is FallbackReason.BUDGET_EXHAUSTED
            else "Nothing new could be fetched automatically."
        )
        question = (
            f"The reviewer cannot decide task {cycle.request.task_id} "
            f"({cycle.request.title}) without {wanted}. {got} "
            f"Reviewer's note: {answer.summary or '(none)'} "
            f"Question for you: can you provide the {wanted}, or resolve with guidance?"
        )
        return ReviewVerdict(
            verdict="need_more_info",
            summary=question,
            findings=verdict.findings,
            noted_patterns=verdict.noted_patterns,
            needed_evidence=verdict.needed_evidence,
            reviewer=self.name,
            tokens_used=cycle.tokens,
            reason=reason.value,
        )

    def _abstain(self, cycle: _Cycle) -> ReviewVerdict:
        self._emit(cycle, "abstain", cycle.fingerprint, 0)
        return ReviewVerdict(
            verdict="request_changes",
            summary=(
                f"The reviewer gave no valid verdict in {MAX_FORMAT_RETRIES + 1} attempts; "
                "a human should review this change."
            ),
            reviewer=self.name,
            tokens_used=cycle.tokens,
            reason=FallbackReason.ABSTAIN.value,
        )

    def _emit(
        self,
        cycle: _Cycle,
        event: str,
        after: str,
        budget_remaining: int,
        before: str | None = None,
    ) -> None:
        record = ReviewTelemetry(
            loop_cycle_id=cycle.cycle_id,
            event=event,
            call_index=cycle.calls,
            fingerprint_before=before or cycle.fingerprint,
            fingerprint_after=after,
            retry_attempt_index=cycle.enrichment_steps,
            retry_budget_remaining=budget_remaining,
        )
        self.telemetry.append(record)
        if self.on_telemetry is not None:
            self.on_telemetry(record)


def _check(meter: TurnMeter) -> None:
    """Raise ``_Stopped`` when the next step must not start."""
    if (stop := meter.stop()) is not None:
        raise _Stopped(stop)


__all__ = ["EvidenceType", "LLMReviewer", "ReviewTelemetry"]
