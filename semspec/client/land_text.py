"""How a land and a land state read, the same in the CLI and the console: ``task status``'s
``land:`` line, the land cell of ``task list`` and the board, and what ``task land`` says of a
land that ended (docs/landing.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from semspec.workflow.land.landing import LandResult

SHORT_COMMIT = 12


def status_line(task_id: str, land: dict[str, str]) -> str:
    """The ``land:`` line of ``task status`` from ``land_client.land_state``'s dict."""
    state = land.get("state", "")
    if state == "approved":
        return f"not landed (approved; semspec task land {task_id})"
    if state == "landed":
        return f"landed {land.get('commit', '')[:SHORT_COMMIT]}".rstrip()
    if state == "land failed":
        why = ": ".join(v for v in (land.get("reason"), land.get("message")) if v)
        return f"failed ({why})" if why else "failed"
    return state


def list_cell(land: dict[str, str] | None, waiting_on: list[str]) -> str:
    """A task's land cell in a list: ``approved (not landed)``, ``queued``, ``landed
    <commit>``, ``land failed <reason>``, and ``waiting on <task>`` while it waits on others."""
    parts = [f"waiting on {', '.join(waiting_on)}"] if waiting_on else []
    state = (land or {}).get("state", "")
    if state == "approved":
        parts.append("approved (not landed)")
    elif state == "landed":
        parts.append(f"landed {(land or {}).get('commit', '')[:SHORT_COMMIT]}".rstrip())
    elif state == "land failed":
        parts.append(f"land failed {(land or {}).get('reason', '')}".rstrip())
    elif state:
        parts.append(state)
    return "; ".join(parts)


def result_lines(task_id: str, base: str, result: LandResult) -> list[str]:
    """What ``semspec task land`` prints of a land that ended: where it landed, or why not with
    the failed gates' output and a hint."""
    from semspec.workflow.land.landing import ALREADY_LANDED, LANDED

    if result.outcome == LANDED:
        where = f"; {result.checkout} updated" if result.checkout else "; only the ref moved"
        commit = result.commit[:SHORT_COMMIT]
        return [f"landed {task_id} on {base} at {commit} ({result.method}){where}"]
    if result.outcome == ALREADY_LANDED:
        return [f"{task_id} is already on {base} ({result.commit[:SHORT_COMMIT]})"]
    lines = [f"not landed: {result.message}"]
    if result.gate_feedback:
        lines.append(result.gate_feedback)
    if result.hint:
        lines.append(f"hint: {result.hint}")
    return lines
