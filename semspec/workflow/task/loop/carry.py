"""What a checkpoint carries into a task's next run, and how that run takes it back.

``TaskWorkflow`` keeps its state in three plain objects: ``TaskStatus`` (what the status query
shows), ``RiskSignals`` (the monitor's signals) and ``LoopState`` (the counters and bounds the
status does not show). A checkpoint (continue-as-new) packs all three into one ``Continuation``;
the new run unpacks it before any signal handler runs. No Temporal here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semspec.workflow.context.monitor import ContextSnapshot, ContextTracker
from semspec.workflow.context.windows import DEFAULT_WINDOW
from semspec.workflow.task.dollars import DollarBudget
from semspec.workflow.task.loop.bounds import MAX_CARRIED_LOG, context_after
from semspec.workflow.task.loop.risk_signals import RiskSignals
from semspec.workflow.task.messages import (
    CheckpointStep,
    Continuation,
    ReviewStep,
    TaskInput,
    TaskStatus,
)


@dataclass
class LoopState:
    """The loop's counters and bounds beyond ``TaskStatus``, and what the next step needs."""

    max_retries: int
    """The retry bound, with what a human granted (``extend_budget``)."""
    max_iterations: int
    """The iteration cap, with what a human granted."""
    tracker: ContextTracker
    """The loop's context window and its use per iteration."""
    base_tokens: int = 0
    """Where the loop's context starts: the task text and files."""
    context_used: int = 0
    tokens_spent: int = 0
    """Tokens of every run so far, for the performance record."""
    elapsed_before: float = 0.0
    """Seconds the earlier runs took."""
    escalations: int = 0
    """Escalations so far, so escalation ids stay unique when the carried log is cut."""
    feedback: list[str] = field(default_factory=list)
    """The last gate failure or review findings, for the next developer step."""
    guidance: str | None = None
    """A human's retry guidance that no developer step has used yet."""
    decisions: list[str] = field(default_factory=list)
    """Decisions carried over checkpoints, re-injected into the developer's context."""
    last_files: list[str] = field(default_factory=list)
    """Paths the last developer step changed, for the checkpoint commit."""
    last_review: ReviewStep | None = None
    checkpoint_due: str | None = None
    """Why the loop must checkpoint at its next safe point (context pressure, a pause)."""
    step_cancelled: bool = False
    """A step was cancelled before it reported its files: the checkpoint scans the worktree."""
    empty_turns: int = 0
    """Developer turns in a row that changed no file (``empty_turn``); not carried over."""
    dollars: DollarBudget = field(default_factory=DollarBudget)
    """The dollar budget, with what humans granted and whether they accepted unpriced models."""

    @classmethod
    def start(cls, inp: TaskInput) -> LoopState:
        """The state of a run that starts fresh (``restore`` then applies a continuation)."""
        state = cls(
            inp.limits.max_retries,
            inp.limits.max_iterations,
            # Replaced by the budget check's window, or the carried one.
            ContextTracker(window=DEFAULT_WINDOW),
            dollars=DollarBudget(
                inp.limits.max_cost_usd,
                inp.share_usd,
                f"plan {inp.spec.plan_id}" if inp.spec.plan_id else "its parent task",
            ),
        )
        if inp.window:
            # A subtask: its parent checked the budget and passes its window down.
            state.tracker = ContextTracker(window=inp.window)
            state.base_tokens = inp.base_tokens
        return state

    def spend(self, iteration: int, tokens: int) -> ContextSnapshot:
        """Account an agent call's tokens to the loop's context; the context use after it."""
        self.tokens_spent += tokens
        self.context_used = context_after(self.context_used, self.base_tokens, tokens)
        return self.tracker.observe(iteration, self.context_used)


def carry_over(
    inp: TaskInput,
    status: TaskStatus,
    signals: RiskSignals,
    state: LoopState,
    step: CheckpointStep,
    number: int,
    elapsed_s: float,
) -> Continuation:
    """What the run after checkpoint ``number`` (``step``) carries: every counter and bound,
    the newest log lines, feedback, decisions and the signals already honoured."""
    refs = [*status.checkpoints, step.ref] if step.ref else list(status.checkpoints)
    return Continuation(
        checkpoint_ref=step.ref,
        checkpoints=number,
        iteration=status.iteration,
        criteria=list(inp.spec.criteria),
        decisions=[*state.decisions, *step.decisions],
        fingerprints=list(status.fingerprints),
        log=status.log[-MAX_CARRIED_LOG:],
        flags=list(signals.flags),
        assignment=list(status.assignment),
        events_dropped=status.events_dropped,
        window=state.tracker.window,
        base_tokens=state.base_tokens,
        checkpoint_refs=refs,
        retries=status.retries,
        feedback=list(state.feedback),
        guidance=state.guidance,
        tokens_spent=state.tokens_spent,
        elapsed_s=elapsed_s,
        max_retries=state.max_retries,
        max_iterations=state.max_iterations,
        escalations=state.escalations,
        signal_ids=sorted(signals.seen),
        scope_flagged=sorted(signals.scope_flagged),
        # A pause is answered by this very checkpoint; a halt still needs a human.
        halt=signals.halt,
        usage=status.usage,
        iteration_costs=list(status.iteration_costs),
        granted_usd=state.dollars.granted_usd,
        accept_unpriced=state.dollars.accept_unpriced,
    )


def restore(cont: Continuation, status: TaskStatus, signals: RiskSignals, state: LoopState) -> None:
    """Take back what ``carry_over`` packed (a continuation of an older run may lack fields)."""
    status.iteration = cont.iteration
    status.retries = cont.retries
    if cont.max_retries is not None:
        state.max_retries = status.max_retries = cont.max_retries
    if cont.max_iterations is not None:
        state.max_iterations = cont.max_iterations
    state.feedback = list(cont.feedback)
    state.guidance = cont.guidance
    state.tokens_spent = cont.tokens_spent
    state.elapsed_before = cont.elapsed_s
    signals.seen.update(cont.signal_ids)
    signals.scope_flagged.update(cont.scope_flagged)
    # Files told before the checkpoint were logged by the loop or the monitor's signal then.
    signals.scope_logged.update(cont.scope_flagged)
    signals.halt = cont.halt
    signals.flags.extend(cont.flags)
    status.fingerprints = list(cont.fingerprints)
    status.log = list(cont.log)
    status.assignment = list(cont.assignment)
    status.checkpoints = list(cont.checkpoint_refs)
    status.events_dropped = cont.events_dropped
    state.decisions = list(cont.decisions)
    logged = len([e for e in cont.log if e.kind == "escalation"])
    state.escalations = max(cont.escalations, logged)
    if cont.window:
        state.tracker = ContextTracker(window=cont.window)
    state.base_tokens = cont.base_tokens
    if cont.usage is not None:
        status.usage = cont.usage
    status.iteration_costs = list(cont.iteration_costs)
    state.dollars.granted_usd = cont.granted_usd
    state.dollars.accept_unpriced = cont.accept_unpriced
    status.budget_usd = state.dollars.cap_usd
