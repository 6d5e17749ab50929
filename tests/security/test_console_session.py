"""The console's session belongs to one start of one console (issue 25, item 3), in a real
browser (Debian's chromium through Playwright) against consoles ``semspec up`` and
``semspec ui`` started.

The attacker is ``nobody`` (``runuser``), who can listen on any free loopback port: the page the
owner visits there, the listener that takes the console's port after ``semspec down``, the
cookie value replayed on the console's next port or on another console. Before per-start
sessions the cookie was set for ``127.0.0.1`` (cookies ignore ports, so every loopback server
got it) and held a fixed HMAC of a secret kept for good (so any value ever issued opened every
later console of the stack).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.async_api import Browser, BrowserContext

from tests.security.conftest import ATTACKER, RUNUSER, SYSTEM_PYTHON, ForeignUser
from tests.support.browser import chromium, require_chromium
from tests.support.stack import Stack, check_gate, cli_env, running_stack, sample_config

COOKIE = "semspec_console"
"""The session cookie's name (before per-start sessions, followed by ``_<port>``)."""

# nobody's server: logs every request's path and headers as a JSON line, answers with a page,
# and stops when its standard input closes.
NOBODY_SERVER = r"""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Seen(BaseHTTPRequestHandler):
    def do_GET(self):
        print(json.dumps({"path": self.path, "headers": dict(self.headers.items())}), flush=True)
        body = b"<!doctype html><title>nobody</title><p>a page run by nobody</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Seen)
print(json.dumps({"port": server.server_address[1]}), flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
"""

# nobody replays a cookie: one GET to 127.0.0.1:PORT naming HOST, with the cookie header given.
NOBODY_REPLAY = r"""
import json, sys, urllib.error, urllib.request
port, host, cookie = sys.argv[1], sys.argv[2], sys.argv[3]
request = urllib.request.Request(
    f"http://127.0.0.1:{port}/inbox", headers={"Host": host, "Cookie": cookie}
)
try:
    with urllib.request.urlopen(request, timeout=10) as answer:
        print(json.dumps([answer.status, answer.read().decode()[:2000]]))
except urllib.error.HTTPError as err:
    print(json.dumps([err.code, err.read().decode()[:2000]]))
"""


@dataclass
class Seen:
    """One request nobody's server received."""

    path: str
    headers: dict[str, str]


@dataclass
class NobodyServer:
    """A web server run by ``nobody`` on a loopback port, and the requests it saw."""

    port: int
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    def seen(self, at_least: int) -> list[Seen]:
        """Every request logged since the last call, once there are ``at_least`` of them
        (the server logs a request before it answers; our reader may lag behind)."""
        found: list[Seen] = []
        while len(found) < at_least or not self.lines.empty():
            try:
                raw = json.loads(self.lines.get(timeout=15))
            except queue.Empty:
                break
            found.append(Seen(raw["path"], raw["headers"]))
        return found


@contextmanager
def nobody_serves(foreign_user: ForeignUser, port: int = 0) -> Iterator[NobodyServer]:
    """Run ``NOBODY_SERVER`` as ``nobody`` on ``port`` (0: any free one) until the block ends."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(foreign_user.home), "LANG": "C.UTF-8"}
    argv = [RUNUSER, "-u", ATTACKER, "--", SYSTEM_PYTHON, "-I", "-c", NOBODY_SERVER, str(port)]
    with subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=foreign_user.home,
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
        stdout = proc.stdout
        reader: threading.Thread | None = None
        try:
            first = stdout.readline()
            assert first, f"nobody's server did not start: {proc.stderr.read()}"
            server = NobodyServer(int(json.loads(first)["port"]))

            def read() -> None:
                for line in stdout:
                    server.lines.put(line)

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            yield server
        finally:
            proc.stdin.close()  # the server's signal to stop
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()  # the runuser process this fixture started
                proc.wait(timeout=20)
            if reader is not None:
                reader.join(timeout=5)


def nobody_replays(foreign_user: ForeignUser, port: int, host: str, cookie: str) -> int:
    """The status nobody gets for the console's inbox with ``cookie`` sent as-is."""
    done = foreign_user.python(NOBODY_REPLAY, str(port), host, cookie)
    assert done.returncode == 0, done.stderr
    status, _ = json.loads(done.stdout)
    return int(status)


@dataclass(frozen=True)
class Console:
    """A running console as its owner sees it: the login URL printed for it."""

    login_url: str

    @property
    def origin(self) -> str:
        return self.login_url.split("/?", 1)[0]

    @property
    def authority(self) -> str:
        """What a browser sends as ``Host`` to it."""
        return str(urlsplit(self.login_url).netloc)

    @property
    def port(self) -> int:
        return int(urlsplit(self.login_url).port or 0)


def up_console(stack: Stack) -> Console:
    """The console ``up`` started, by the URL ``semspec status`` prints."""
    row = next(s for s in stack.cli_json("status") if s["name"] == "console")
    return Console(row["extra"]["url"])


