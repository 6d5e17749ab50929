"""What the fake model servers share: a quiet JSON request handler and a server run on
127.0.0.1 at a free port from a daemon thread, as a context manager. Only the standard library:
the fakes run inside the test process."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class FakeHTTPServer(ThreadingHTTPServer):
    """A server whose request threads never keep the test process alive."""

    daemon_threads = True


class JsonHandler(BaseHTTPRequestHandler):
    """Reads request bodies as JSON and writes JSON replies, logging nothing."""

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    @property
    def route(self) -> str:
        """The request path without its query and trailing slash."""
        return self.path.split("?")[0].rstrip("/")

    def read_body(self) -> Any:
        """The request body as JSON, or as text when it is not JSON."""
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def send_text(self, status: int, body: str, headers: Mapping[str, str] | None = None) -> None:
        """``body`` as the reply, sent as JSON whether or not it is (a malformed-body test)."""
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        # The client may have given up already (a timeout test); that is fine.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        """``body`` as a JSON reply."""
        self.send_text(status, json.dumps(body), headers)

    def send_models(self, models: Sequence[str]) -> None:
        """The ``GET /v1/models`` list of the OpenAI API."""
        listed = [{"id": m, "object": "model", "owned_by": "fake"} for m in models]
        self.send_json(200, {"object": "list", "data": listed})

    def send_no_route(self) -> None:
        """404 for a path the fake does not serve."""
        self.send_json(404, {"error": {"message": f"no route {self.path}"}})


class LoopbackServer:
    """Runs the server ``make_server`` gives on 127.0.0.1 at a free port, from ``start`` (or
    entering a ``with`` block) to ``stop`` (or leaving it)."""

    def __init__(self) -> None:
        self._server: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def make_server(self) -> FakeHTTPServer:
        """A new server bound to ``("127.0.0.1", 0)``, its handler given what it answers from."""
        raise NotImplementedError

    @property
    def root_url(self) -> str:
        """Base URL without ``/v1`` (what the Anthropic SDK expects)."""
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """Base URL including ``/v1`` (what the OpenAI SDK expects)."""
        return f"{self.root_url}/v1"

    def start(self) -> Self:
        """Serve from a daemon thread; returns the server for ``with`` and chaining."""
        self._server = self.make_server()
        # A short poll interval keeps stop() fast; the default 0.5 s adds up over many tests.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
