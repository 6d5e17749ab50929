"""The graph store over a SPARQL 1.1 endpoint (the stack's Oxigraph server, or an external one).

A small protocol client instead of rdflib's SPARQLStore: that one asks for XML results and
parses them term by term in Python, which costs more than the queries. Here SELECT results come
as ``application/sparql-results+json`` (parsed by the C json module), queries and updates go as
POST bodies (no URL length limit), and one kept-alive connection per endpoint serves every
request of the store. Data reaches the text only through the store's ``bindings``. With a token
(the stack's server always asks for one) every request carries ``Authorization: Bearer``.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any
from urllib.parse import urlsplit

from rdflib.namespace import XSD
from rdflib.term import BNode, Literal, Node, URIRef

from semspec.core.errors import InputError, ServiceError
from semspec.graph.sparql_terms import Bindings, bind
from semspec.graph.store import Row, _SparqlStore

RESULTS_JSON = "application/sparql-results+json"
_XSD_STRING = str(XSD.string)
# What a server that closed an idle kept-alive connection looks like on the next request.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def term_from_json(cell: dict[str, Any]) -> Node:
    """One RDF term of a SPARQL JSON result (``{"type": ..., "value": ...}``) as rdflib's."""
    kind, value = cell.get("type"), cell.get("value", "")
    if kind == "uri":
        return URIRef(value)
    if kind in ("literal", "typed-literal"):
        if "xml:lang" in cell:
            return Literal(value, lang=cell["xml:lang"])
        datatype = cell.get("datatype")
        # Plain strings stay untyped, as every other store returns them.
        if datatype is None or datatype == _XSD_STRING:
            return Literal(value)
        return Literal(value, datatype=URIRef(datatype))
    if kind == "bnode":
        return BNode(value)
    raise InputError(f"graph store returned an unsupported term {cell!r}")


def rows_from_json(body: bytes) -> list[Row]:
    """Rows of a SPARQL JSON SELECT result; unbound variables map to None."""
    try:
        doc = json.loads(body)
        names = [str(name) for name in doc["head"]["vars"]]
        solutions = doc["results"]["bindings"]
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(doc := _maybe_json(body), dict) and "boolean" in doc:
            raise InputError(
                "graph store: expected a SELECT query", hint="use SELECT ... WHERE"
            ) from None
        raise ServiceError(
            f"answered with something that is not a SPARQL JSON result ({exc})",
            service="graph store",
        ) from None
    return [
        {name: term_from_json(cell) if (cell := row.get(name)) else None for name in names}
        for row in solutions
    ]


def _maybe_json(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


class _Endpoint:
    """One endpoint URL and its kept-alive connection."""

    def __init__(self, url: str, timeout_s: float, token: str | None = None) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(
                f"graph endpoint {url!r} is not an http(s) URL",
                hint="set graph.query_url and graph.update_url to http://host:port/... URLs",
            )
        self.url = url
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._timeout = timeout_s
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        self._conn: http.client.HTTPConnection | None = None

    def post(self, content_type: str, text: str, accept: str) -> tuple[int, bytes]:
        """POST ``text``; the status and body. A kept-alive connection the server has closed
        meanwhile is replaced once."""
        body = text.encode("utf-8")
        headers = {"Content-Type": f"{content_type}; charset=utf-8", "Accept": accept}
        headers.update(self._auth)
        reused = self._conn is not None
        try:
            return self._send(body, headers)
        except _STALE:
            self.close()
            if not reused:
                raise
            return self._send(body, headers)
        except BaseException:
            self.close()
            raise

    def _send(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        if self._conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = kind(self._host, self._port, timeout=self._timeout)
        self._conn.request("POST", self._path, body=body, headers=headers)
        response = self._conn.getresponse()
        data = response.read()
        if response.will_close:
            self.close()
        return response.status, data

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class EndpointStore(_SparqlStore):
    """A ``GraphStore`` on a SPARQL 1.1 endpoint (query and update URLs), sending ``token`` as
    a bearer token when given.

    Bound literals are written for Oxigraph's parser, which reads ``\\u`` escapes inside
    literals only (``escapes_first`` stays False).
    """

    def __init__(
        self, query_url: str, update_url: str, timeout_s: float = 30.0, token: str | None = None
    ) -> None:
        super().__init__(query_url)
        self._queries = _Endpoint(query_url, timeout_s, token)
        # One server usually serves both on one port; a second connection costs one handshake.
        self._updates = _Endpoint(update_url, timeout_s, token)
        self._lock = threading.Lock()

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        """Rows of a SELECT query, one dict per solution (unbound variables map to None);
        ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        text = bind(sparql, bindings, escapes_first=self.escapes_first)
        body = self._run(lambda: self._call(self._queries, "application/sparql-query", text))
        return rows_from_json(body)

    def _update(self, sparql: str) -> None:
        self._call(self._updates, "application/sparql-update", sparql)

    def _call(self, endpoint: _Endpoint, content_type: str, text: str) -> bytes:
        with self._lock:
            try:
                status, body = endpoint.post(content_type, text, RESULTS_JSON)
            except http.client.HTTPException as exc:
                raise ServiceError(
                    f"broken HTTP answer ({type(exc).__name__})",
                    service="graph store",
                    address=endpoint.url,
                ) from exc
        if 200 <= status < 300:
            return body
        detail = body.decode("utf-8", "replace").strip()[:2000]
        if status in (401, 403):
            raise ServiceError(
                f"refused this process (HTTP {status}): {detail}".rstrip(": "),
                service="graph store",
                address=endpoint.url,
                hint="the stack's graph server answers its owner only; for an external "
                "endpoint set graph.token_file",
            )
        if 400 <= status < 500:
            raise InputError(
                f"graph store rejected the SPARQL: {detail or status}",
                hint="check the query against SPARQL 1.1",
            )
        raise ServiceError(
            f"HTTP {status}: {detail}".rstrip(": "), service="graph store", address=endpoint.url
        )

    def close(self) -> None:
        """Close the connections to the endpoint."""
        with self._lock:
            self._queries.close()
            self._updates.close()
