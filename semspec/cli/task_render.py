"""Text renderings of task status and logs for people."""

from __future__ import annotations

from rich.console import Console

from workflow.task.shared import LogEntry, TaskStatus


def render_status(console: Console, status: TaskStatus) -> None:
    """Phase, counters, last gates and verdict, and a pending escalation with its commands."""
    out = console.print
    out(f"task {status.task_id}: {status.title}", markup=False)
    state = status.outcome or status.phase
    out(
        f"  state: {state}   iteration: {status.iteration}   "
        f"retries: {status.retries}/{status.max_retries}",
        markup=False,
    )
    if status.branch:
        out(f"  branch: {status.branch}", markup=False)
    if status.commit_id:
        out(f"  commit: {status.commit_id}", markup=False)
    if status.reason:
        out(f"  reason: {status.reason}", markup=False)
    for gate in status.last_gates:
        mark = "pass" if gate.passed else ("FAIL" if gate.required else "warn")
        out(f"  gate {gate.name}: {mark} ({gate.duration_ms:.0f} ms)", markup=False)
    if status.last_verdict is not None:
        v = status.last_verdict
        out(f"  last verdict: {v.verdict} by {v.reviewer} {v.summary}".rstrip(), markup=False)
    if status.flags:
        out(f"  flags: {'; '.join(status.flags)}", markup=False)
    if status.fingerprints:
        out(f"  fingerprints: {', '.join(f[:12] for f in status.fingerprints)}", markup=False)
    if status.events_dropped:
        out(f"  monitor events dropped (NATS unavailable): {status.events_dropped}", markup=False)
    if status.context is not None:
        c = status.context
        rate = f", {c.tokens_per_iteration:,.0f}/iteration" if c.tokens_per_iteration else ""
        left = f", ~{c.iterations_remaining} iterations left" if c.iterations_remaining else ""
        out(
            f"  context: {c.tokens_used:,}/{c.window:,} tokens ({c.utilization:.0%}, "
            f"{c.pressure}{rate}{left})",
            markup=False,
        )
    for line in status.assignment:
        out(f"  model {line}", markup=False)
    for ref in status.checkpoints:
        out(f"  checkpoint: {ref}", markup=False)
    for sub in status.subtasks:
        out(f"  subtask {sub}", markup=False)
    esc = status.pending_escalation
    if esc is not None:
        out(f"  ESCALATED ({esc.reason}): {esc.message}", markup=False)
        out(f'    semspec escalations resolve {status.task_id} --action retry --guidance "..."')
        out(f"    semspec escalations resolve {status.task_id} --action approve|abort")


def render_entry(console: Console, entry: LogEntry) -> None:
    """One log line: iteration, kind, message."""
    console.print(f"  [{entry.iteration}] {entry.kind:<11} {entry.message}", markup=False)


def render_log(console: Console, status: TaskStatus) -> None:
    """The task's history, iteration by iteration."""
    console.print(f"task {status.task_id}: {status.title}", markup=False)
    current = -1
    for entry in status.log:
        if entry.iteration != current:
            current = entry.iteration
            console.print(f"iteration {current}" if current else "setup", markup=False)
        render_entry(console, entry)
    console.print(f"state: {status.outcome or status.phase}", markup=False)
