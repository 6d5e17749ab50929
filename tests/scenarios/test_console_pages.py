"""Scenario: the console's task, inbox and knowledge pages over real HTTP, on the mdurl copy with
its SOPs synced, served by the real ``semspec ui`` of the project.

A task breaks ``format(parse(url))``; with no retries its failing test gate escalates at once.
The inbox lists it with the failing output; an answer POSTed from the console's own origin
resumes it exactly as ``semspec escalations resolve`` would (the same log line, the task then
approved), and a second answer to the same question is refused as stale. The task page shows
the gate output, a link to each full log and the SOPs the reviewer's context held with their
tokens; the knowledge page lists the SOPs and the files each matches. An SOP title and a gate
output holding ``<script>`` render as text; the log route refuses a log that leads outside the
task's logs.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.console_ui import Console, console_ui
from tests.support.mdurl_project import (
    FORMAT_PY,
    PACKAGE_FILES,
    make_project,
    project_config,
    pytest_gate,
    sop,
    with_new_function,
    without_fragment_support,
)
from tests.support.scenario_tasks import APPROVE, EXIT_ESCALATED, entries, finished, new_id, submit
from tests.support.stack import Stack, python_gate

HOSTILE = "<script>alert(1)</script>"
SOPS = {
    "url-errors.md": sop(
        "url-errors",
        "error",
        ["**/*.py"],
        ["Keep format(parse(url)) equal to url for every URL the tests list."],
        "URL errors",
    ),
    "package-api.md": sop(
        "package-api", "warning", ["mdurl/*.py"], ["Never reorder URL's fields."], HOSTILE
    ),
    "docs-pages.md": sop("docs-pages", "error", ["docs/**/*.md"], ["Start with a heading."]),
}
# An optional gate that fails with hostile output: a warning, never a blocker.
LOUD_GATE = python_gate("loud", f"print('{HOSTILE}'); raise SystemExit(1)", required=False)
BROKEN = {"developer": {"write": {FORMAT_PY: without_fragment_support()}}}
FIXED = {"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}
GUIDANCE = "keep url.hash in format(); the round-trip test needs it"


@pytest.fixture(scope="module")
def project(stack: Stack) -> Path:
    gates = {"preset": "none", "additional": [pytest_gate(), LOUD_GATE]}
    config = project_config(stack, "console-pages", loop={"max_retries": 0}, gates=gates)
    repo = make_project(stack, "console-pages", config, sops=SOPS)
    synced = stack.cli_json("sources", "sync", repo=repo)
    assert len(synced["added"]) == len(SOPS), synced
    return repo


@pytest.fixture(scope="module")
def console(stack: Stack, project: Path) -> Iterator[Console]:
    """``semspec ui --port 0`` of the project, logged in with the token its URL carries."""
    with console_ui(project) as console:
        yield console


@dataclass
class Answered:
    """The escalated task, its escalation, and what the console said to the answer."""

    task_id: str
    escalation_id: str
    inbox: str
    note: str
    final: dict[str, object]


@pytest.fixture(scope="module")
def answered(stack: Stack, project: Path, console: Console) -> Answered:
    """A task escalated by its failing tests, listed in the inbox, answered from the console."""
    task_id = new_id("console")
    code, status = submit(stack, project, task_id, [FORMAT_PY], [BROKEN, FIXED])
    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    escalation_id = status["pending_escalation"]["escalation_id"]
    inbox = console.http.get("/inbox").text
    form = {"escalation_id": escalation_id, "action": "retry", "guidance": GUIDANCE}
    sent = console.http.post("/inbox", data=form, headers={"Origin": console.origin})
    assert sent.status_code == 303, sent.text
    note = console.http.get(sent.headers["location"]).text
    return Answered(task_id, escalation_id, inbox, note, finished(stack, project, task_id))


def test_the_inbox_lists_the_escalation_with_its_question_and_failing_output(
    answered: Answered,
) -> None:
    article = _between(
        answered.inbox, f'data-escalation-id="{answered.escalation_id}"', "</article>"
    )
    assert f'data-task-id="{answered.task_id}"' in article
    assert "budget_exhausted" in article
    assert 'class="question"' in article
    assert "test_format_turns_a_parsed_url_back_into_the_same_text" in article  # pytest's output
    for action in ("retry", "approve", "abort", "extend_budget"):
        assert f'name="action" value="{action}"' in article
    assert "semspec escalations resolve" in article  # the suggested commands


def test_an_answer_from_the_console_resumes_the_task_as_the_cli_would(
    answered: Answered,
) -> None:
    assert 'data-ok="true"' in answered.note
    assert f"answered {answered.escalation_id} of task {answered.task_id} with retry" in (
        answered.note
    )
    final = answered.final
    assert final["outcome"] == "approved"
    assert final["iteration"] == 2
    # The very line `semspec escalations resolve --action retry --guidance ...` leaves.
    assert entries(final, "resolution") == [f"retry by human: {GUIDANCE}"]


def test_a_second_answer_to_the_same_question_is_refused_as_stale(
    answered: Answered, console: Console
) -> None:
    form = {"escalation_id": answered.escalation_id, "action": "approve"}
    sent = console.http.post("/inbox", data=form, headers={"Origin": console.origin})
    note = console.http.get(sent.headers["location"]).text
    assert 'data-ok="false"' in note
    assert f"not answered: task {answered.task_id} is not escalated" in note


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"action": "retry", "guidance": " "}, "retry needs guidance for the developer"),
        ({"action": "extend_budget", "extra_retries": "two"}, "extra retries must be a whole"),
        ({"action": "extend_budget", "extra_retries": "\u00b2"}, "extra retries must be a whole"),
        ({"action": "extend_budget", "extra_usd": "nan"}, "extra usd must be a number of US"),
        ({"action": "approve", "extra_usd": "5"}, "--extra-usd goes with --action extend-budget"),
        ({"action": "merge"}, "is not one of retry, approve, abort, extend-budget"),
    ],
)
def test_an_answer_the_cli_would_refuse_is_refused_with_its_reason(
    answered: Answered, console: Console, fields: dict[str, str], said: str
) -> None:
    form = {"escalation_id": answered.escalation_id, **fields}
    sent = console.http.post("/inbox", data=form, headers={"Origin": console.origin})
    note = _between(console.http.get(sent.headers["location"]).text, 'id="note"', "</p>")
    assert 'data-ok="false"' in note and said in note, note


def test_an_answer_from_another_origin_is_refused(answered: Answered, console: Console) -> None:
    form = {"escalation_id": answered.escalation_id, "action": "abort"}
    sent = console.http.post("/inbox", data=form, headers={"Origin": "http://evil.example"})
    assert sent.status_code == 403


def test_the_task_page_shows_gate_output_log_links_and_the_sops_the_reviewer_was_given(
    answered: Answered, console: Console
) -> None:
    page = console.http.get(f"/tasks/{answered.task_id}")
    assert page.status_code == 200
    html = page.text
    gates = _between(html, 'id="gates"', "</section>")
    assert 'data-gate="tests" data-passed="true"' in gates
    assert "passed" in _between(gates, 'class="gate-output"', "</pre>")  # pytest's summary
    context = _between(html, 'id="reviewer-context"', "</section>")
    cited = dict(re.findall(r'data-label="([^"]+)" data-tokens="(\d+)"', context))
    assert set(cited) >= {"url-errors", "package-api"}, context
    assert all(int(tokens) > 0 for tokens in cited.values())
    assert "docs-pages" not in cited  # applies to docs only
    # Both iterations' gate runs link to their logs; the first run's shows the failure.
    first = console.http.get(f"/tasks/{answered.task_id}/gates/1/0/log")
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("text/plain")
    assert "test_format_turns_a_parsed_url_back_into_the_same_text" in first.text
    assert f'href="/tasks/{answered.task_id}/gates/2/0/log"' in html
    timeline = _between(html, 'id="timeline"', 'id="gates"')
    for kind in ("budget", "developer", "gate", "escalation", "resolution", "review", "commit"):
        assert f'data-kind="{kind}"' in timeline, kind
    diff = _between(html, 'id="diff"', "</pre>")
    assert "format_without_hash" in diff


def test_the_steps_page_lists_each_agent_step_of_the_task_from_the_stored_events(
    answered: Answered, console: Console
) -> None:
    html = console.http.get(f"/tasks/{answered.task_id}/steps").text
    rows = re.findall(r'data-iteration="(\d+)" data-role="(\w+)"', html)
    # The scripted developer's turn in each iteration, and the review of the second.
    assert rows == [("1", "developer"), ("2", "developer"), ("2", "reviewer")], html
    assert 'id="older-unread"' not in html


def test_hostile_sop_titles_and_gate_output_render_as_text(
    answered: Answered, console: Console
) -> None:
    pages = {
        "inbox": answered.inbox,
        "task": console.http.get(f"/tasks/{answered.task_id}").text,
        "knowledge": console.http.get("/knowledge").text,
    }
    escaped = "&lt;script&gt;alert("
    for name, html in pages.items():
        assert "<script>alert(" not in html, name
        assert escaped in html, name
    # The loud gate's full log is served as it is, as plain text a browser never sniffs.
    log = console.http.get(f"/tasks/{answered.task_id}/gates/2/1/log")
    assert log.text == f"{HOSTILE}\n"
    assert log.headers["content-type"] == "text/plain; charset=utf-8"
    assert log.headers.get_list("x-content-type-options") == ["nosniff"]


def test_the_knowledge_page_lists_each_sop_with_its_globs_severity_and_files(
    project: Path, console: Console
) -> None:
    html = console.http.get("/knowledge").text
    rows = dict(
        re.findall(r'data-sop-id="([^"]+)" data-severity="[^"]+" data-matches="(\d+)"', html)
    )
    python_files = len(PACKAGE_FILES) + 1  # the package and its test file
    assert rows == {
        "docs-pages": "0",
        "package-api": str(len(PACKAGE_FILES)),
        "url-errors": str(python_files),
    }
    sop_row = _between(html, 'data-sop-id="package-api"', "</tr>")
    assert "<code>mdurl/*.py</code>" in sop_row and "warning" in sop_row
    assert "mdurl/_format.py" in sop_row


def test_the_log_route_refuses_a_log_that_leads_outside_the_tasks_logs(
    answered: Answered, console: Console, stack: Stack, tmp_path: Path
) -> None:
    route = f"/tasks/{answered.task_id}/gates/1/0/log"
    logs = stack.root / "console-pages" / "run" / "logs" / answered.task_id
    named = next((logs / "iteration-1").glob("tests*"))
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the console\n", encoding="utf-8")
    kept = named.with_name(named.name + ".kept")
    named.rename(kept)
    try:
        os.symlink(secret, named)
        refused = console.http.get(route)
        assert refused.status_code == 404
        assert "not for the console" not in refused.text
    finally:
        named.unlink()
        kept.rename(named)
    assert console.http.get(route).status_code == 200
    # No gate run of that number, and no path from the address, reach any file.
    assert console.http.get(f"/tasks/{answered.task_id}/gates/1/9/log").status_code == 404
    assert console.http.get(f"/tasks/{answered.task_id}/gates/1/..%2F..%2Fx/log").status_code == 404


def _between(text: str, start: str, end: str) -> str:
    """The part of ``text`` from ``start`` to the next ``end`` (fails when ``start`` is absent)."""
    at = text.index(start)
    stop = text.find(end, at)
    return text[at : stop if stop >= 0 else len(text)]
