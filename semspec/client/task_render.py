"""Text renderings of task status and logs for people."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console

from semspec.core.reasons import FallbackReason
from semspec.vocabulary.suggestions import escalation_answers
from semspec.workflow.gates.types import GateResult
from semspec.workflow.task.dollars import spent_text, usd
from semspec.workflow.task.messages import LogEntry, ReviewStep, TaskStatus

GATE_TAIL_LINES = 20
GATE_TAIL_CHARS = 2_000
"""How much of a failed gate's output a person sees inline; the full log is on disk."""
GATE_ITEMS_SHOWN = 10
"""Findings of one gate shown in the terminal; the rest is a count."""


def verdict_name(review: ReviewStep) -> str:
    """The verdict as people should read it: a reviewer that gave up shows as ``abstain``."""
    if review.reason == FallbackReason.ABSTAIN.value:
        return "abstain"
    return review.verdict


def gate_tail(output: str, lines: int = GATE_TAIL_LINES, chars: int = GATE_TAIL_CHARS) -> str:
    """The last ``lines`` lines of ``output``, at most ``chars`` characters of them.

    Compilers and test runners print their summary last, so the end is what to show.
    """
    kept = output.rstrip("\n").splitlines()[-lines:]
    text = "\n".join(kept)
    return text[-chars:] if len(text) > chars else text


def render_failed_gates(
    console: Console, gates: Iterable[GateResult], raw: bool = False, task_id: str = ""
) -> None:
    """For each failed gate: how it ended, its findings (file, line, rule, message) when its
    output was read into them, else (or with ``raw``) the tail of its output; and the full
    log's path. A passed gate shows nothing here, whatever the base commit already had."""
    for gate in gates:
        if gate.passed:
            continue
        console.print(f"  {gate.headline()}", markup=False, soft_wrap=True)
        if gate.note:
            console.print(f"    {gate.note}", markup=False, soft_wrap=True)
        if gate.has_items:
            for line in gate.items_text(GATE_ITEMS_SHOWN).splitlines():
                console.print(f"    {line}", markup=False, soft_wrap=True)
        if raw or not gate.has_items:
            tail = gate_tail(gate.output)
            if tail:
                console.print("    last lines of its output:", markup=False)
                for line in tail.splitlines():
                    console.print(f"    | {line}", markup=False, soft_wrap=True)
        elif task_id:
            console.print(
                f"    its output: `semspec task status {task_id} --raw`",
                markup=False,
                soft_wrap=True,
            )
        if gate.log_path:
            console.print(f"    full log: {gate.log_path}", markup=False, soft_wrap=True)


def render_models(console: Console, status: TaskStatus) -> None:
    """The model that ran for each role; apart, and only where it differs, the model the
    registry would pick (from recorded performance: ``semspec models assign`` says why)."""
    if status.models:
        ran = ", ".join(f"{role} {name}" for role, name in sorted(status.models.items()))
        console.print(f"  models: {ran}", markup=False, soft_wrap=True)
    differing = suggestions_differing(status)
    if differing:
        picks = ", ".join(f"{role} {model}" for role, model in differing)
        console.print(
            f"  the registry would pick instead: {picks} (why: `semspec models assign`)",
            markup=False,
            soft_wrap=True,
        )


def suggestions_differing(status: TaskStatus) -> list[tuple[str, str]]:
    """(role, model) of each registry suggestion that is not the model that ran for the role.

    An assignment line reads ``role: model (why ...)``; a model that ran reads
    ``provider:model``."""
    differing = []
    for line in status.assignment:
        role, _, rest = line.partition(": ")
        model = rest.partition(" (")[0].strip()
        if not model or model == "none qualifies":
            continue
        ran = status.models.get(role, "")
        if ran.partition(":")[2] != model and ran != model:
            differing.append((role, model))
    return differing


def render_cost(console: Console, status: TaskStatus) -> None:
    """Dollars and tokens spent, against the budget, and per iteration; nothing when the agents
    reported no usage and there is no budget. An unknown price reads ``unpriced`` with the model
    named (``spent_text``), never as ``$0.0000``."""
    usage, budget = status.usage, status.budget_usd
    if not usage.steps and not usage.cost_usd and budget is None:
        return
    of = f" of {usd(budget)} budget" if budget is not None else ""
    console.print(
        f"  cost: {spent_text(usage.cost_usd, usage.unpriced_models)}{of} ({usage.steps} steps; "
        f"{usage.input_tokens:,} in, {usage.output_tokens:,} out, {usage.cached_tokens:,} "
        "cached tokens)",
        markup=False,
        soft_wrap=True,
    )
    if status.iteration_costs and (usage.cost_usd or not usage.unpriced_models):
        each = ", ".join(f"{n} {usd(c)}" for n, c in enumerate(status.iteration_costs, 1))
        priced = " (priced calls only)" if usage.unpriced_models else ""
        console.print(f"  cost per iteration{priced}: {each}", markup=False, soft_wrap=True)


def retries_fraction(retries: int, allowed: int) -> str:
    """Retries as used of allowed (``3/3``), never more used than allowed: the attempt past the
    bound is the escalation, not a retry."""
    return f"{min(retries, allowed)}/{allowed}"


def retries_text(status: TaskStatus) -> str:
    """``retries: 2/3``, with ``none left`` once they are all used."""
    left = ", none left" if status.retries >= status.max_retries else ""
    return f"retries: {retries_fraction(status.retries, status.max_retries)}{left}"


