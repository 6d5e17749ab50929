"""The knowledge graph store: one seam (``GraphStore``) over Oxigraph files, a SPARQL endpoint
or an in-memory rdflib dataset.

Every source (an SOP file, a code file, a decision) lives in its own named graph, so replacing a
source is one transaction. Queries name graphs explicitly (``GRAPH ?g { ... }``) so they mean the
same thing whether or not a store treats its default graph as the union of the named ones.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.error import HTTPError

import pyoxigraph
import rdflib
from oxrdflib import OxigraphStore
from pyparsing import ParseBaseException
from rdflib import Dataset
from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
from rdflib.namespace import XSD
from rdflib.query import Result
from rdflib.store import Store
from rdflib.term import BNode, Literal, Node, URIRef

from semspec.core.errors import InputError, ServiceError
from semspec.graph.sparql_terms import Bindings, bind, iri_text, term_text

Triple = tuple[rdflib.term.Node, rdflib.term.Node, rdflib.term.Node]
Row = dict[str, rdflib.term.Node | None]
T = TypeVar("T")


class GraphStore(Protocol):
    """A quad store with per-source named graphs and SPARQL 1.1 query/update."""

    def replace_graph(self, graph: str, triples: Iterable[Triple]) -> None:
        """Atomically replace the named graph ``graph``; a failure leaves the old content."""

    def drop_graph(self, graph: str) -> None:
        """Remove the named graph ``graph`` (nothing happens if it does not exist)."""

    def graphs(self, prefix: str = "") -> list[str]:
        """Named graph IRIs starting with ``prefix``, sorted."""

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        """Rows of a SELECT query, one dict per solution (unbound variables map to None).

        ``bindings`` maps variable names (no ``?``) to an rdflib term or a sequence of terms;
        the store writes them as ``VALUES`` at the start of the first ``WHERE`` group. Data
        (paths, ids, anything a user or a file supplied) goes here, never into ``sparql``.
        """

    def update(self, sparql: str, bindings: Bindings | None = None) -> None:
        """Run a SPARQL 1.1 update; ``bindings`` as in ``select`` (for its ``WHERE`` group)."""

    def close(self) -> None:
        """Release the store (files, connections)."""


def _normal(term: Node | None) -> Node | None:
    # Oxigraph types plain strings as xsd:string while rdflib leaves them untyped; one form
    # keeps the results of every store comparable.
    if isinstance(term, Literal) and term.datatype == XSD.string:
        return Literal(str(term))
    return term


_XSD_STRING = XSD.string.toPython()
_XSD_INTEGER = XSD.integer.toPython()


def _from_ox(term: object) -> Node | None:
    # The same terms rdflib would give, built without its per-literal conversion machinery.
    if term is None:
        return None
    if isinstance(term, pyoxigraph.NamedNode):
        return URIRef(term.value)
    if isinstance(term, pyoxigraph.Literal):
        datatype = term.datatype.value
        if term.language:
            return Literal(term.value, lang=term.language)
        if datatype == _XSD_STRING:
            return Literal(term.value)
        return Literal(term.value, datatype=URIRef(datatype))
    if isinstance(term, pyoxigraph.BlankNode):
        return BNode(term.value)
    raise InputError(f"graph store returned an unsupported term {term!r}")


def _iri(graph: str) -> str:
    try:
        return iri_text(graph)
    except InputError:
        raise InputError(
            f"graph name {graph!r} is not a valid IRI",
            hint="use an IRI such as urn:semspec:graph:sop:<id>",
        ) from None


def replace_graph_update(graph: str, triples: Iterable[Triple]) -> str:
    """One SPARQL update that drops ``graph`` and inserts ``triples`` into it (one transaction).

    INSERT DATA takes no variables, so the terms are written by ``term_text``, which checks
    every IRI and escapes every literal (the same writer the bindings use).
    """
    iri = _iri(graph)
    body = " .\n".join(f"{term_text(s)} {term_text(p)} {term_text(o)}" for s, p, o in triples)
    drop = f"DROP SILENT GRAPH {iri}"
    if not body:
        return drop
    return f"{drop} ;\nINSERT DATA {{ GRAPH {iri} {{\n{body} .\n}} }}"


_GRAPHS_QUERY = "SELECT DISTINCT ?g WHERE { GRAPH ?g { } }"


def _rows(result: Result) -> list[Row]:
    names = [str(v) for v in result.vars or []]
    return [
        {name: _normal(value) for name, value in zip(names, row, strict=True)}  # type: ignore[arg-type]
        for row in result
    ]


class _SparqlStore:
    """What every store shares once it can run SPARQL text: graph listing, rows, errors."""

    escapes_first = False
    """True for a parser that expands ``\\u`` escapes before parsing (``literal_text``)."""

    def __init__(self, where: str) -> None:
        self._where = where

    def _query(self, sparql: str) -> Result:
        raise NotImplementedError

    def _update(self, sparql: str) -> None:
        raise NotImplementedError

    def replace_graph(self, graph: str, triples: Iterable[Triple]) -> None:
        """Atomically replace the named graph ``graph``; a failure leaves the old content."""
        # The whole text is built before anything is sent, so a bad term changes nothing.
        self.update(replace_graph_update(graph, triples))

    def drop_graph(self, graph: str) -> None:
        """Remove the named graph ``graph`` (nothing happens if it does not exist)."""
        self.update(f"DROP SILENT GRAPH {_iri(graph)}")

    def graphs(self, prefix: str = "") -> list[str]:
        """Named graph IRIs starting with ``prefix``, sorted."""
        names = {str(row["g"]) for row in self.select(_GRAPHS_QUERY) if row["g"] is not None}
        return sorted(name for name in names if name.startswith(prefix))

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        """Rows of a SELECT query, one dict per solution (unbound variables map to None);
        ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        text = bind(sparql, bindings, escapes_first=self.escapes_first)
        return self._run(lambda: _rows(self._query(text)))

    def update(self, sparql: str, bindings: Bindings | None = None) -> None:
        """Run a SPARQL 1.1 update; ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        text = bind(sparql, bindings, escapes_first=self.escapes_first)
        self._run(lambda: self._update(text))

    def _run(self, action: Callable[[], T]) -> T:
        try:
            return action()
        except HTTPError as exc:
            if 400 <= exc.code < 500:
                detail = exc.read().decode("utf-8", "replace").strip()
                raise InputError(
                    f"graph store rejected the SPARQL: {detail or exc.reason}",
                    hint="check the query against SPARQL 1.1",
                ) from exc
            raise ServiceError(str(exc), service="graph store", address=self._where) from exc
        except (OSError, ConnectionError) as exc:
            raise ServiceError(str(exc), service="graph store", address=self._where) from exc
        except (SyntaxError, ValueError, ParseBaseException) as exc:
            raise InputError(
                f"graph store rejected the SPARQL: {exc}",
                hint="check the query against SPARQL 1.1",
            ) from exc


class BackendStore(_SparqlStore):
    """A ``GraphStore`` over an rdflib store that runs SPARQL itself (Oxigraph, an endpoint)."""

    def __init__(self, backend: Store, where: str, *, update_graph: str | None) -> None:
        super().__init__(where)
        self._backend = backend
        # Oxigraph wants updates aimed at the dataset's default graph; the endpoint store would
        # wrap any named target in GRAPH, so it gets none.
        self._update_graph = update_graph

    def _query(self, sparql: str) -> Result:
        return self._backend.query(sparql, {}, {}, "__UNION__")

    def _update(self, sparql: str) -> None:
        self._backend.update(sparql, {}, {}, self._update_graph)  # type: ignore[arg-type]

    def close(self) -> None:
        """Release the store (files, connections)."""
        self._backend.close()


class OxigraphFileStore(BackendStore):
    """The embedded store: rdflib's Oxigraph store, with SELECT rows read from pyoxigraph
    directly because rdflib's result layer costs more than the query itself."""

    def __init__(self, backend: OxigraphStore, where: str) -> None:
        super().__init__(backend, where, update_graph=DATASET_DEFAULT_GRAPH_ID)
        self._ox: pyoxigraph.Store = backend._inner
        self._closed = False

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        """Rows of a SELECT query, one dict per solution (unbound variables map to None);
        ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        text = bind(sparql, bindings)
        return self._run(lambda: self._ox_rows(text))

    def _ox_rows(self, sparql: str) -> list[Row]:
        solutions = self._ox.query(sparql, use_default_graph_as_union=True)
        if not isinstance(solutions, pyoxigraph.QuerySolutions):
            raise InputError("graph store: expected a SELECT query", hint="use SELECT ... WHERE")
        names = [v.value for v in solutions.variables]
        return [
            {name: _from_ox(value) for name, value in zip(names, row, strict=True)}
            for row in solutions
        ]

    def flush(self) -> None:
        """Write what the store holds in memory to its files: a long series of writes calls
        this now and then, so memory stays bounded and the next opening has nothing to replay."""
        self._run(self._ox.flush)

    def close(self) -> None:
        """Release the store files once the last user in this process closes its handle
        (pyoxigraph frees its lock when the last reference goes)."""
        if self._closed:
            return
        self._closed = True
        del self._ox
        if _release_files(self._where):
            super().close()


class MemoryStore(_SparqlStore):
    """rdflib's in-memory dataset: the baseline the benchmarks compare against."""

    escapes_first = True

    def __init__(self) -> None:
        super().__init__("memory")
        self._dataset = Dataset(default_union=True)

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        """Rows of a SELECT query, one dict per solution (unbound variables map to None);
        ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        # rdflib's own GRAPH evaluation calls its deprecated Dataset.contexts; that is
        # rdflib's business, not the caller's, so the warning stays inside.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().select(sparql, bindings)

    def update(self, sparql: str, bindings: Bindings | None = None) -> None:
        """Run a SPARQL 1.1 update; ``bindings`` become ``VALUES`` in its ``WHERE`` group."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            super().update(sparql, bindings)

    def _query(self, sparql: str) -> Result:
        return self._dataset.query(sparql)

    def _update(self, sparql: str) -> None:
        self._dataset.update(sparql)

    def replace_graph(self, graph: str, triples: Iterable[Triple]) -> None:
        """Atomically replace the named graph ``graph``; a failure leaves the old content."""
        # rdflib parses SPARQL in pure Python, so loads go through the graph API; the triples
        # are materialized and checked first so a failing iterator changes nothing.
        iri = URIRef(graph)
        _iri(graph)
        new = list(triples)
        for triple in new:
            for term in triple:
                term_text(term)
        self._dataset.remove_graph(iri)
        target = self._dataset.graph(iri)
        target.addN((s, p, o, target) for s, p, o in new)

    def drop_graph(self, graph: str) -> None:
        """Remove the named graph ``graph`` (nothing happens if it does not exist)."""
        _iri(graph)
        self._dataset.remove_graph(URIRef(graph))

    def close(self) -> None:
        """Release the store (nothing to release in memory)."""
        self._dataset.close()


