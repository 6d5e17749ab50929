"""Scenario: the task page's Land button in a real browser (chromium, driven by Playwright), on a
stack the real ``semspec up`` started, console included, in a copy of mdurl whose test suite is
the required gate.

Two tasks change the same line of ``mdurl/_format.py`` and are approved (the second declared
another file, so it does not wait for the first to land). The board and the task page show each
as approved, not landed, with a Land button. A form posted from a page on another origin, open
in the owner's browser, lands nothing; nor does a request forged over plain HTTP (no session
cookie, another origin, no origin, cross-site). With an uncommitted edit in the checkout, Land
refuses with the words ``semspec task land`` prints and moves nothing. Pressed on a clean
checkout, Land moves main to the task's commit and the page shows it landed with that commit;
so does the board. The second task's land conflicts: the page names the file, main stays.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest
import pytest_asyncio
from playwright.async_api import BrowserContext, Page, expect

from semspec.services.console_session import load_session, session_file
from tests.support.browser import WAIT_MS, chromium, opened, other_origin, require_chromium
from tests.support.mdurl_project import (
    FORMAT_PY,
    TEST_SUITE,
    original,
    package_sources,
    pytest_gate,
)
from tests.support.scenario_tasks import APPROVE, new_id, submit
from tests.support.stack import Stack, running_stack, sample_config

FORM_POST = """([action]) => {
    const form = document.createElement("form");
    form.method = "post";
    form.action = action;
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = "action";
    input.value = "land";
    form.appendChild(input);
    document.body.appendChild(form);
    form.submit();
}"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@dataclass
class Console:
    """The stack, the console's origin, the URL ``semspec status`` prints, and two approved
    tasks on one line of ``_format.py``."""

    stack: Stack
    origin: str
    login_url: str
    first: str
    rival: str


def approved(stack: Stack, prefix: str, declared: str, text: str) -> str:
    """An approved task that declared ``declared`` and wrote ``text`` into ``_format.py``."""
    task_id = new_id(prefix)
    script = [{"developer": {"write": {FORMAT_PY: text}}, "reviewer": APPROVE}]
    code, result = submit(stack, stack.repo, task_id, [declared], script)
    assert code == 0 and result["outcome"] == "approved", str(result)[-2000:]
    return task_id


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """``semspec up`` in the mdurl copy (the console with it) and the two approved tasks."""
    require_chromium()  # no stack is started for tests that cannot run
    files = {
        **package_sources(),
        "tests/test_mdurl.py": TEST_SUITE,
        "README.md": "# mdurl, copied for the console's land scenario\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    }
    config = sample_config([pytest_gate()])
    with running_stack(tmp_path_factory.mktemp("console-land"), config, files) as stack:
        services = stack.cli_json("status")
        url = next(s for s in services if s["name"] == "console")["extra"]["url"]
        text = original(FORMAT_PY)
        first = approved(
            stack, "brackets", FORMAT_PY, text.replace("# ipv6 address", "# ipv6 in brackets")
        )
        # Declared another file, so it does not wait for the first to land; wrote its line.
        rival = approved(
            stack, "rival", "mdurl/_parse.py", text.replace("# ipv6 address", "# IPv6 host")
        )
        yield Console(stack, re.sub(r"/\?token=.*$", "", url), url, first, rival)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def owner(console: Console) -> AsyncIterator[BrowserContext]:
    """The stack owner's browser: it opened the printed URL, so it holds the session cookie."""
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(WAIT_MS)
        async with opened(context, console.login_url):
            pass
        yield context
        await context.close()


async def press_land(page: Page) -> None:
    """Press Land and wait for the page it leads back to (the land's gates run meanwhile)."""
    async with page.expect_navigation(timeout=180_000):
        await page.get_by_role("button", name="Land").click()


async def test_approved_tasks_show_not_landed_with_a_land_button(
    owner: BrowserContext, console: Console
) -> None:
    async with opened(owner, f"{console.origin}/tasks/{console.first}") as page:
        land = page.locator('#summary [data-field="land"]')
        await expect(land).to_have_attribute("data-land-state", "approved")
        await expect(land).to_have_text(f"not landed (approved; semspec task land {console.first})")
        await expect(page.get_by_role("button", name="Land")).to_be_visible()
    async with opened(owner, console.origin + "/") as board:
        for task in (console.first, console.rival):
            cell = board.locator(f'#task-{task} [data-field="land"]')
            await expect(cell).to_have_text("approved (not landed)")


async def test_a_land_posted_from_another_origin_lands_nothing(
    owner: BrowserContext, console: Console
) -> None:
    before = git(console.stack.repo, "rev-parse", "main")
    with other_origin("<!doctype html><title>elsewhere</title><h1>elsewhere</h1>") as site:
        async with opened(owner, site.url) as page:
            async with page.expect_navigation() as navigation:
                action = f"{console.origin}/tasks/{console.first}/land"
                await page.evaluate(FORM_POST, [action])
            answer = await navigation.value
            assert answer is not None and answer.status in (401, 403), answer
    assert git(console.stack.repo, "rev-parse", "main") == before
    land = console.stack.status(console.first)["land"]
    assert land == {"state": "approved"}, land


def test_a_forged_land_request_is_refused_and_lands_nothing(console: Console) -> None:
    """Over plain HTTP, as a script would forge it: without the session cookie, from another
    origin, with no origin, or cross-site by the browser's word; each moves nothing."""
    repo = console.stack.repo
    before = git(repo, "rev-parse", "main")
    port = console.stack.records()["console"].ports["http"]
    session = load_session(session_file(console.stack.run_dir, port))
    assert session is not None
    path = f"/tasks/{console.first}/land"
    form = {"action": "land"}
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Host": session.authority}, timeout=30
    ) as client:
        assert client.post(path, data=form, headers={"Origin": console.origin}).status_code == 401
        assert client.get("/", params={"token": session.secret}).status_code == 303
        for headers in (
            {"Origin": "http://evil.example"},
            {},
            {"Origin": console.origin, "Sec-Fetch-Site": "cross-site"},
        ):
            answer = client.post(path, data=form, headers=headers)
            assert answer.status_code == 403, (headers, answer.status_code, answer.text)
    assert git(repo, "rev-parse", "main") == before
    assert console.stack.status(console.first)["land"] == {"state": "approved"}


