"""What the knowledge page shows: the SOPs in the graph with the tracked files each applies to,
the learned conventions, and the decisions approved tasks recorded.

Files are matched the way the reviewer's context matches task files (``applies_to`` globs,
``semspec.vocabulary.applies_to``), against the files git tracks in the repository's index
(``knowledge_files``).
Everything here blocks (graph queries, the git index): ``gather`` runs in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from semspec.console.knowledge_files import TrackedFiles, tracked_files
from semspec.graph.store import GraphStore
from semspec.knowledge.sources.catalog import SopEntry, list_sops
from semspec.vocabulary import semspec_terms as st
from semspec.workflow.knowledge import Convention, Decision, all_conventions

SHOWN_MATCHES = 50
"""Files listed per SOP or convention; the page gives the count of the rest."""
MAX_DECISIONS = 500
"""Decisions listed, newest plans last; the page says when there are more."""


@dataclass(frozen=True)
class Matched:
    """The tracked files some globs match: the first ``SHOWN_MATCHES`` and how many in all."""

    files: list[str]
    total: int


@dataclass(frozen=True)
class SopView:
    """An SOP and the files it applies to."""

    sop: SopEntry
    matched: Matched


@dataclass(frozen=True)
class ConventionView:
    """A learned convention and the files it applies to."""

    convention: Convention
    matched: Matched


@dataclass(frozen=True)
class Knowledge:
    """Everything the knowledge page lists."""

    sops: list[SopView]
    conventions: list[ConventionView]
    decisions: list[Decision]
    decisions_cut: bool
    tracked: int
    """How many files git tracks (what the globs were matched against)."""


def gather(store: GraphStore, repo: Path) -> Knowledge:
    """Read the graph and the repository's index (blocking)."""
    files = tracked_files(repo)
    sops = [SopView(s, matched(s.applies_to, files)) for s in list_sops(store)]
    conventions = [ConventionView(c, matched(c.applies_to, files)) for c in all_conventions(store)]
    decisions = all_decisions(store)
    return Knowledge(
        sops,
        conventions,
        decisions[:MAX_DECISIONS],
        len(decisions) > MAX_DECISIONS,
        len(files.paths),
    )


def matched(globs: Sequence[str], files: TrackedFiles) -> Matched:
    """The tracked files any of ``globs`` matches."""
    hits = files.matching(globs)
    return Matched(hits[:SHOWN_MATCHES], len(hits))


_DECISIONS = f"""SELECT ?task ?plan ?title ?text
       (GROUP_CONCAT(DISTINCT ?f; SEPARATOR="\\n") AS ?files)
WHERE {{
  GRAPH ?g {{
    ?d a <{st.DECISION}> ; <{st.DECISION_TITLE}> ?title ; <{st.DECISION_TEXT}> ?text ;
       <{st.DECISION_TASK}> ?t ; <{st.WAS_DERIVED_FROM}> ?p .
    ?t <{st.TASK_ID}> ?task .
    ?p <{st.PLAN_ID}> ?plan .
    OPTIONAL {{ ?d <{st.DECISION_FILE}> ?f }}
  }}
}}
GROUP BY ?d ?task ?plan ?title ?text
ORDER BY ?plan ?task ?title
LIMIT {MAX_DECISIONS + 1}"""


def all_decisions(store: GraphStore) -> list[Decision]:
    """Decisions in the graph ordered by plan, task and title: at most one more than the page
    lists, so it can say there are more."""
    return [
        Decision(
            task_id=str(row.get("task") or ""),
            plan_id=str(row.get("plan") or ""),
            title=str(row.get("title") or ""),
            text=str(row.get("text") or ""),
            files=tuple(sorted(f for f in str(row.get("files") or "").split("\n") if f)),
        )
        for row in store.select(_DECISIONS)
    ]
