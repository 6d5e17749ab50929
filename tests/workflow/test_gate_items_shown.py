"""A failed gate's findings come first wherever people and agents read gate results (issue 29,
item 3): the terminal, the console's task page and inbox, the developer's feedback and the
reviewer's summary; the raw output stays one flag or one click away. No server: the status and
the pages are built here."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from semspec.client.task_render import render_status
from semspec.console.state import template_environment
from semspec.console.task_diff import TaskDiff
from semspec.console.task_page import GATE_TAIL_LINES
from semspec.console.task_timeline import timeline
from semspec.workflow.gates.findings import MAX_ITEMS
from semspec.workflow.gates.types import GateItem, GateReport, GateResult
from semspec.workflow.task.messages import LogEntry, TaskStatus

NOISE = "\n".join(f"six.py:{n}:1: F821 Undefined name `x{n}`" for n in range(1, 120))
NEW = GateItem("six.py", 28, "F401", "`os` imported but unused")
BROKEN = GateItem("test_six.py", 0, "failed", "assert 2 == 1", test="test_six.py::test_b")


def gate(name: str, items: list[GateItem], *, required: bool = True, known: int = 0) -> GateResult:
    return GateResult(
        name, f"{name} cmd", required, False, 1, 10.0, False, NOISE, False, len(NOISE),
        f"/run/logs/{name}.log", items=items, known=known,
        note=f"{known} findings already there on the base commit" if known else "",
    )  # fmt: skip


def shown(status: TaskStatus, raw: bool = False) -> str:
    out = io.StringIO()
    render_status(Console(file=out, width=200), status, raw=raw)
    return out.getvalue()


def status_with(*gates: GateResult) -> TaskStatus:
    return TaskStatus("t-1", "title", "gates", 1, 1, 3, last_gates=list(gates))


def test_task_status_shows_the_items_and_not_the_raw_output() -> None:
    text = shown(status_with(gate("test", [BROKEN], known=2), gate("lint", [NEW], known=106)))
    assert "test_six.py::test_b: failed: assert 2 == 1" in text
    assert "six.py:28: F401: `os` imported but unused" in text
    assert "Undefined name" not in text
    assert "semspec task status t-1 --raw" in text
    assert len(text.splitlines()) < 20


def test_task_status_raw_adds_the_output_tail() -> None:
    text = shown(status_with(gate("lint", [NEW], known=106)), raw=True)
    assert "six.py:28: F401" in text and "Undefined name `x119`" in text


def test_a_gate_without_items_still_shows_its_output_tail() -> None:
    text = shown(status_with(gate("build", [])))
    assert "Undefined name `x119`" in text


def test_feedback_and_reviewer_summary_carry_the_items_not_the_noise() -> None:
    report = GateReport([gate("test", [BROKEN]), gate("lint", [NEW], required=False)])
    feedback = report.feedback_text()
    assert "test_six.py::test_b" in feedback and "six.py:28: F401" in feedback
    assert "WARNING: gate 'lint'" in feedback and "Undefined name" not in feedback
    summary = report.summary_text()
    assert "test_six.py::test_b" in summary and "six.py:28: F401" in summary


def test_items_beyond_the_bound_are_a_count() -> None:
    many = gate("lint", [NEW] * MAX_ITEMS)
    many = replace(many, items_more=93)
    assert "... and 93 more (full log: /run/logs/lint.log)" in many.items_text()
    assert "113 new findings" in many.headline()


def task_page(*gates: GateResult) -> str:
    """The console's task page for a status holding ``gates``, rendered as the console does."""
    status = status_with(*gates)
    status.log = [
        LogEntry(1, "gate", f"{g.name}: warn", {"name": g.name, "passed": g.passed, "log": "/l"})
        for g in gates
    ]
    context = {
        "request": None,
        "url_for": lambda *_a, **_k: "/",
        "active": "",
        "task_id": "t-1",
        "status": status,
        "problem": "",
        "timeline": timeline(status),
        "diff": TaskDiff("", "", [], 0, 0, False, "no change"),
        "cost": "$0",
        "budget": "",
        "gate_tail_lines": GATE_TAIL_LINES,
    }
    return template_environment().get_template("task.html").render(context)


def gates_section(html: str) -> str:
    return html[html.index('id="gates"') : html.index("</section>", html.index('id="gates"'))]


def test_console_task_page_lists_items_and_folds_the_raw_output() -> None:
    html = gates_section(task_page(gate("lint", [NEW], known=106)))
    assert 'data-rule="F401"' in html and "six.py:28: F401" in html
    assert "106 findings already there on the base commit" in html
    items_at, raw_at = html.index('class="gate-items"'), html.index("Undefined name")
    assert items_at < html.index('<details class="gate-raw">') < raw_at


def test_console_folds_a_passed_gate_output_when_its_findings_were_set_aside() -> None:
    passed = replace(gate("lint", [], known=106), passed=True)
    html = gates_section(task_page(passed))
    assert "106 findings already there" in html and 'class="gate-items"' not in html
    assert html.index('<details class="gate-raw">') < html.index("Undefined name")


def test_console_shows_a_gate_without_findings_by_its_last_lines_with_the_rest_folded() -> None:
    html = gates_section(task_page(gate("build", [])))
    assert f"The last {GATE_TAIL_LINES} of 119 lines" in html
    assert '<pre class="gate-output gate-tail">' in html
    assert "whole output (119 lines)" in html and "x119" in html.split("gate-tail", 1)[1]
