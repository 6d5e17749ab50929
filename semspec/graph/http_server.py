"""The stack's graph server: the SPARQL 1.1 protocol subset semspec's client speaks, over the
Oxigraph store in the graph directory, served to the stack's owner only.

    python -m semspec.graph.http_server --location DIR --port N --token-file PATH

| request | answer |
|---|---|
| ``GET /query?query=Q`` | as ``POST /query`` |
| ``POST /query``, body ``application/sparql-query`` | SELECT, ASK: SPARQL JSON results |
| | CONSTRUCT, DESCRIBE: ``application/n-triples`` |
| ``POST /update``, body ``application/sparql-update`` | 204 |

``oxigraph serve`` answered anyone who reached its loopback port, browsers included (a
cross-origin HTML form POST to ``/update`` is a request with no preflight). Here, before anything
else: a request with an ``Origin`` header (only browsers send one) gets 403; one without
``Authorization: Bearer <token>`` (the token of ``server_token``, compared in constant time) gets
401. Form bodies are not SPARQL here (415), bodies are bounded (413), and the server binds to
loopback only. Queries run on worker threads (pyoxigraph releases the GIL), so a slow query
holds up no other request. The default graph of a query is the union of the named graphs, as in
the embedded store, so a query means one thing in both modes.
"""

from __future__ import annotations

import argparse
import hmac
import sys
from collections.abc import Mapping
from pathlib import Path

import pyoxigraph
import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from semspec.core.errors import ServiceError
from semspec.core.logging import configure_logging, get_logger
from semspec.graph.server_token import read_token

LOOPBACK = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest SPARQL text accepted; replacing one indexed source (at most ``index.max_file_bytes``
of text) stays far below it."""
RESULTS_JSON = "application/sparql-results+json"
N_TRIPLES = "application/n-triples"
QUERY_BODY = "application/sparql-query"
UPDATE_BODY = "application/sparql-update"
# Answers are the owner's data: no cache keeps them, no browser guesses their type.
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}

logger = get_logger("graph_server")


class Refused(Exception):
    """A request the server does not run: its HTTP status and a one-line reason."""

    def __init__(self, status: int, reason: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = dict(headers or {})

    def response(self) -> Response:
        return PlainTextResponse(
            self.reason + "\n", self.status, headers={**_HEADERS, **self.headers}
        )


class GraphApp:
    """The ASGI application: admit the request, read its SPARQL, run it on a worker thread."""

    def __init__(self, store: pyoxigraph.Store, token: str, max_body: int = MAX_BODY_BYTES) -> None:
        self._store = store
        self._token = token.encode("utf-8")
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            self._admit(request)
            kind, text = await self._operation(request)
            response = await run_in_threadpool(self._run, kind, text)
        except Refused as refused:
            if refused.status in (401, 403):
                client = request.client.host if request.client else "?"
                logger.warning(
                    "graph_server.refused",
                    status=refused.status,
                    method=request.method,
                    path=request.url.path,
                    client=client,
                )
            response = refused.response()
        await response(scope, receive, send)

    def _admit(self, request: Request) -> None:
        if "origin" in request.headers:
            raise Refused(403, "refused: requests from a browser (with an Origin header)")
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode("utf-8"), self._token
        ):
            raise Refused(
                401,
                "refused: send the stack's token as Authorization: Bearer (graph.token in the "
                "run folder)",
                {"WWW-Authenticate": 'Bearer realm="semspec graph"'},
            )

    async def _operation(self, request: Request) -> tuple[str, str]:
        path, method = request.url.path, request.method
        allowed = {"query"} if (path, method) == ("/query", "GET") else set()
        if extra := sorted(set(request.query_params) - allowed):
            raise Refused(400, f"unsupported parameter {extra[0]!r}: name graphs in the SPARQL")
        if path == "/query" and method == "GET":
            query = request.query_params.get("query", "")
            if not query:
                raise Refused(400, "a GET of /query needs a query parameter")
            return "query", query
        if path == "/query" and method == "POST":
            return "query", await self._body(request, QUERY_BODY)
        if path == "/update" and method == "POST":
            return "update", await self._body(request, UPDATE_BODY)
        if path in ("/query", "/update"):
            allow = "GET, POST" if path == "/query" else "POST"
            raise Refused(405, f"{method} is not served on {path}", {"Allow": allow})
        raise Refused(404, "not found: this server answers /query and /update")

    async def _body(self, request: Request, content_type: str) -> str:
        given = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if given != content_type:
            raise Refused(415, f"send the SPARQL as the body, with Content-Type: {content_type}")
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_body:
            raise Refused(413, f"the body is larger than {self._max_body} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self._max_body:
                raise Refused(413, f"the body is larger than {self._max_body} bytes")
            chunks.append(chunk)
        try:
            return b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(400, "the body is not UTF-8 text") from None

    def _run(self, kind: str, text: str) -> Response:
        try:
            if kind == "update":
                self._store.update(text)
                return Response(status_code=204, headers=_HEADERS)
            result = self._store.query(text, use_default_graph_as_union=True)
            if isinstance(result, pyoxigraph.QueryTriples):
                body = result.serialize(format=pyoxigraph.RdfFormat.N_TRIPLES)
                media_type = N_TRIPLES
            else:
                body = result.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
                media_type = RESULTS_JSON
        except (SyntaxError, ValueError) as exc:
            raise Refused(400, str(exc)) from None
        except OSError as exc:
            logger.error("graph_server.failed", kind=kind, error=str(exc))
            return PlainTextResponse(str(exc) + "\n", 500, headers=_HEADERS)
        return Response(body, media_type=media_type, headers=_HEADERS)


def main(argv: list[str] | None = None) -> int:
    """Serve the store in ``--location`` on ``127.0.0.1:--port`` until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(
        prog="python -m semspec.graph.http_server",
        description="SPARQL 1.1 query and update over an Oxigraph store, for the token's holder",
    )
    parser.add_argument("--location", type=Path, required=True, help="the store directory")
    parser.add_argument("--port", type=int, required=True, help="loopback port to listen on")
    parser.add_argument("--token-file", type=Path, required=True, help="file with the token")
    args = parser.parse_args(argv)
    configure_logging("json")
    try:
        token = read_token(args.token_file)
    except ServiceError as exc:
        print(f"graph server: {exc.message}", file=sys.stderr)
        return 2
    try:
        store = pyoxigraph.Store(str(args.location))
    except OSError as exc:
        print(f"graph server: cannot open {args.location}: {exc}", file=sys.stderr)
        return 1
    print(f"graph server: {args.location} on http://{LOOPBACK}:{args.port}", flush=True)
    config = uvicorn.Config(
        GraphApp(store, token),
        host=LOOPBACK,
        port=args.port,
        lifespan="off",
        ws="none",
        access_log=False,
        log_level="warning",
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=5,
    )
    # Every update is in the store's write-ahead log when it is answered, so a SIGTERM (which
    # uvicorn re-raises once it stopped serving) loses nothing.
    uvicorn.Server(config).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