def render_status(console: Console, status: TaskStatus, raw: bool = False) -> None:
    """Phase, counters, last gates and verdict, and a pending escalation with its commands;
    ``raw`` adds the failed gates' output to their findings."""
    out = console.print
    out(f"task {status.task_id}: {status.title}", markup=False)
    state = status.outcome or status.phase
    out(f"  state: {state}   iteration: {status.iteration}   {retries_text(status)}", markup=False)
    if status.waiting_on and not status.outcome:
        # Earlier tasks on the same files finish and land first (docs/landing.md).
        out(f"  waiting on {', '.join(status.waiting_on)}", markup=False)
    if status.branch:
        out(f"  branch: {status.branch}", markup=False)
    if status.commit_id:
        out(f"  commit: {status.commit_id}", markup=False)
    if status.reason:
        out(f"  reason: {status.reason}", markup=False)
    render_models(console, status)
    render_cost(console, status)
    for gate in status.last_gates:
        mark = "pass" if gate.passed else ("FAIL" if gate.required else "warn")
        known = f", {gate.known} already on the base" if gate.known else ""
        out(f"  gate {gate.name}: {mark} ({gate.duration_ms:.0f} ms{known})", markup=False)
    render_failed_gates(console, status.last_gates, raw, status.task_id)
    if status.last_verdict is not None:
        v = status.last_verdict
        out(f"  last verdict: {verdict_name(v)} by {v.reviewer} {v.summary}".rstrip(), markup=False)
    if status.flags:
        out(f"  flags: {'; '.join(status.flags)}", markup=False)
    if status.fingerprints:
        out(f"  fingerprints: {', '.join(f[:12] for f in status.fingerprints)}", markup=False)
    if status.events_dropped:
        out(f"  monitor events dropped (invalid or lost): {status.events_dropped}", markup=False)
    if status.events_pending:
        waiting = f"  monitor events waiting for NATS: {status.events_pending}"
        out(waiting, markup=False)
    if status.context is not None:
        c = status.context
        rate = f", {c.tokens_per_iteration:,.0f}/iteration" if c.tokens_per_iteration else ""
        left = f", ~{c.iterations_remaining} iterations left" if c.iterations_remaining else ""
        out(
            f"  context: {c.tokens_used:,}/{c.window:,} tokens ({c.utilization:.0%}, "
            f"{c.pressure}{rate}{left})",
            markup=False,
        )
    for ref in status.checkpoints:
        out(f"  checkpoint: {ref}", markup=False)
    for sub in status.subtasks:
        out(f"  subtask {sub}", markup=False)
    esc = status.pending_escalation
    if esc is not None:
        out(f"  ESCALATED ({esc.reason}): {esc.message}", markup=False)
        _resolve_commands(console, status, esc.reason)


def _resolve_commands(console: Console, status: TaskStatus, reason: str) -> None:
    """The answers to the task's escalation, worded for its ``reason`` as in `escalations show`."""
    answers = escalation_answers(
        status.task_id, reason, dollar_budget=status.budget_usd is not None
    )
    for answer in answers:
        console.print(f"    {answer.description}: {answer.command}", markup=False)


def render_final(console: Console, status: TaskStatus) -> None:
    """How a followed task ended, in one line, plus what a person needs to act on it.

    The log printed while following holds the steps; this adds the outcome once, the failed
    gates' output and, for an escalation, the commands that answer it.
    """
    out = console.print
    esc = status.pending_escalation
    if esc is not None:
        out(f"task {status.task_id}: escalated ({esc.reason}): {esc.message}", markup=False)
        render_failed_gates(console, status.last_gates, task_id=status.task_id)
        _resolve_commands(console, status, esc.reason)
        return
    outcome = status.outcome or status.phase
    if status.commit_id:
        out(
            f"task {status.task_id}: {outcome}, commit {status.commit_id} on {status.branch}",
            markup=False,
        )
        return
    out(f"task {status.task_id}: {outcome} {status.reason or ''}".rstrip(), markup=False)
    render_failed_gates(console, status.last_gates, task_id=status.task_id)


def render_entry(console: Console, entry: LogEntry) -> None:
    """One log line: iteration, kind, message."""
    console.print(f"  [{entry.iteration}] {entry.kind:<11} {entry.message}", markup=False)


def render_log(console: Console, status: TaskStatus, raw: bool = False) -> None:
    """The task's history, iteration by iteration, then the failed gates of the last one
    (their findings; ``raw`` adds their output)."""
    console.print(f"task {status.task_id}: {status.title}", markup=False)
    current = -1
    for entry in status.log:
        if entry.iteration != current:
            current = entry.iteration
            console.print(f"iteration {current}" if current else "setup", markup=False)
        render_entry(console, entry)
    render_failed_gates(console, status.last_gates, raw, status.task_id)
    # A finished task's last entry already says how it ended.
    if not status.log or status.log[-1].kind != "finished":
        console.print(f"state: {status.outcome or status.phase}", markup=False)


def render_status_raw(console: Console, status: TaskStatus) -> None:
    """``render_status`` with the failed gates' raw output (``task status --raw``)."""
    render_status(console, status, raw=True)


def render_log_raw(console: Console, status: TaskStatus) -> None:
    """``render_log`` with the failed gates' raw output (``task logs --raw``)."""
    render_log(console, status, raw=True)
