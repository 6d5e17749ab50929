"""Decisions and conventions in the knowledge graph: what approved tasks decided (linked to
their plan with PROV ``wasDerivedFrom``) and what approved reviews taught.

Each decision is its own named graph, so recording one again replaces it. A convention is every
approval that noted it (same project and name), each approval its own named graph: two tasks
approved at once both add theirs, and a retried activity replaces its own. The convention
applies to the glob the files of all its approvals share (``convention_scope``), so it widens
as approvals in neighbouring folders confirm it. Every reader returns items in a fixed order so
the reviewer's context is reproducible.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from rdflib import Literal
from rdflib.term import Node

from semspec.core.errors import InputError
from semspec.graph.store import GraphStore, Row, Triple
from semspec.vocabulary import semspec_terms as st
from semspec.vocabulary.applies_to import any_matches
from semspec.vocabulary.namespaces import (
    CONVENTION_GRAPH_PREFIX,
    DECISION_GRAPH_PREFIX,
    RDF,
    convention_iri,
    decision_iri,
    local,
    plan_iri,
    task_iri,
)
from semspec.workflow.convention_scope import evidence_files, evidence_sample, shared_glob


@dataclass(frozen=True)
class Decision:
    """A decision of task ``task_id`` under plan ``plan_id`` about ``files``."""

    task_id: str
    plan_id: str
    title: str
    text: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class ConventionApproval:
    """One approved review that noted a convention: the review, the files of its change the
    convention was seen in (none for one recorded without files), and when."""

    review: str
    files: tuple[str, ...] = ()
    recorded_at: str = ""
    """ISO 8601 UTC; empty for one recorded before approvals were dated."""


@dataclass(frozen=True)
class Convention:
    """A convention of ``project`` for files matching ``applies_to``: the glob its approvals'
    files share; ``description`` and ``source_review`` are the latest approval's."""

    project: str
    name: str
    applies_to: tuple[str, ...]
    description: str
    source_review: str
    approvals: tuple[ConventionApproval, ...] = ()
    """Every approval it was learned from, oldest first."""


def _required(**values: str) -> None:
    for name, value in values.items():
        if not value or not value.strip():
            raise InputError(f"{name} must not be empty", hint=f"pass a non-empty {name}")


def _key(*parts: str) -> str:
    # A digest keeps graph names short and free of IRI-hostile characters whatever the title.
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def decision_graph(task_id: str, title: str) -> str:
    """Named graph of the decision ``title`` of ``task_id``."""
    return f"{DECISION_GRAPH_PREFIX}{local(task_id)}:{_key(task_id, title)}"


def record_decision(
    store: GraphStore, task_id: str, plan_id: str, title: str, text: str, files: Sequence[str]
) -> str:
    """Store a decision (replacing one with the same task and title); returns its graph name."""
    _required(task_id=task_id, plan_id=plan_id, title=title, text=text)
    graph = decision_graph(task_id, title)
    node = task_iri(task_id)
    decision = decision_iri(task_id, _key(task_id, title))
    plan = plan_iri(plan_id)
    triples: list[Triple] = [
        (decision, RDF.type, st.DECISION),
        (decision, st.DECISION_TITLE, Literal(title)),
        (decision, st.DECISION_TEXT, Literal(text)),
        (decision, st.DECISION_TASK, node),
        (decision, st.WAS_DERIVED_FROM, plan),
        (node, RDF.type, st.TASK),
        (node, st.TASK_ID, Literal(task_id)),
        (plan, RDF.type, st.PLAN),
        (plan, st.PLAN_ID, Literal(plan_id)),
    ]
    triples += [(decision, st.DECISION_FILE, Literal(f)) for f in sorted(set(files))]
    store.replace_graph(graph, triples)
    return graph


def convention_graph(project: str, name: str, review: str = "") -> str:
    """Named graph of the convention ``name`` of ``project``; with ``review``, of that one
    approval of it."""
    graph = f"{CONVENTION_GRAPH_PREFIX}{local(project)}:{_key(project, name)}"
    return f"{graph}:{_key(review)}" if review else graph


def record_convention(
    store: GraphStore,
    project: str,
    name: str,
    applies_to: str | Sequence[str],
    description: str,
    source_review: str,
    files: Sequence[str] = (),
    recorded_at: str = "",
) -> str:
    """Store one approval of a convention; returns its graph.

    With ``files`` (the approved change's files) the approval is evidence for the glob those
    files share, ``applies_to`` (the reviewer's glob) only picking which of them it was seen
    in, and it is added beside the convention's other approvals (replacing only one of the
    same review). Without, ``applies_to`` is the scope and the convention of that project and
    name recorded without files is replaced.
    """
    globs = [applies_to] if isinstance(applies_to, str) else list(applies_to)
    _required(project=project, name=name, description=description, source_review=source_review)
    if not globs or any(not g.strip() for g in globs):
        raise InputError("applies_to must hold at least one non-empty glob", hint="e.g. '*.py'")
    evidence = evidence_sample(evidence_files([g.strip() for g in globs], files))
    scope = [shared_glob(evidence)] if evidence else sorted({g.strip() for g in globs})
    review = source_review if evidence else ""
    graph = convention_graph(project, name, review)
    node = convention_iri(project, _key(project, name, review) if review else _key(project, name))
    triples: list[Triple] = [
        (node, RDF.type, st.CONVENTION),
        (node, st.CONVENTION_PROJECT, Literal(project)),
        (node, st.CONVENTION_NAME, Literal(name)),
        (node, st.CONVENTION_DESCRIPTION, Literal(description)),
        (node, st.CONVENTION_SOURCE_REVIEW, Literal(source_review)),
    ]
    triples += [(node, st.CONVENTION_APPLIES_TO, Literal(g)) for g in scope]
    triples += [(node, st.CONVENTION_FILE, Literal(f)) for f in evidence]
    if recorded_at:
        triples.append((node, st.CONVENTION_RECORDED_AT, Literal(recorded_at)))
    store.replace_graph(graph, triples)
    return graph


