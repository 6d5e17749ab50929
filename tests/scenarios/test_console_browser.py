"""Scenario: the web console in a real browser (chromium, driven by Playwright), on a stack of
its own that the real ``semspec up`` started, console included, in a copy of mdurl with its
SOPs synced.

With the board open, a task is submitted whose developer breaks ``format(parse(url))``; with no
retries its failing test gate escalates at once. The board shows the task arrive and move to
*escalated* while the page stays loaded (no reload). A page on another origin, open in the same
browser as the logged-in console, can neither read a console page nor answer the escalation.
The inbox answers it from the page (retry with guidance); the task resumes and is approved,
which the open board shows live too. The task page shows the failing gate output and the SOPs
the reviewer was given; the monitor shows the escalation's signal; the knowledge page lists the
SOPs with the files each matches. A browser without the secret gets no data.

Pages are checked through their accessibility tree (``to_match_aria_snapshot``), not pixels;
screenshots of the board, the task, the inbox, the monitor and the knowledge are saved under
each test's ``tmp_path`` and their paths printed (``pytest -s`` shows them; ``--basetemp DIR``
keeps them).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, expect

from tests.support.browser import (
    WAIT_MS,
    chromium,
    opened,
    other_origin,
    require_chromium,
    screenshot,
)
from tests.support.mdurl_project import (
    FORMAT_PY,
    SOP_DIR,
    TEST_SUITE,
    package_sources,
    pytest_gate,
    sop,
    with_new_function,
    without_fragment_support,
)
from tests.support.scenario_tasks import APPROVE, entries, finished, new_id, submit
from tests.support.stack import Stack, running_stack, sample_config, write_script

ROUND_TRIP_RULE = "Keep format(parse(url)) equal to url for every URL the tests list."
SOPS = {
    "url-errors.md": sop("url-errors", "error", ["**/*.py"], [ROUND_TRIP_RULE], "URL errors"),
    "docs-pages.md": sop(
        "docs-pages", "error", ["docs/**/*.md"], ["Start with a heading."], "Docs pages"
    ),
}
BROKEN = {"developer": {"write": {FORMAT_PY: without_fragment_support()}}}
FIXED = {"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}
GUIDANCE = "keep url.hash in format(); the round-trip test needs it"
FAILING_TEST = "test_format_turns_a_parsed_url_back_into_the_same_text"
HOSTILE_TITLE = "<script>alert(1)</script> huge table"
BIG_FILE = "mdurl/_table.py"
# Far over any profile's file limit: the budget check refuses the task before an agent runs.
BIG_TABLE = "".join(f'ENTRY_{n} = "value number {n} of the table"\n' for n in range(40_000))
NOTES = "docs/notes.md"
# A change that passes the gates and touches a file outside the task's: a scope-creep flag.
FLAGGED = {
    "developer": {"write": {"README.md": "# mdurl\n\nA copy.\n", NOTES: "# Notes\n\nOne.\n"}},
    "reviewer": APPROVE,
}


@dataclass
class Console:
    """The stack, the console's origin and the URL ``semspec status`` prints (with its token)."""

    stack: Stack
    origin: str
    login_url: str


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """``semspec up`` in the mdurl copy (the console with it), SOPs synced; the printed URL."""
    require_chromium()  # no stack is started for tests that cannot run
    files = {
        **package_sources(),
        "tests/test_mdurl.py": TEST_SUITE,
        "README.md": "# mdurl, copied for the console's browser scenario\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
        BIG_FILE: BIG_TABLE,
        **{f"{SOP_DIR}/{name}": text for name, text in SOPS.items()},
    }
    config = sample_config([pytest_gate()], loop={"max_retries": 0})
    with running_stack(tmp_path_factory.mktemp("console-browser"), config, files) as stack:
        synced = stack.cli_json("sources", "sync")
        assert len(synced["added"]) == len(SOPS), synced
        services = stack.cli_json("status")
        row = next(s for s in services if s["name"] == "console")
        url = row["extra"]["url"]
        origin = re.sub(r"/\?token=.*$", "", url)
        yield Console(stack, origin, url)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def owner(browser: Browser, console: Console) -> AsyncIterator[BrowserContext]:
    """The stack owner's browser: it opened the printed URL, so it holds the session cookie."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    async with opened(context, console.login_url) as page:
        assert page.url == console.origin + "/", "the token URL should redirect to the bare board"
    yield context
    await context.close()


@dataclass
class Escalated:
    """A task that escalated while the board was open, and that board page (still open)."""

    task_id: str
    escalation_id: str
    board: Page
    stayed_loaded: bool


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def escalated(owner: BrowserContext, console: Console) -> AsyncIterator[Escalated]:
    """Open the board, submit a task that escalates, and watch its row arrive and change."""
    board = await owner.new_page()
    await board.goto(console.origin + "/")
    await expect(board.locator("body"), "the board's event stream never opened").to_have_attribute(
        "data-live", "open"
    )
    # A reload would forget this: it proves the row came without one.
    await board.evaluate("window.loadedOnce = 'yes'")
    task_id = new_id("browser")
    code, status = await asyncio.to_thread(
        submit, console.stack, console.stack.repo, task_id, [FORMAT_PY], [BROKEN, FIXED], wait=False
    )
    assert code == 0, json.dumps(status)[-3000:]
    row = board.locator(f'tr[data-task-id="{task_id}"]')
    await expect(
        row, "the escalated task never reached the board's Escalated table"
    ).to_have_attribute("data-state", "escalated", timeout=120_000)
    stayed = await board.evaluate("window.loadedOnce") == "yes"
    pending = console.stack.status(task_id)["pending_escalation"]
    assert pending is not None and pending["reason"] == "budget_exhausted", pending
    yield Escalated(task_id, pending["escalation_id"], board, stayed)
    await board.close()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def approved(escalated: Escalated, console: Console) -> dict[str, object]:
    """The escalated task once approved: answered in the inbox test, or here by the CLI when
    that test did not run."""
    stack = console.stack
    if stack.status(escalated.task_id)["pending_escalation"] is not None:
        resolve = ("escalations", "resolve", escalated.task_id, "--action", "retry")
        await asyncio.to_thread(stack.cli, *resolve, "--guidance", GUIDANCE)
    return await asyncio.to_thread(finished, stack, stack.repo, escalated.task_id)


async def test_the_board_shows_the_task_arrive_and_escalate_without_a_reload(
    escalated: Escalated, tmp_path: Path
) -> None:
    board = escalated.board
    assert escalated.stayed_loaded, "the board reloaded to show the task"
    await expect(board.locator("body")).to_match_aria_snapshot(
        f"""
        - banner:
          - navigation "Console":
            - list:
              - listitem:
                - link "Board"
              - listitem:
                - link "Inbox 1 waiting"
              - listitem:
                - link "Monitor"
              - listitem:
                - link "Knowledge"
          - status: live
        - main:
          - heading "Board" [level=1]
          - region /Running \\d+/
          - region /Escalated \\d+/:
            - heading /Escalated \\d+/ [level=2]
            - table:
              - rowgroup:
                - row:
                  - columnheader "Task"
                  - columnheader "Phase"
                  - columnheader "Iteration"
                  - columnheader "Retries"
                  - columnheader "Context"
                  - columnheader "Cost"
                  - columnheader "Started"
                  - columnheader "Updated"
              - rowgroup:
                - row:
                  - rowheader "{escalated.task_id}":
                    - link "{escalated.task_id}"
                  - cell "escalated"
                  - cell "1"
                  - 'cell "escalate: budget_exhausted"'
          - region /Halted \\d+/
          - region /Approved \\d+/
          - region /Failed \\d+/
        """
    )
    await screenshot(board, tmp_path, "board")


async def test_the_nav_counts_the_open_escalation_live_and_on_every_page(
    escalated: Escalated, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    # The board was loaded before the task escalated: the live feed raised its count.
    await expect(escalated.board.locator("#escalation-count")).to_have_text("1")
    for path in ("/monitor", "/knowledge", f"/tasks/{escalated.task_id}"):
        async with opened(owner, console.origin + path) as page:
            await expect(page.get_by_role("navigation", name="Console")).to_match_aria_snapshot(
                """
                - navigation "Console":
                  - list:
                    - listitem:
                      - link "Board"
                    - listitem:
                      - link "Inbox 1 waiting"
                    - listitem:
                      - link "Monitor"
                    - listitem:
                      - link "Knowledge"
                """
            )
            if path == "/knowledge":
                await screenshot(page, tmp_path, "nav-count")


READ_ATTEMPT = """async (url) => {
    try {
        const answer = await fetch(url, {credentials: "include"});
        return "read " + answer.status + ": " + (await answer.text()).slice(0, 200);
    } catch (error) {
        return "refused: " + error;
    }
}"""
FORM_POST = """([action, fields]) => {
    const form = document.createElement("form");
    form.method = "post";
    form.action = action;
    for (const [name, value] of Object.entries(fields)) {
        const input = document.createElement("input");
        input.type = "hidden";
        input.name = name;
        input.value = value;
        form.appendChild(input);
    }
    document.body.appendChild(form);
    form.submit();
}"""


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_page_on_another_origin_can_neither_read_the_console_nor_answer_for_the_owner(
    host: str, escalated: Escalated, owner: BrowserContext, console: Console
) -> None:
    """Both are another site than the console's own ``s-<hex>.localhost`` name: the host-only,
    SameSite=Strict cookie stays back, and the Origin check would refuse the answer anyway."""
    with other_origin("<!doctype html><title>elsewhere</title><h1>elsewhere</h1>") as site:
        async with opened(owner, site.url.replace("127.0.0.1", host)) as page:
            for path in ("/", f"/tasks/{escalated.task_id}", "/inbox", "/events"):
                seen = await page.evaluate(READ_ATTEMPT, console.origin + path)
                assert seen.startswith("refused: TypeError"), f"{path} was readable: {seen}"
            fields = {"escalation_id": escalated.escalation_id, "action": "abort"}
            async with page.expect_navigation() as navigation:
                await page.evaluate(FORM_POST, [console.origin + "/inbox", fields])
            answer = await navigation.value
            assert answer is not None and answer.status in (401, 403), answer
            assert escalated.task_id not in await page.content()
    status = console.stack.status(escalated.task_id)
    assert "abort by human" not in " ".join(entries(status, "resolution")), status["log"]
    assert status["outcome"] != "aborted"


async def test_a_browser_without_the_secret_gets_no_data(
    browser: Browser, escalated: Escalated, console: Console
) -> None:
    stranger = await browser.new_context()
    try:
        page = await stranger.new_page()
        for path in ("/", f"/tasks/{escalated.task_id}", "/inbox", "/monitor", "/knowledge"):
            answer = await page.goto(console.origin + path)
            assert answer is not None and answer.status == 401, path
            assert escalated.task_id not in await page.content(), path
            assert "url-errors" not in await page.content(), path
        wrong = await page.goto(console.origin + "/?token=not-the-secret")
        assert wrong is not None and wrong.status == 403
        assert await stranger.cookies() == []
    finally:
        await stranger.close()


async def test_the_live_row_shows_retries_used_of_allowed_as_the_served_row_does(
    escalated: Escalated,
) -> None:
    # The row came from the live feed (the board was loaded before the task started).
    row = escalated.board.locator(f'tr[data-task-id="{escalated.task_id}"]')
    await expect(row.locator('[data-field="retries"]')).to_have_text("0/0")


async def test_the_inbox_wraps_the_gate_output_instead_of_scrolling_sideways(
    escalated: Escalated, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, console.origin + "/inbox") as inbox:
        await inbox.set_viewport_size({"width": 640, "height": 900})
        output = inbox.locator(
            f'article[data-escalation-id="{escalated.escalation_id}"] pre.gate-output'
        ).first
        await expect(output).to_contain_text(FAILING_TEST)
        widths = await output.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert widths[0] <= widths[1], f"the gate output scrolls sideways: {widths}"
        page_widths = await inbox.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert page_widths[0] <= page_widths[1], f"the page scrolls sideways: {page_widths}"
        await output.scroll_into_view_if_needed()
        await screenshot(inbox, tmp_path, "inbox-narrow")
        # Not vacuous: the same output kept on its lines would be wider than its box.
        unwrapped = await output.evaluate(
            "e => { e.style.whiteSpace = 'pre'; return [e.scrollWidth, e.clientWidth]; }"
        )
        assert unwrapped[0] > unwrapped[1], unwrapped


async def test_the_inbox_answer_resumes_the_task_and_the_open_board_shows_it_approved(
    escalated: Escalated, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, console.origin + "/inbox") as inbox:
        question = inbox.locator(f'article[data-escalation-id="{escalated.escalation_id}"]')
        await expect(question.locator("pre.gate-output").first).to_contain_text(FAILING_TEST)
        await expect(question).to_match_aria_snapshot(
            f"""
            - 'article "Escalation {escalated.escalation_id}: budget_exhausted"':
              - 'heading "Escalation {escalated.escalation_id}: budget_exhausted" [level=2]'
              - paragraph:
                - link "{escalated.task_id}"
              - heading "Question" [level=3]
              - paragraph: /no retry left/
              - heading "Evidence" [level=3]
              - region "gate tests":
                - paragraph:
                  - link "full log of tests"
              - heading "Suggested actions" [level=3]
              - table:
                - rowgroup:
                  - row:
                    - rowheader "let the developer try again with guidance"
              - heading "Answer" [level=3]
              - form "Answer":
                - textbox "Guidance for the developer (needed to retry)"
                - spinbutton /Extra retries/
                - spinbutton /Extra US dollars/
                - paragraph:
                  - button "Retry with guidance"
                  - button "Approve"
                  - button "Abort"
                  - button "Extend budget"
            """
        )
        await screenshot(inbox, tmp_path, "inbox")
        await question.get_by_label("Guidance for the developer").fill(GUIDANCE)
        await question.get_by_role("button", name="Retry with guidance").click()
        await expect(inbox.locator("#note")).to_have_attribute("data-ok", "true")
        await expect(inbox.locator("#note")).to_contain_text(f"answered {escalated.escalation_id}")

    final = await asyncio.to_thread(finished, console.stack, console.stack.repo, escalated.task_id)
    assert final["outcome"] == "approved"
    assert entries(final, "resolution") == [f"retry by human: {GUIDANCE}"]
    row = escalated.board.locator(f'tr[data-task-id="{escalated.task_id}"]')
    await expect(row, "the open board never moved the task to Approved").to_have_attribute(
        "data-state", "approved"
    )
    assert await escalated.board.evaluate("window.loadedOnce") == "yes"


async def test_the_open_board_drops_the_answered_escalation_from_the_nav_count(
    approved: dict[str, object], escalated: Escalated
) -> None:
    assert approved["outcome"] == "approved"
    await expect(escalated.board.locator("#escalation-count")).to_have_text("0")
    assert await escalated.board.evaluate("window.loadedOnce") == "yes"


async def test_the_task_page_shows_the_gate_output_and_the_sops_the_reviewer_was_given(
    approved: dict[str, object],
    escalated: Escalated,
    owner: BrowserContext,
    console: Console,
    tmp_path: Path,
) -> None:
    assert approved["outcome"] == "approved"
    async with opened(owner, f"{console.origin}/tasks/{escalated.task_id}") as page:
        await expect(page.locator("#summary")).to_have_attribute("data-outcome", "approved")
        await expect(page.get_by_role("main")).to_match_aria_snapshot(
            f"""
            - main:
              - heading /Task {escalated.task_id}/ [level=1]
              - region "Summary"
              - region "Timeline":
                - heading "Timeline" [level=2]
                - region "Iteration 1":
                  - list:
                    - listitem:
                      - strong: gate
                      - link "full log of tests, iteration 1"
                    - listitem:
                      - strong: escalation
                    - listitem:
                      - strong: resolution
                - region "Iteration 2":
                  - list:
                    - listitem:
                      - strong: review
                      - group: /Reviewer's context/
                    - listitem:
                      - strong: finished
              - region "Latest gates":
                - table:
                  - rowgroup:
                    - row:
                      - rowheader "tests"
                      - cell /passed/
              - region "Reviewer's context":
                - table:
                  - rowgroup:
                    - row:
                      - columnheader "Kind"
                      - columnheader "Item"
                      - columnheader "Tokens"
                  - rowgroup:
                    - row:
                      - cell "sops"
                      - rowheader "url-errors"
                      - cell /[1-9]\\d*/
              - region "Diff"
            """
        )
        cited = page.locator("#reviewer-context tr[data-section]")
        assert await cited.evaluate_all("rows => rows.map(r => r.dataset.label)") == ["url-errors"]
        await expect(page.locator("#gates pre.gate-output")).to_contain_text("5 passed")
        wider = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wider <= 0, f"a long output line makes the task page {wider} px too wide"
        await screenshot(page, tmp_path, "task")
        # The failing run of iteration 1: its full log, one click away.
        await page.get_by_role("link", name="full log of tests, iteration 1").click()
        await expect(page.locator("body")).to_contain_text(FAILING_TEST)
        await expect(page.locator("body")).to_contain_text("1 failed")


async def test_the_monitor_shows_the_escalation_signal(
    escalated: Escalated, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, f"{console.origin}/monitor") as page:
        signal = page.locator(
            '#signal-stream tr[data-level="escalate"]', has_text=escalated.task_id
        )
        await expect(signal).to_have_count(1)
        await expect(page.get_by_role("main")).to_match_aria_snapshot(
            f"""
            - main:
              - heading "Monitor" [level=1]
              - region "Signals by level":
                - table:
                  - rowgroup:
                    - row:
                      - columnheader "escalate"
              - region "Signal stream":
                - table:
                  - rowgroup:
                    - row:
                      - cell "escalate"
                      - cell "{escalated.task_id}":
                        - link "{escalated.task_id}"
                      - cell "budget_exhausted"
              - region "Rule hits":
                - table:
                  - rowgroup:
                    - row:
                      - rowheader "budget_exhausted"
              - region "Consumer lag"
              - region /Dead letters \\d+/
            """
        )
        await screenshot(page, tmp_path, "monitor")


async def test_the_knowledge_page_lists_the_sops_with_the_files_each_matches(
    owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, f"{console.origin}/knowledge") as page:
        url_errors = page.locator('#sops tr[data-sop-id="url-errors"]')
        await expect(url_errors).to_match_aria_snapshot(
            """
            - row:
              - rowheader /url-errors URL errors/
              - cell "error"
              - cell "**/*.py":
                - code: "**/*.py"
              - cell:
                - list:
                  - listitem: mdurl/_format.py
            """
        )
        docs_only = page.locator('#sops tr[data-sop-id="docs-pages"]')
        await expect(docs_only).to_have_attribute("data-matches", "0")
        await expect(page.get_by_role("main")).to_match_aria_snapshot(
            """
            - main:
              - heading "Knowledge" [level=1]
              - region "SOPs and rules"
              - region "Conventions"
              - region "Decisions"
            """
        )
        await screenshot(page, tmp_path, "knowledge")


@dataclass
class MoreTasks:
    """A task refused for its oversized file (its title hostile) and an approved one that the
    loop flagged for scope creep; both started after the escalated task was approved."""

    refused: str
    flagged: str


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def more_tasks(approved: dict[str, object], console: Console) -> MoreTasks:
    stack = console.stack
    refused = new_id("refused")
    # The budget check refuses it before the scripted developer plays a turn.
    script = write_script(stack.root / "scripts" / f"{refused}.yaml", [{"reviewer": APPROVE}])
    submit_refused = ("task", "submit", HOSTILE_TITLE, "--id", refused, "--file", BIG_FILE)
    done = await asyncio.to_thread(
        stack.cli,
        *submit_refused,
        *("--criterion", "the table is sorted", "--script", str(script), "--json", "--wait"),
    )
    assert done.stdout, f"task submit printed nothing (exit {done.returncode}): {done.stderr}"
    assert json.loads(done.stdout)["outcome"] == "refused", done.stdout[-2000:]
    flagged = new_id("flagged")
    _, status = await asyncio.to_thread(
        submit, stack, stack.repo, flagged, ["README.md"], [FLAGGED]
    )
    assert status["outcome"] == "approved", json.dumps(status)[-3000:]
    assert entries(status, "flag"), status["log"]
    return MoreTasks(refused, flagged)


TIME_TITLE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
AGO = re.compile(r"^(just now|\d+ (s|min|h|d) ago)$")


async def test_the_board_shows_ages_a_refusals_reason_folded_sections_and_filters(
    more_tasks: MoreTasks, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, console.origin + "/") as board:
        refused = board.locator(f'tr[data-task-id="{more_tasks.refused}"]')
        await expect(refused).to_match_aria_snapshot(
            f"""
            - row:
              - rowheader /{more_tasks.refused} .* huge table .*file limit/:
                - link "{more_tasks.refused}"
              - cell
              - cell "refused"
            """
        )
        # The title is text: the script tag is shown, not run.
        assert HOSTILE_TITLE in await refused.locator("th").inner_text()
        for field in ("started", "updated"):
            when = refused.locator(f'[data-field="{field}"] time')
            assert TIME_TITLE.match(await when.get_attribute("title") or ""), field
            assert AGO.match(await when.inner_text()), field
        # Nothing halted: that section is its heading alone.
        halted = board.get_by_role("region", name=re.compile(r"^Halted"))
        await expect(halted).to_match_aria_snapshot("- region /Halted 0/:\n  - heading /Halted 0/")
        await expect(board.get_by_role("main")).to_match_aria_snapshot(
            """
            - main:
              - heading "Board" [level=1]
              - search "Filter tasks":
                - searchbox "Text"
                - combobox "State"
                - combobox "Plan"
                - button "Filter"
              - region /Running \\d+/
              - region /Escalated 0/
              - region /Halted 0/
              - region /Approved [1-9]\\d*/:
                - heading /Approved/
                - table:
                  - rowgroup:
                    - row:
                      - columnheader "Task"
                      - columnheader "Started"
                      - columnheader "Updated"
              - region /Failed [1-9]\\d*/
            """
        )
        await screenshot(board, tmp_path, "board-all")
        # Typing filters at once; the address keeps the filter for a reload.
        await board.get_by_role("searchbox", name="Text").fill("HUGE TABLE")
        await expect(board.locator("tbody tr:visible")).to_have_count(1)
        await expect(refused).to_be_visible()
        await expect(
            board.get_by_role("region", name=re.compile(r"^Approved"))
        ).to_match_aria_snapshot("- region /Approved 0/:\n  - heading /Approved 0/")
        await expect(board.locator("#filter-note")).to_contain_text("not shown")
        assert board.url.endswith("/?q=HUGE+TABLE"), board.url
        await screenshot(board, tmp_path, "board-filtered")
        await board.reload()
        await expect(board.locator("tbody tr:visible")).to_have_count(1)
        await board.get_by_role("combobox", name="State").select_option("approved")
        await board.get_by_role("searchbox", name="Text").fill("")
        await expect(board.locator("tbody tr:visible")).to_have_count(2)  # both approved
        await expect(board.locator(f'tr[data-task-id="{more_tasks.flagged}"]')).to_be_visible()


async def test_the_task_page_styles_the_flag_and_folds_each_file_of_the_diff(
    more_tasks: MoreTasks, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, f"{console.origin}/tasks/{more_tasks.flagged}") as page:
        flag = page.locator('#timeline li[data-kind="flag"]')
        await expect(flag).to_have_attribute("data-level", "warn")
        await expect(flag).to_match_aria_snapshot(
            f"""
            - listitem:
              - strong: flag
              - text: /warn .*{NOTES}/
            """
        )
        colour = await flag.locator(".level").evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour == "rgb(255, 243, 205)", colour  # the warn badge, not plain text
        files = page.locator("#diff details.diff-file")
        await expect(files).to_have_count(2)
        await expect(page.locator("#diff")).to_match_aria_snapshot(
            """
            - group:
              - text: /README.md \\+3 .1/
            - group:
              - text: /notes.md \\+3 .0/
            """
        )
        # One line per line: each line's box is one line high, with no blank line between.
        heights = await files.first.locator("pre span").evaluate_all(
            "spans => spans.map(s => s.getBoundingClientRect().height)"
        )
        line = await files.first.locator("pre").evaluate(
            "pre => parseFloat(getComputedStyle(pre).lineHeight)"
        )
        assert heights and max(heights) <= line + 1, (heights, line)
        text = await files.first.locator("pre").inner_text()
        assert "\n\n" not in text.strip(), text
        await screenshot(page, tmp_path, "task-flag-diff")
        await files.first.locator("summary").click()
        await expect(files.first).not_to_have_attribute("open", "")
        await expect(files.first.locator("pre")).to_be_hidden()
        await screenshot(page, tmp_path, "task-diff-folded")


async def test_the_task_page_folds_each_iterations_diff_and_times_each_entry(
    approved: dict[str, object],
    escalated: Escalated,
    owner: BrowserContext,
    console: Console,
    tmp_path: Path,
) -> None:
    async with opened(owner, f"{console.origin}/tasks/{escalated.task_id}") as page:
        first = page.locator('details.iteration-diff[data-iteration="1"]')
        second = page.locator('details.iteration-diff[data-iteration="2"]')
        await expect(first.locator(":scope > summary")).to_contain_text("against the base commit")
        await expect(second.locator(":scope > summary")).to_contain_text("against iteration 1")
        await expect(second).not_to_have_attribute("open", "")  # folded until asked for
        await expect(second.locator("details.diff-file")).to_be_hidden()
        await screenshot(page, tmp_path, "task-iterations-folded")
        await second.locator(":scope > summary").click()
        files = second.locator("details.diff-file")
        # The retry changed format.py again: only that, against what iteration 1 left.
        await expect(files).to_have_count(1)
        await expect(files.first).to_have_attribute("data-path", FORMAT_PY)
        await expect(files.first.locator("pre span.add").first).to_be_visible()
        await second.scroll_into_view_if_needed()
        await screenshot(page, tmp_path, "task-iteration-2-diff")
        # Every entry of the timeline says when it was written, as an age with the time on hover.
        entries_shown = page.locator("#timeline li[data-kind]")
        times = page.locator("#timeline li[data-kind] > time")
        await expect(times).to_have_count(await entries_shown.count())
        assert TIME_TITLE.match(await times.first.get_attribute("title") or "")
        assert AGO.match(await times.first.inner_text())


async def test_the_monitor_shows_signal_times_as_ages_with_the_exact_time_on_hover(
    more_tasks: MoreTasks, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    async with opened(owner, f"{console.origin}/monitor") as page:
        scope = page.locator("#signal-stream tr", has_text=more_tasks.flagged).first
        await expect(scope).to_be_visible()
        when = scope.locator("td").first.locator("time")
        assert TIME_TITLE.match(await when.get_attribute("title") or "")
        assert AGO.match(await when.inner_text())
        assert "T" in (await when.get_attribute("datetime") or "")
        await screenshot(page, tmp_path, "monitor-times")


async def test_every_page_shows_a_banner_while_no_monitor_consumes(
    more_tasks: MoreTasks, owner: BrowserContext, console: Console, tmp_path: Path
) -> None:
    """Last in this module: it stops the stack's monitor, and starts it again with ``up``."""
    stack = console.stack
    pages = ("/", "/inbox", "/monitor", "/knowledge", f"/tasks/{more_tasks.flagged}")
    async with opened(owner, console.origin + "/knowledge") as page:
        await expect(page.locator("#monitor-banner")).to_have_count(0)
        await asyncio.to_thread(stack.kill, "monitor")
        try:
            # The killed monitor's lease runs out (risk.leader.lease_ttl_s); then every page says.
            banner = page.locator("#monitor-banner")
            for _ in range(60):
                await page.reload()
                if await banner.count():
                    break
                await asyncio.sleep(1)
            await expect(banner).to_contain_text("no risk monitor holds the lease")
            for path in pages:
                await page.goto(console.origin + path)
                await expect(page.get_by_role("main")).to_match_aria_snapshot(
                    """
                    - main:
                      - alert:
                        - strong: "Loop events are not being consumed:"
                        - text: /no risk monitor holds the lease/
                        - link "Monitor"
                    """
                )
                name = path.strip("/").split("/")[0] or "board"
                await screenshot(page, tmp_path, f"banner-{name}")
        finally:
            await asyncio.to_thread(stack.cli, "up")
        for _ in range(60):
            await page.goto(console.origin + "/knowledge")
            if not await page.locator("#monitor-banner").count():
                break
            await asyncio.sleep(1)
        await expect(page.locator("#monitor-banner")).to_have_count(0)
