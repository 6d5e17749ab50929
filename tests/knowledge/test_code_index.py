"""Incremental indexing of real repositories into a real Oxigraph store (one graph per file)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from rdflib import Graph, URIRef
from rdflib.namespace import RDFS

import semspec.vocabulary as vocabulary
from semspec.core.config.models import IndexConfig
from semspec.graph.store import GraphStore, memory_store
from semspec.knowledge.code_index import FileFacts, extract_facts, index_repository
from semspec.knowledge.code_index.graph_read import read_facts
from semspec.vocabulary import code
from tests.support.code_samples import FIXTURES, SOURCES, sample_repo

pytestmark = pytest.mark.usefixtures("fresh_logging")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding the sample sources (without the broken one) and a README."""
    root = sample_repo(tmp_path / "repo")
    (root / "README.md").write_text("# sample\n", encoding="utf-8")
    return root


class CountingExtractor:
    """The real extractor, remembering which paths it parsed."""

    def __init__(self) -> None:
        self.parsed: list[str] = []

    def __call__(self, path: str, source: bytes) -> FileFacts:
        self.parsed.append(path)
        return extract_facts(path, source)


def src(*names: str) -> list[str]:
    return [f"src/{n}" for n in names]


def test_indexing_writes_one_named_graph_per_source_file(repo: Path, store: GraphStore) -> None:
    report = index_repository(store, repo)
    assert report.indexed == sorted(src(*SOURCES))
    assert report.failed == []
    assert store.graphs(code.CODE_GRAPH_PREFIX) == sorted(code.code_graph(p) for p in src(*SOURCES))
    assert ("README.md", "not a source file") in {(s.path, s.reason) for s in report.skipped}


def test_reindexing_parses_no_unchanged_file(repo: Path, store: GraphStore) -> None:
    first = CountingExtractor()
    index_repository(store, repo, extract=first)
    assert len(first.parsed) == len(SOURCES)
    again = CountingExtractor()
    report = index_repository(store, repo, extract=again)
    assert again.parsed == []
    assert report.unchanged == sorted(src(*SOURCES))
    assert report.indexed == []


def test_a_changed_file_is_parsed_again_and_its_facts_replaced(
    repo: Path, store: GraphStore
) -> None:
    index_repository(store, repo)
    target = repo / "src" / "service.py"
    target.write_text(target.read_text() + "\n\ndef added(x: int) -> int:\n    return x\n")
    counting = CountingExtractor()
    report = index_repository(store, repo, extract=counting)
    assert counting.parsed == ["src/service.py"]
    assert report.indexed == ["src/service.py"]
    facts = read_facts(store, ["src/service.py"])["src/service.py"]
    assert "added" in {s.name for s in facts.symbols}
    assert facts.source_hash == extract_facts("x.py", target.read_bytes()).source_hash


def test_a_deleted_file_has_its_graph_removed(repo: Path, store: GraphStore) -> None:
    index_repository(store, repo)
    (repo / "src" / "lib.rs").unlink()
    report = index_repository(store, repo)
    assert report.removed == ["src/lib.rs"]
    assert code.code_graph("src/lib.rs") not in store.graphs(code.CODE_GRAPH_PREFIX)
    assert read_facts(store, ["src/lib.rs"]) == {}