def cookie_header(console: Console, value: str) -> str:
    """``value`` under every name a console's cookie has had (renamed for ``console``)."""
    return f"{COOKIE}={value}; {COOKIE}_{console.port}={value}"


@asynccontextmanager
async def owner_logged_in(browser: Browser, console: Console) -> AsyncIterator[BrowserContext]:
    """The owner's browser after opening the URL ``semspec status`` prints."""
    context = await browser.new_context()
    try:
        page = await context.new_page()
        answer = await page.goto(console.login_url)
        assert answer is not None and answer.status == 200, "the owner could not log in"
        assert page.url == console.origin + "/"
        await page.close()
        yield context
    finally:
        await context.close()


async def cookie_value(context: BrowserContext, console: Console) -> str:
    """The session cookie the browser holds for ``console``."""
    found = [c for c in await context.cookies(console.origin) if c["name"].startswith(COOKIE)]
    assert len(found) == 1, await context.cookies()
    return found[0]["value"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    require_chromium()
    with running_stack(
        tmp_path_factory.mktemp("console-session"), sample_config([check_gate()])
    ) as up:
        yield up


async def test_a_page_on_another_loopback_port_run_by_another_user_gets_no_cookie(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    console = up_console(stack)
    async with chromium() as browser, owner_logged_in(browser, console) as owner:
        value = await cookie_value(owner, console)
        with nobody_serves(foreign_user) as nobody:
            page = await owner.new_page()
            for host in ("127.0.0.1", "localhost"):
                answer = await page.goto(f"http://{host}:{nobody.port}/")
                assert answer is not None and answer.status == 200
            await page.close()
            seen = nobody.seen(at_least=2)
    assert len(seen) >= 2, seen
    assert [r for r in seen if value in str(r.headers) or COOKIE in str(r.headers)] == [], seen


async def test_a_cookie_from_an_earlier_up_opens_nothing_after_down_and_up(
    tmp_path: Path, foreign_user: ForeignUser
) -> None:
    require_chromium()
    with running_stack(tmp_path, sample_config([check_gate()])) as stack:
        old = up_console(stack)
        async with chromium() as browser, owner_logged_in(browser, old) as owner:
            old_value = await cookie_value(owner, old)
            tab = await owner.new_page()
            await tab.goto(old.origin + "/")
            down = stack.cli("down")
            assert down.returncode == 0, down.stderr
            # nobody takes the console's port; the owner's open tab reloads into it.
            with nobody_serves(foreign_user, old.port) as nobody:
                await tab.reload()
                taken = [r.headers.get("Cookie", "") for r in nobody.seen(at_least=1)]
                again = stack.cli("up")
                assert again.returncode == 0, again.stderr
                new = up_console(stack)
                assert new.port != old.port  # nobody holds the old one
                # Whatever the listener took and what the owner's browser held, renamed for
                # the new console and replayed there by nobody.
                values = {old_value} | {
                    part.split("=", 1)[1]
                    for cookie in taken
                    for part in cookie.split("; ")
                    if part.startswith(COOKIE)
                }
                for value in values:
                    replay = cookie_header(new, value)
                    assert nobody_replays(foreign_user, new.port, new.authority, replay) == 401
            # The owner's browser still holds the old cookie: it opens nothing new either.
            page = await owner.new_page()
            for name in (COOKIE, f"{COOKIE}_{new.port}"):
                await owner.add_cookies([{"name": name, "value": old_value, "url": new.origin}])
            answer = await page.goto(new.origin + "/inbox")
            assert answer is not None and answer.status == 401
            answer = await page.goto(new.login_url)
            assert answer is not None and answer.status == 200  # the URL printed now does


async def test_a_cookie_value_replayed_on_another_console_port_opens_nothing(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    first = up_console(stack)
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "ui", "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=cli_env()) as proc:
        try:
            assert proc.stdout is not None
            second = Console(json.loads(proc.stdout.readline())["url"])
            assert second.port != first.port
            async with chromium() as browser, owner_logged_in(browser, first) as owner:
                value = await cookie_value(owner, first)
                own = cookie_header(first, value)
                # The replay itself works: on its own console the value opens the inbox.
                assert nobody_replays(foreign_user, first.port, first.authority, own) == 200
                other = cookie_header(second, value)
                assert nobody_replays(foreign_user, second.port, second.authority, other) == 401
                # Renamed for the other console's host and port, in the browser.
                for name in (COOKIE, f"{COOKIE}_{second.port}"):
                    await owner.add_cookies([{"name": name, "value": value, "url": second.origin}])
                page = await owner.new_page()
                answer = await page.goto(second.origin + "/inbox")
                assert answer is not None and answer.status == 401
        finally:
            proc.terminate()  # the console this test started
            proc.wait(timeout=30)
