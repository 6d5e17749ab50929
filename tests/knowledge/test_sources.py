"""SOP ingestion on a real Oxigraph store: good files stored, broken ones named, incremental."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import URIRef

from semspec.core.errors import NotFoundError
from semspec.graph.store import GraphStore
from semspec.knowledge.sources.catalog import list_sops, show_sop
from semspec.knowledge.sources.sync import SOP_DIR, sync_sources
from semspec.vocabulary import source as sd
from semspec.vocabulary.namespaces import sop_graph

ERRORS_SOP = """---
category: sop
applies_to: "*.py"
severity: error
---

# Error handling

Every error names the operation that failed.

## Requirements
1. Raise errors from semspec.errors
2. Name the file or field
   that was wrong

## Details

Hints say what to do next.
"""

LOGGING_SOP = """---
id: logging
category: sop
applies_to: ["src/*.py", "tools/*.sh"]
severity: warning
summary: Log with structlog, never print.
---

# Logging

Use the shared logger.
"""


def write(repo: Path, name: str, text: str) -> Path:
    path = repo / SOP_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, "python/errors.md", ERRORS_SOP)
    write(root, "logging.md", LOGGING_SOP)
    return root


def test_good_sops_become_parents_with_summary_requirements_and_chunks(
    store: GraphStore, repo: Path
) -> None:
    report = sync_sources(store, repo)
    assert report.added == [
        ".semspec/sources/docs/sops/logging.md",
        ".semspec/sources/docs/sops/python/errors.md",
    ]
    assert report.failed == []
    detail = show_sop(store, "python/errors")
    assert detail.summary == "Every error names the operation that failed."
    assert detail.requirements == [
        "Raise errors from semspec.errors",
        "Name the file or field that was wrong",
    ]
    assert detail.entry.severity == "error"
    assert detail.entry.applies_to == ["*.py"]
    # The Requirements section holds only its items, which the parent carries: no chunk.
    assert [c.splitlines()[0] for c in detail.chunks] == ["# Error handling", "## Details"]
    logging = show_sop(store, "logging")
    assert logging.summary == "Log with structlog, never print."
    assert logging.entry.applies_to == ["src/*.py", "tools/*.sh"]
    assert [e.sop_id for e in list_sops(store)] == ["logging", "python/errors"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("# no front matter\n\nbody\n", "no front matter"),
        ("---\ncategory: sop\napplies_to: [unclosed\n---\nbody\n", "bad front matter"),
        ("---\ncategory: sop\napplies_to: '*.py'\nseverity: fatal\n---\nbody\n", "severity"),
        ("---\ncategory: sop\nseverity: info\n---\nbody\n", "missing applies_to"),
        ("---\ncategory: sop\napplies_to: '*.py'\nseverity: info\n---\n\n# Title\n", "no body"),
        ("---\ncategory: sop\napplies_to: '!*.py'\nseverity: info\n---\nbody\n", "negation"),
        ("---\ncategory: sop\napplies_to: ../x.py\nseverity: info\n---\nbody\n", "'..' folder"),
    ],
)
def test_a_broken_sop_is_named_with_its_problem_and_the_rest_still_ingest(
    store: GraphStore, repo: Path, text: str, problem: str
) -> None:
    write(repo, "broken.md", text)
    report = sync_sources(store, repo)
    assert [f for f, _ in report.failed] == [".semspec/sources/docs/sops/broken.md"]
    assert problem in report.failed[0][1]
    assert len(report.added) == 2


def test_resync_of_an_unchanged_tree_writes_nothing(store: GraphStore, repo: Path) -> None:
    sync_sources(store, repo)
    before = store.select("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g ?s ?p ?o")
    report = sync_sources(store, repo)
    assert (report.added, report.updated, report.removed, report.failed) == ([], [], [], [])
    assert len(report.skipped) == 2
    after = store.select("SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g ?s ?p ?o")
    assert after == before


def test_changed_files_are_replaced_and_deleted_files_removed(
    store: GraphStore, repo: Path
) -> None:
    sync_sources(store, repo)
    write(repo, "python/errors.md", ERRORS_SOP.replace("severity: error", "severity: info"))
    (repo / SOP_DIR / "logging.md").unlink()
    report = sync_sources(store, repo)
    assert report.updated == [".semspec/sources/docs/sops/python/errors.md"]
    assert report.removed == [".semspec/sources/docs/sops/logging.md"]
    assert [(e.sop_id, e.severity) for e in list_sops(store)] == [("python/errors", "info")]


def test_a_file_broken_after_ingest_keeps_its_previous_version(
    store: GraphStore, repo: Path
) -> None:
    sync_sources(store, repo)
    write(repo, "logging.md", LOGGING_SOP.replace("severity: warning", "severity: loud"))
    report = sync_sources(store, repo)
    assert report.failed == [
        (
            ".semspec/sources/docs/sops/logging.md",
            "unknown severity 'loud' (expected one of error, warning, info)",
        )
    ]
    assert show_sop(store, "logging").entry.severity == "warning"


def test_two_files_claiming_one_id_fail_the_second(store: GraphStore, repo: Path) -> None:
    write(repo, "zz.md", LOGGING_SOP)
    report = sync_sources(store, repo)
    assert report.failed == [
        (
            ".semspec/sources/docs/sops/zz.md",
            "id 'logging' is already used by .semspec/sources/docs/sops/logging.md",
        )
    ]


def test_long_sections_are_split_into_bounded_chunks_in_order(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = tmp_path / "long"
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 150 for i in range(6))
    write(
        repo, "long.md", f"---\ncategory: sop\napplies_to: '*'\nseverity: info\n---\n{paragraphs}\n"
    )
    sync_sources(store, repo)
    chunks = show_sop(store, "long").chunks
    assert len(chunks) >= 3
    assert [c.split()[1] for c in chunks] == sorted(c.split()[1] for c in chunks)


def test_show_of_an_unknown_sop_is_not_found(store: GraphStore, repo: Path) -> None:
    sync_sources(store, repo)
    with pytest.raises(NotFoundError, match="nope"):
        show_sop(store, "nope")


def test_prose_under_requirements_stays_in_a_chunk_without_the_items(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = tmp_path / "prose"
    body = (
        "# Rules\n\nIntro.\n\n## Requirements\n\nAsk a lead when unsure.\n\n"
        "- Item one\n- Item two\n"
    )
    write(repo, "r.md", f"---\ncategory: sop\napplies_to: '*'\nseverity: info\n---\n{body}")
    sync_sources(store, repo)
    detail = show_sop(store, "r")
    assert detail.requirements == ["Item one", "Item two"]
    assert detail.chunks[1] == "## Requirements\n\nAsk a lead when unsure."


def test_an_sop_written_by_an_older_ingestion_is_rewritten_though_unchanged(
    store: GraphStore, repo: Path
) -> None:
    sync_sources(store, repo)
    graph = sop_graph("logging")
    old = [
        (s, p, o)
        for s, p, o in (
            (r["s"], r["p"], r["o"])
            for r in store.select(
                "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": URIRef(graph)}
            )
        )
        if p != sd.INGEST_FORMAT
    ]
    store.replace_graph(graph, old)  # type: ignore[arg-type]
    report = sync_sources(store, repo)
    assert report.updated == [".semspec/sources/docs/sops/logging.md"]
    assert sync_sources(store, repo).updated == []