async def test_land_with_a_dirty_checkout_refuses_with_the_clis_words(
    owner: BrowserContext, console: Console
) -> None:
    repo = console.stack.repo
    before = git(repo, "rev-parse", "main")
    readme = repo / "README.md"
    kept = readme.read_text(encoding="utf-8")
    readme.write_text(kept + "an edit of my own\n", encoding="utf-8")
    try:
        async with opened(owner, f"{console.origin}/tasks/{console.first}") as page:
            await press_land(page)
            note = page.locator("#land-note")
            await expect(note).to_have_attribute("data-ok", "false")
            shown = " ".join((await note.inner_text()).split())
        cli = await asyncio.to_thread(console.stack.cli, "task", "land", console.first)
        assert cli.returncode == 1, cli.stdout + cli.stderr
        said = " ".join(cli.stdout.split())  # the terminal may fold long lines
        assert shown == said, (shown, said)
        assert said.startswith("not landed: ") and " hint: " in said, said
        assert git(repo, "rev-parse", "main") == before
        assert readme.read_text(encoding="utf-8").endswith("an edit of my own\n")
    finally:
        readme.write_text(kept, encoding="utf-8")


async def test_pressing_land_moves_main_and_the_page_shows_it_landed_with_the_commit(
    owner: BrowserContext, console: Console
) -> None:
    repo = console.stack.repo
    async with opened(owner, f"{console.origin}/tasks/{console.first}") as page:
        await press_land(page)
        note = page.locator("#land-note")
        await expect(note).to_have_attribute("data-ok", "true")
        main = git(repo, "rev-parse", "main")
        await expect(note).to_contain_text(f"landed {console.first} on main at {main[:12]}")
        land = page.locator('#summary [data-field="land"]')
        await expect(land).to_have_attribute("data-land-state", "landed")
        await expect(land).to_have_attribute("data-commit", main)
        await expect(land).to_have_text(f"landed {main[:12]}")
        await expect(page.get_by_role("button", name="Land")).to_have_count(0)
    assert "ipv6 in brackets" in (repo / FORMAT_PY).read_text(encoding="utf-8")
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    async with opened(owner, console.origin + "/") as board:
        cell = board.locator(f'#task-{console.first} [data-field="land"]')
        await expect(cell).to_have_attribute("data-land-state", "landed")
        await expect(cell).to_have_text(f"landed {main[:12]}")


async def test_a_conflicting_land_names_the_file_and_main_stays(
    owner: BrowserContext, console: Console
) -> None:
    repo = console.stack.repo
    before = git(repo, "rev-parse", "main")
    async with opened(owner, f"{console.origin}/tasks/{console.rival}") as page:
        await press_land(page)
        note = page.locator("#land-note")
        await expect(note).to_have_attribute("data-ok", "false")
        await expect(note).to_contain_text(f"conflicts in {FORMAT_PY}")
        await expect(note).to_contain_text("hint: ")
        land = page.locator('#summary [data-field="land"]')
        await expect(land).to_have_attribute("data-land-state", "land failed")
        await expect(land).to_contain_text("failed (land_conflict: ")
    assert git(repo, "rev-parse", "main") == before
    async with opened(owner, console.origin + "/") as board:
        cell = board.locator(f'#task-{console.rival} [data-field="land"]')
        await expect(cell).to_have_text("land failed land_conflict")
