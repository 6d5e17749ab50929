"""``semspec ui`` of a repository in a process of its own, and an HTTP client logged in to it,
for the scenario tests that read the console's pages as a browser would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx

from tests.support.stack import cli_env


@dataclass(frozen=True)
class Console:
    """A logged-in HTTP client of the console and the console's origin."""

    http: httpx.Client
    origin: str
    """``http://NAME.localhost:PORT``, what a browser shows in its address bar."""


@contextmanager
def console_ui(repo: Path) -> Iterator[Console]:
    """``semspec ui --port 0`` of ``repo``, logged in with the token its URL carries; the
    process is stopped after the block."""
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "ui", "--port", "0", "--json"]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"semspec ui printed nothing: {proc.stderr.read() if proc.stderr else ''}"
        url = httpx.URL(json.loads(line)["url"])
        # The console's *.localhost name is for browsers (they resolve it themselves): connect
        # to loopback and name it in Host, as a browser does.
        loopback = f"http://127.0.0.1:{url.port}"
        named = {"Host": f"{url.host}:{url.port}"}
        with httpx.Client(base_url=loopback, headers=named, timeout=60) as http:
            assert http.get("/", params={"token": url.params["token"]}).status_code == 303
            yield Console(http, f"http://{url.host}:{url.port}")
    finally:
        proc.terminate()  # the process this helper started
        proc.communicate(timeout=30)