def _s(row: Row, name: str) -> str:
    value = row.get(name)
    return "" if value is None else str(value)


def decisions_for(
    store: GraphStore, task_id: str | None, plan_id: str | None, files: Sequence[str]
) -> list[Decision]:
    """Decisions of the task, or derived from the plan, or about any of ``files``; ordered by
    plan, task and title."""
    keys: list[str] = []
    bound: dict[str, Node | list[Node]] = {}
    if task_id:
        keys.append(f"{{ ?d <{st.DECISION_TASK}> ?by_task }}")
        bound["by_task"] = task_iri(task_id)
    if plan_id:
        keys.append(f"{{ ?d <{st.WAS_DERIVED_FROM}> ?by_plan }}")
        bound["by_plan"] = plan_iri(plan_id)
    if files:
        keys.append(f"{{ ?d <{st.DECISION_FILE}> ?by_file }}")
        bound["by_file"] = [Literal(f) for f in sorted(set(files))]
    if not keys:
        return []
    rows = store.select(
        f"""SELECT ?task ?plan ?title ?text
       (GROUP_CONCAT(DISTINCT ?f; SEPARATOR="\\n") AS ?files)
WHERE {{
  GRAPH ?g {{
    {" UNION ".join(keys)}
    ?d a <{st.DECISION}> ; <{st.DECISION_TITLE}> ?title ; <{st.DECISION_TEXT}> ?text ;
       <{st.DECISION_TASK}> ?t ; <{st.WAS_DERIVED_FROM}> ?p .
    ?t <{st.TASK_ID}> ?task .
    ?p <{st.PLAN_ID}> ?plan .
    OPTIONAL {{ ?d <{st.DECISION_FILE}> ?f }}
  }}
}}
GROUP BY ?d ?task ?plan ?title ?text""",
        bound,
    )
    found = {
        Decision(
            task_id=_s(r, "task"),
            plan_id=_s(r, "plan"),
            title=_s(r, "title"),
            text=_s(r, "text"),
            files=tuple(sorted(f for f in _s(r, "files").split("\n") if f)),
        )
        for r in rows
    }
    return sorted(found, key=lambda d: (d.plan_id, d.task_id, d.title, d.text))


def all_conventions(store: GraphStore) -> list[Convention]:
    """Every convention in the graph, its approvals merged, ordered by project and name."""
    rows = store.select(
        f"""SELECT ?project ?name ?description ?review ?recorded
       (GROUP_CONCAT(DISTINCT ?glob; SEPARATOR="\\n") AS ?globs)
       (GROUP_CONCAT(DISTINCT ?file; SEPARATOR="\\n") AS ?files)
WHERE {{
  GRAPH ?g {{
    ?c a <{st.CONVENTION}> ; <{st.CONVENTION_PROJECT}> ?project ; <{st.CONVENTION_NAME}> ?name ;
       <{st.CONVENTION_DESCRIPTION}> ?description ; <{st.CONVENTION_SOURCE_REVIEW}> ?review ;
       <{st.CONVENTION_APPLIES_TO}> ?glob .
    OPTIONAL {{ ?c <{st.CONVENTION_FILE}> ?file }}
    OPTIONAL {{ ?c <{st.CONVENTION_RECORDED_AT}> ?recorded }}
  }}
}}
GROUP BY ?c ?project ?name ?description ?review ?recorded"""
    )
    grouped: dict[tuple[str, str], list[tuple[ConventionApproval, str, tuple[str, ...]]]] = {}
    for r in rows:
        approval = ConventionApproval(
            review=_s(r, "review"),
            files=tuple(sorted(f for f in _s(r, "files").split("\n") if f)),
            recorded_at=_s(r, "recorded"),
        )
        globs = tuple(sorted(g for g in _s(r, "globs").split("\n") if g))
        key = (_s(r, "project"), _s(r, "name"))
        grouped.setdefault(key, []).append((approval, _s(r, "description"), globs))
    return [_merged(project, name, found) for (project, name), found in sorted(grouped.items())]


def _merged(
    project: str, name: str, found: list[tuple[ConventionApproval, str, tuple[str, ...]]]
) -> Convention:
    """One convention from its approvals: the glob all their files share (plus the globs of
    approvals recorded without files), the latest approval's description."""
    found.sort(key=lambda a: (a[0].recorded_at, a[0].review, a[1]))
    files = [f for approval, _, _ in found for f in approval.files]
    scope = {shared_glob(files)} if files else set()
    scope.update(g for approval, _, globs in found if not approval.files for g in globs)
    latest, description, _ = found[-1]
    return Convention(
        project=project,
        name=name,
        applies_to=tuple(sorted(scope)),
        description=description,
        source_review=latest.review,
        approvals=tuple(approval for approval, _, _ in found),
    )


def conventions_for(store: GraphStore, files: Sequence[str]) -> list[Convention]:
    """Conventions whose ``applies_to`` matches any of ``files``, ordered by project and name."""
    return [c for c in all_conventions(store) if any_matches(c.applies_to, files)]