def test_a_symlink_leaving_the_repository_is_refused_not_followed(
    tmp_path: Path, repo: Path, store: GraphStore
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def leaked() -> None:\n    pass\n")
    os.symlink(outside / "secret.py", repo / "src" / "linked.py")
    os.symlink(outside, repo / "escape")
    report = index_repository(store, repo)
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["src/linked.py"].startswith("refused: symlink leaves the repository")
    assert reasons["escape"].startswith("refused: symlink leaves the repository")
    assert all("secret" not in g and "linked" not in g for g in store.graphs())
    assert "src/linked.py" not in report.indexed


def test_binary_and_huge_source_files_are_skipped_with_reasons(
    repo: Path, store: GraphStore
) -> None:
    (repo / "src" / "blob.py").write_bytes(b"x = 1\n\x00\x01\x02")
    (repo / "src" / "huge.py").write_text("x = 1\n" * 400)
    report = index_repository(store, repo, IndexConfig(max_file_bytes=2000))
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["src/blob.py"] == "binary (NUL byte)"
    assert reasons["src/huge.py"].startswith("too large (2400 bytes > 2000)")
    assert "src/blob.py" not in report.indexed and "src/huge.py" not in report.indexed


def test_a_syntax_error_is_reported_while_the_other_files_are_indexed(
    repo: Path, store: GraphStore
) -> None:
    shutil.copy(FIXTURES / "broken.py", repo / "src" / "broken.py")
    report = index_repository(store, repo)
    assert [(f.path, f.line) for f in report.failed] == [("src/broken.py", 5)]
    assert report.indexed == sorted(src(*SOURCES))


def test_a_file_that_stops_parsing_loses_its_stale_facts(repo: Path, store: GraphStore) -> None:
    index_repository(store, repo)
    (repo / "src" / "service.py").write_text("def broken(:\n")
    report = index_repository(store, repo)
    assert [f.path for f in report.failed] == ["src/service.py"]
    assert read_facts(store, ["src/service.py"]) == {}


def test_excluded_directories_are_not_descended(repo: Path, store: GraphStore) -> None:
    for folder in ("node_modules/pkg", "vendor", "build", ".venv/lib", "__pycache__"):
        (repo / folder).mkdir(parents=True)
        (repo / folder / "mod.py").write_text("def hidden() -> None:\n    pass\n")
    report = index_repository(store, repo)
    assert not [p for p in report.indexed if "mod.py" in p]
    skipped = {s.path for s in report.skipped if s.reason == "excluded directory"}
    assert {"node_modules", "vendor", "build", ".venv", "__pycache__"} <= skipped


def test_facts_read_back_from_the_store_equal_the_extracted_ones(
    repo: Path, store: GraphStore
) -> None:
    index_repository(store, repo)
    stored = read_facts(store, src(*SOURCES))
    for path in src(*SOURCES):
        assert stored[path] == extract_facts(path, (repo / path).read_bytes())


def test_every_fact_node_has_an_evidence_pointer_with_path_lines_and_hash(
    repo: Path, store: GraphStore
) -> None:
    index_repository(store, repo)
    graph = code.code_graph("src/service.py")
    rows = store.select(
        f"SELECT ?fact ?path ?start ?end ?hash WHERE {{ GRAPH <{graph}> {{ "
        f"?fact a ?kind . OPTIONAL {{ ?fact <{code.EVIDENCE}> ?ev . ?ev <{code.PATH}> ?path ; "
        f"<{code.START_LINE}> ?start ; <{code.END_LINE}> ?end ; <{code.SOURCE_HASH}> ?hash }} "
        f"FILTER(?kind != <{code.EVIDENCE_POINTER}>) }} }}"
    )
    assert len(rows) > 20
    lines = (repo / "src" / "service.py").read_text().splitlines()
    digest = extract_facts("x.py", (repo / "src" / "service.py").read_bytes()).source_hash
    for row in rows:
        assert str(row["path"]) == "src/service.py"
        assert str(row["hash"]) == digest
        assert 1 <= int(str(row["start"])) <= int(str(row["end"])) <= len(lines)


def test_every_code_term_is_documented_in_the_ontology() -> None:
    ontology = Graph().parse(Path(vocabulary.__file__).parent / "ontology.ttl")
    terms = [v for k, v in vars(code).items() if k.isupper() and type(v) is URIRef]
    assert len(terms) > 20
    assert [t for t in terms if ontology.value(t, RDFS.comment) is None] == []


def test_a_symlink_inside_the_repository_is_not_followed_but_its_target_is_indexed(
    repo: Path, store: GraphStore
) -> None:
    os.symlink(repo / "src" / "service.py", repo / "alias.py")
    report = index_repository(store, repo)
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons["alias.py"] == "symlink not followed (target src/service.py)"
    assert "src/service.py" in report.indexed


def test_the_in_memory_store_holds_the_same_facts_as_oxigraph(
    repo: Path, store: GraphStore
) -> None:
    memory = memory_store()
    try:
        index_repository(memory, repo)
        index_repository(store, repo)
        assert read_facts(memory, src(*SOURCES)) == read_facts(store, src(*SOURCES))
    finally:
        memory.close()
