"""Model performance history kept in the knowledge graph, one named graph per task and role.

Keying records by task makes recording idempotent: an activity retry replaces the record it
already wrote instead of counting the task twice.
"""

from __future__ import annotations

from rdflib import Literal
from rdflib.namespace import RDF, XSD

from semspec.graph.store import GraphStore, Triple
from semspec.model.performance import PerformanceStats, TaskOutcome
from semspec.model.profiles import Role
from semspec.vocabulary import semspec_terms as st
from semspec.vocabulary.namespaces import SEMSPEC, local

PERFORMANCE_GRAPH_PREFIX = "urn:semspec:graph:performance:"


def performance_graph(task_id: str, role: str) -> str:
    """Named graph holding the record of ``role`` in ``task_id``."""
    return f"{PERFORMANCE_GRAPH_PREFIX}{local(task_id)}:{role}"


class GraphPerformanceHistory:
    """``PerformanceHistory`` over a graph store; ``record_task`` is the idempotent writer."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store

    def record_task(self, task_id: str, model: str, role: Role, outcome: TaskOutcome) -> None:
        """Write (or replace) the record of ``model`` playing ``role`` in ``task_id``."""
        node = SEMSPEC[f"performance.{local(task_id)}.{role}"]
        triples: list[Triple] = [
            (node, RDF.type, st.PERFORMANCE),
            (node, st.PERF_MODEL, Literal(model)),
            (node, st.PERF_ROLE, Literal(role)),
            (node, st.PERF_TASK, Literal(task_id)),
            (node, st.PERF_APPROVED, Literal(outcome.approved)),
            (node, st.PERF_ITERATIONS, Literal(outcome.iterations)),
            (node, st.PERF_TOKENS, Literal(outcome.tokens)),
            (node, st.PERF_LATENCY, Literal(round(outcome.latency_s, 3), datatype=XSD.decimal)),
        ]
        self.store.replace_graph(performance_graph(task_id, role), triples)

    def record(self, model: str, role: Role, outcome: TaskOutcome) -> None:
        """Protocol form without a task id: each call is a new record."""
        count = len(self.store.graphs(PERFORMANCE_GRAPH_PREFIX))
        self.record_task(f"anonymous-{count + 1}", model, role, outcome)

    def stats(self, model: str, role: Role) -> PerformanceStats:
        """Totals over every recorded task of ``model`` in ``role``."""
        rows = self.store.select(
            f"""SELECT ?approved ?iterations ?tokens ?latency WHERE {{ GRAPH ?g {{
  ?r a <{st.PERFORMANCE}> ; <{st.PERF_MODEL}> ?model ;
     <{st.PERF_ROLE}> ?role ; <{st.PERF_APPROVED}> ?approved ;
     <{st.PERF_ITERATIONS}> ?iterations ; <{st.PERF_TOKENS}> ?tokens ;
     <{st.PERF_LATENCY}> ?latency }} }}""",
            {"model": Literal(model), "role": Literal(role)},
        )
        stats = PerformanceStats()
        for row in rows:
            approved = str(row["approved"]).lower() in ("true", "1")
            stats = stats.add(
                TaskOutcome(
                    approved=approved,
                    iterations=int(str(row["iterations"])),
                    tokens=int(str(row["tokens"])),
                    latency_s=float(str(row["latency"])),
                )
            )
        return stats
