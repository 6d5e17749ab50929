"""The console's views rendered by its own templates, without a server (issue 30 item 6, issue
26's banner): the board's time columns, filter, folded empty sections and a refused task's
reason; the nav's escalation count and the monitor banner on every page; the task page's
per-file diff and risk levels; human times. Hostile text renders as text."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from semspec.console.board_filter import BoardFilter
from semspec.console.board_page import board_view
from semspec.console.board_rows import BoardRow
from semspec.console.diff_files import OPEN_UP_TO_LINES, split_patch
from semspec.console.human_time import ago, exact, parse_instant, time_tag
from semspec.console.page_status import PageStatus, monitor_banner
from semspec.console.state import template_environment
from semspec.console.task_diff import TaskDiff
from semspec.console.task_page import GATE_TAIL_LINES
from semspec.console.task_timeline import risk_level, timeline
from semspec.processors.risk_monitor.lease import LeaseHolder
from semspec.processors.risk_monitor.watchdog import ConsumerProgress
from semspec.workflow.gates.types import GateResult
from semspec.workflow.task.messages import LogEntry, TaskStatus

HOSTILE = "<script>alert(1)</script>"
NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
REFUSAL = "holds 8,462 tokens, over the 7,831-token file limit"


def row(task_id: str, column: str, **fields: Any) -> BoardRow:
    values: dict[str, Any] = {
        "task_id": task_id,
        "column": column,
        "state": "running" if column in ("running", "escalated") else "completed",
        "phase": "developer",
        "title": "",
        "plan_id": "",
        "iteration": 1,
        "retries": "0/3",
        "pressure": "",
        "utilization": None,
        "cost_usd": 0.0,
        "started": (NOW - timedelta(minutes=5)).isoformat(),
    }
    return BoardRow(**(values | fields))


def render(template: str, **context: Any) -> str:
    base = {"request": None, "url_for": None, "active": "", "page_status": PageStatus()}
    return template_environment().get_template(template).render(base | context)


def board_html(rows: list[BoardRow], query: dict[str, str] | None = None, **extra: Any) -> str:
    view = board_view(rows, BoardFilter.from_query(query or {}), extra.pop("events", {}))
    return render("board.html", active="board", problem="", signals={}, **view, **extra)


def section(html: str, column: str) -> str:
    start = html.index(f'<section aria-labelledby="col-{column}"')
    return html[start : html.index("</section>", start)]


BOARD = [
    row("fix-parser", "running", title="Parser", plan_id="p1"),
    row("big-file", "failed", phase="refused", reason=REFUSAL, title=HOSTILE),
    row("docs", "approved", plan_id="p2", closed=(NOW - timedelta(hours=2)).isoformat()),
]


def test_human_times_say_how_long_ago_with_the_exact_time_on_hover() -> None:
    at = parse_instant("2026-11-27T11:54:59.123456Z")
    assert at is not None
    assert ago(at, NOW) == "5 min ago"
    assert ago(NOW - timedelta(seconds=3), NOW) == "just now"
    assert ago(NOW - timedelta(hours=26), NOW) == "1 d ago"
    assert exact(at) == "2026-11-27 11:54:59 UTC"
    tag = str(time_tag("2026-11-27T11:54:59.123456+00:00", NOW))
    assert tag == (
        '<time datetime="2026-11-27T11:54:59+00:00" title="2026-11-27 11:54:59 UTC" data-ago>'
        "5 min ago</time>"
    )
    assert str(time_tag(HOSTILE, NOW)) == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_the_board_shows_when_each_task_started_and_last_changed() -> None:
    events = {"fix-parser": (NOW - timedelta(seconds=30)).isoformat()}
    html = board_html(BOARD, events=events)
    running = section(html, "running")
    assert '<th scope="col">Started</th><th scope="col">Updated</th>' in running
    started = re.search(r'data-field="started"><time datetime="([^"]+)" title="([^"]+)"', running)
    assert started is not None and started.group(2).endswith(" UTC")
    # The running task changed when its latest event came; the closed one when it closed.
    updated = re.search(r'data-field="updated"><time datetime="([^"]+)"', running)
    assert updated is not None and updated.group(1) == events["fix-parser"][:19] + "+00:00"
    approved = section(html, "approved")
    closed = (NOW - timedelta(hours=2)).isoformat(timespec="seconds")
    assert f'data-field="updated"><time datetime="{closed}"' in approved


def test_empty_sections_are_folded_to_their_heading() -> None:
    html = board_html(BOARD)
    for column in ("escalated", "halted"):
        empty = section(html, column)
        assert 'data-empty="true"' in empty
        assert '<table class="board" data-column="' + column + '" hidden>' in empty
    assert 'data-empty="true"' not in section(html, "running")


def test_a_refused_task_says_why_and_its_hostile_title_is_text() -> None:
    failed = section(board_html(BOARD), "failed")
    assert f'<span class="reason" data-field="reason">{REFUSAL}</span>' in failed
    assert HOSTILE not in failed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in failed


def test_the_board_filters_by_state_plan_and_text_from_its_address() -> None:
    def shown(query: dict[str, str]) -> set[str]:
        html = board_html(BOARD, query)
        rows = re.findall(r'<tr id="task-[^"]+" data-task-id="([^"]+)"([^>]*)>', html)
        return {task for task, rest in rows if "hidden" not in rest}

    assert shown({}) == {"fix-parser", "big-file", "docs"}
    assert shown({"state": "failed"}) == {"big-file"}
    assert shown({"plan": "p2"}) == {"docs"}
    assert shown({"q": "8,462 TOKENS"}) == {"big-file"}  # the reason, case-blind
    assert shown({"q": "parser", "plan": "p1"}) == {"fix-parser"}
    assert shown({"state": "nonsense"}) == {"fix-parser", "big-file", "docs"}
    html = board_html(BOARD, {"q": "parser"})
    assert "2 tasks not shown" in html
    assert 'value="parser"' in html
    # The folded sections follow the filter; the hidden rows stay for the script to show.
    assert 'data-empty="true"' in section(html, "failed")
    assert 'data-task-id="big-file" data-state="failed" hidden' in html
    # A hostile filter is echoed into the search box as text.
    echoed = board_html(BOARD, {"q": f'"><{HOSTILE}', "plan": HOSTILE})
    assert HOSTILE not in echoed and 'value="&#34;&gt;&lt;&lt;script&gt;' in echoed


def test_every_page_shows_the_open_escalation_count_and_the_monitor_banner() -> None:
    status = PageStatus(2, ("a", "b"), "no risk monitor holds the lease")
    for template, context in [
        ("board.html", board_view(BOARD, BoardFilter(), {})),
        ("monitor.html", {"view": _empty_monitor_view()}),
    ]:
        base = {"problem": "", "signals": {}} if template == "board.html" else {}
        html = render(template, page_status=status, **base, **context)
        assert 'id="escalation-count" data-tasks="a b" data-count="2">2</span>' in html
        assert 'id="monitor-banner"' in html and "no risk monitor holds the lease" in html
    quiet = render("monitor.html", page_status=PageStatus(0), view=_empty_monitor_view())
    assert 'data-count="0">0</span>' in quiet and 'id="monitor-banner"' not in quiet
    unknown = render("monitor.html", view=_empty_monitor_view())
    assert 'id="escalation-count"' not in unknown  # Temporal did not say: no number


def test_the_banner_names_a_missing_or_stalled_monitor_and_nothing_else() -> None:
    holder = LeaseHolder("monitor-1@host", "t")
    consuming = ConsumerProgress(3, 2.0, 1.0)
    stalled = ConsumerProgress(12, 45.0, 50.0)
    assert monitor_banner(holder, consuming, 30.0) == ""
    assert monitor_banner(holder, None, 30.0) == ""
    assert "no risk monitor holds the lease" in monitor_banner(None, consuming, 30.0)
    said = monitor_banner(holder, stalled, 30.0)
    assert said.startswith("the active monitor (monitor-1@host): 12 events waiting")
    assert "risk.leader.stall_s: 30" in said


def test_a_patch_is_split_per_file_with_its_counts_and_line_kinds() -> None:
    patch = (
        "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n"
        "@@ -1,2 +1,2 @@\n a\n-b\n+c\n+---\n"
        "diff --git a/new.md b/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/new.md\n"
        "@@ -0,0 +1 @@\n+hi\n"
    )
    files = split_patch(patch)
    assert [(f.path, f.insertions, f.deletions) for f in files] == [
        ("x.py", 2, 1),
        ("new.md", 1, 0),
    ]
    assert [line.kind for line in files[0].lines] == [
        *["meta"] * 4,
        "hunk",
        "ctx",
        "del",
        "add",
        "add",  # "+---" inside a hunk is an added line, not a header
    ]
    long = split_patch("diff --git a/l b/l\n@@ -1 +1 @@\n" + "+x\n" * OPEN_UP_TO_LINES)
    assert files[0].open and not long[0].open


def test_the_task_page_folds_long_gate_output_splits_the_diff_and_styles_flags() -> None:
    patch = f"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+{HOSTILE}\n"
    output = "".join(f"line {n}\n" for n in range(1, 201)) + "1 failed, 4 passed\n"
    gate = GateResult("tests", "pytest", True, False, 1, 2.0, False, output, False, 2000, "/l")
    log = [
        LogEntry(1, "gate", "tests: FAIL", {"name": "tests", "passed": False, "log": "/l"}),
        LogEntry(1, "flag", "scope: changed files outside the task: setup.py"),
        LogEntry(1, "signal", "halt (escalate): file_conflict x.py"),
    ]
    status = TaskStatus("t1", HOSTILE, "gates", 1, 0, 3, last_gates=[gate], log=log)
    diff = TaskDiff(patch, "worktree", ["x.py"], 1, 1, False)
    html = render(
        "task.html",
        task_id="t1",
        status=status,
        problem="",
        timeline=timeline(status),
        diff=diff,
        diff_files=split_patch(diff.patch),
        gate_tail_lines=GATE_TAIL_LINES,
        cost="unpriced",
        budget="",
    )
    # The gate's end (its summary) is shown; the whole output is folded below it.
    tail = html[html.index('<pre class="gate-output gate-tail">') :]
    assert tail.index("1 failed, 4 passed") < tail.index("</pre>")
    assert "line 100\n" not in tail[: tail.index("</pre>")]
    assert '<details class="gate-raw"><summary>whole output (201 lines)</summary>' in html
    # One block per file, open, one span per line with nothing between two (single-spaced).
    assert '<details class="diff-file" data-path="x.py" open>' in html
    assert '<span class="del">-a</span><span class="add">+&lt;script&gt;' in html
    # Flags and signals carry their level, shown as a badge.
    assert 'data-kind="flag" data-risk="true" data-level="warn"' in html
    assert '<span class="level level-escalate">escalate</span>' in html
    assert HOSTILE not in html


def test_risk_entries_carry_their_level() -> None:
    def level(kind: str, message: str) -> str:
        return risk_level(LogEntry(1, kind, message))

    assert level("signal", "flag (warn): scope_creep touched setup.py") == "warn"
    assert level("signal", "flag: scope_creep touched setup.py") == "warn"
    assert level("signal", "pause: context_pressure red") == "pause"
    assert level("signal", "halt (escalate): file_conflict a.py") == "escalate"
    assert level("cancelled", "developer step cancelled: halt from the risk monitor") == "halt"
    assert level("flag", "scope: changed files outside the task: setup.py") == "warn"
    assert level("refused", "unsigned halt signal s1 dropped") == "refused"


def _empty_monitor_view() -> Any:
    from semspec.console.monitor_data import MonitorView

    return MonitorView()