def memory_store() -> GraphStore:
    """An empty rdflib in-memory store (the benchmark baseline)."""
    return MemoryStore()


# Oxigraph locks its directory against any second opening, even by the same process; the
# activities of one worker run side by side, so every handle on a directory shares one store.
_FILES_LOCK = threading.Lock()
_FILES: dict[str, tuple[OxigraphStore, int]] = {}


def _release_files(where: str) -> bool:
    """Drop one user of the open directory ``where``; True when it was the last one."""
    with _FILES_LOCK:
        backend, users = _FILES[where]
        if users > 1:
            _FILES[where] = (backend, users - 1)
            return False
        del _FILES[where]
        return True


def embedded_store(path: Path) -> GraphStore:
    """An Oxigraph store kept in the directory ``path`` (created if missing); handles opened
    in one process share the store, a second process gets a clear error."""
    path.mkdir(parents=True, exist_ok=True)
    where = str(path.resolve())
    with _FILES_LOCK:
        backend, users = _FILES.get(where, (None, 0))
        if backend is None:
            backend = OxigraphStore()
            try:
                backend.open(where)
            except OSError as exc:
                raise ServiceError(
                    str(exc),
                    service="graph store",
                    address=where,
                    hint="another process holds the store open; run `semspec up` so every "
                    "process shares it through the stack's graph server, or use sparql mode",
                ) from exc
        _FILES[where] = (backend, users + 1)
    return OxigraphFileStore(backend, where)
