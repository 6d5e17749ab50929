"""A real browser for the console's tests and bench: Playwright driving Debian's chromium.

Nothing is downloaded: Playwright (from PyPI) launches the ``chromium`` the system package
installed (``.ci/run`` installs it on CI). A machine without it skips the browser tests with the
reason, except on CI (``CI`` set), where a missing browser fails them instead of hiding them.

``chromium()`` gives a launched browser; ``opened`` a page at a URL; ``screenshot`` saves a
full page under a folder and prints its path (``pytest -s`` shows it); ``other_origin`` serves
one page of our own on another loopback port, the stand-in for a hostile site the user has open
next to the console.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

CHROMIUM = Path("/usr/bin/chromium")
WAIT_MS = 15_000
"""How long a browser wait may take before it fails with its message (a crowded CI machine
runs the stack, a worker and the browser on two cores)."""


def require_chromium() -> Path:
    """The chromium executable; skips the test without it, but fails on CI (``CI`` set)."""
    if CHROMIUM.exists():
        return CHROMIUM
    reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests", pytrace=False)
    pytest.skip(reason)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """A headless chromium launched from the system package, closed on exit."""
    executable = require_chromium()
    expect.set_options(timeout=WAIT_MS)
    async with async_playwright() as playwright:
        # Root on CI: chromium's own sandbox refuses to start as root without user namespaces.
        browser = await playwright.chromium.launch(
            executable_path=str(executable), args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def opened(context: BrowserContext, url: str) -> AsyncIterator[Page]:
    """A new page of ``context`` at ``url``, closed when the block ends."""
    page = await context.new_page()
    try:
        await page.goto(url)
        yield page
    finally:
        await page.close()


async def screenshot(page: Page, folder: Path, name: str) -> Path:
    """Save the whole page as ``folder/name.png``, print the path, and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    print(f"screenshot {name}: {path}")
    return path


@dataclass
class OtherOrigin:
    """A page served from another loopback port than the console's: another origin."""

    url: str
    requests: list[str]


@contextmanager
def other_origin(html: str) -> Iterator[OtherOrigin]:
    """Serve ``html`` at ``/`` on a free loopback port (a thread) until the block ends."""
    body = html.encode("utf-8")
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # the test's output is for its own messages

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield OtherOrigin(f"http://127.0.0.1:{server.server_address[1]}/", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
