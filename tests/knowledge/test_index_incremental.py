"""The index record: a re-index reads only what changed, and stays right when the record or the
graph is lost, on a real Oxigraph store and a real git repository."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.cli.index_cmd import progress_bar
from semspec.core.config.models import GraphConfig, IndexConfig
from semspec.graph.access import open_store
from semspec.graph.sparql_terms import Bindings
from semspec.graph.store import GraphStore, Row, Triple
from semspec.knowledge.code_index import FileFacts, IndexReport, extract_facts, index_repository
from semspec.knowledge.code_index.graph_read import read_facts
from semspec.knowledge.code_index.index_record import MARKER_GRAPH, RACY_NS
from semspec.knowledge.code_index.indexer import POOL_MIN_FILES
from semspec.vocabulary import code
from tests.support.code_samples import FIXTURES, SOURCES, sample_repo

pytestmark = pytest.mark.usefixtures("fresh_logging")

SRC = sorted(f"src/{name}" for name in SOURCES)


class CountingExtractor:
    """The real extractor, remembering which paths it parsed."""

    def __init__(self) -> None:
        self.parsed: list[str] = []

    def __call__(self, path: str, source: bytes) -> FileFacts:
        self.parsed.append(path)
        return extract_facts(path, source)


class CountingStore:
    """A real store that counts the writes made through it (the ``GraphStore`` seam)."""

    def __init__(self, inner: GraphStore) -> None:
        self.inner = inner
        self.writes = 0
        self.escapes_first = getattr(inner, "escapes_first", True)

    def replace_graph(self, graph: str, triples: Iterable[Triple]) -> None:
        self.writes += 1
        self.inner.replace_graph(graph, triples)

    def drop_graph(self, graph: str) -> None:
        self.writes += 1
        self.inner.drop_graph(graph)

    def graphs(self, prefix: str = "") -> list[str]:
        return self.inner.graphs(prefix)

    def select(self, sparql: str, bindings: Bindings | None = None) -> list[Row]:
        return self.inner.select(sparql, bindings)

    def update(self, sparql: str, bindings: Bindings | None = None) -> None:
        self.writes += 1
        self.inner.update(sparql, bindings)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = sample_repo(tmp_path / "repo")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "samples")
    return root


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[CountingStore]:
    opened = CountingStore(open_store(GraphConfig(), tmp_path))
    try:
        yield opened
    finally:
        opened.close()


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _age(path: Path) -> None:
    """Set the file's mtime well in the past, as a file not written a moment ago would be."""
    old = path.stat().st_mtime_ns - 10 * RACY_NS
    os.utime(path, ns=(old, old))


def _aged(repo: Path) -> Path:
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            _age(path)
    return repo


def _index(store: GraphStore, repo: Path, extract: CountingExtractor | None = None) -> IndexReport:
    record = repo.parent / "record.sqlite"
    if extract is None:
        return index_repository(store, repo, record=record)
    return index_repository(store, repo, extract=extract, record=record)


def test_an_unchanged_reindex_reads_and_writes_nothing(repo: Path, counting: CountingStore) -> None:
    _index(counting, _aged(repo))
    counting.writes = 0
    again = CountingExtractor()
    report = index_repository(counting, repo, extract=again, record=repo.parent / "record.sqlite")
    assert again.parsed == []
    assert counting.writes == 0
    assert report.unchanged == SRC
    assert report.baseline == "record"


def test_a_touched_but_unchanged_file_is_read_once_and_never_parsed(
    repo: Path, counting: CountingStore
) -> None:
    _index(counting, _aged(repo))
    target = repo / "src" / "service.py"
    target.write_bytes(target.read_bytes())  # new mtime, same content
    _age(target)
    counting.writes = 0
    first, second = CountingExtractor(), CountingExtractor()
    _index(counting, repo, first)
    _index(counting, repo, second)
    assert first.parsed == second.parsed == []
    # The first run only refreshed the record's stat; the graph was not written.
    assert counting.writes == 0


def test_a_renamed_file_has_its_old_facts_removed_and_new_ones_written(
    repo: Path, store: GraphStore
) -> None:
    _index(store, _aged(repo))
    _git(repo, "mv", "src/service.py", "src/renamed.py")
    report = _index(store, repo)
    assert report.indexed == ["src/renamed.py"]
    assert report.removed == ["src/service.py"]
    assert read_facts(store, ["src/service.py"]) == {}
    assert {s.name for s in read_facts(store, ["src/renamed.py"])["src/renamed.py"].symbols}


def test_a_deleted_file_is_removed_with_the_record_in_use(repo: Path, store: GraphStore) -> None:
    _index(store, _aged(repo))
    (repo / "src" / "lib.rs").unlink()
    report = _index(store, repo)
    assert report.removed == ["src/lib.rs"]
    assert report.baseline == "record"
    assert code.code_graph("src/lib.rs") not in store.graphs(code.CODE_GRAPH_PREFIX)


def test_a_file_that_stops_parsing_loses_its_old_facts_and_is_named(
    repo: Path, store: GraphStore
) -> None:
    _index(store, _aged(repo))
    shutil.copy(FIXTURES / "broken.py", repo / "src" / "service.py")
    report = _index(store, repo)
    assert [(f.path, f.line) for f in report.failed] == [("src/service.py", 5)]
    assert read_facts(store, ["src/service.py"]) == {}
    # Still named on the next run: a broken file is not recorded as indexed.
    again = _index(store, repo)
    assert [f.path for f in again.failed] == ["src/service.py"]


def test_a_lost_record_falls_back_to_the_graphs_hashes_and_parses_nothing(
    repo: Path, store: GraphStore
) -> None:
    _index(store, _aged(repo))
    (repo.parent / "record.sqlite").unlink()
    counting = CountingExtractor()
    report = _index(store, repo, counting)
    assert counting.parsed == []
    assert report.baseline == "graph"
    assert report.unchanged == SRC
    # The rebuilt record is trusted again.
    assert _index(store, repo).baseline == "record"


def test_a_wiped_graph_is_indexed_again_despite_a_full_record(tmp_path: Path, repo: Path) -> None:
    first = open_store(GraphConfig(path="graph-a"), tmp_path)
    try:
        _index(first, _aged(repo))
    finally:
        first.close()
    fresh = open_store(GraphConfig(path="graph-b"), tmp_path)
    try:
        report = _index(fresh, repo)
        assert report.indexed == SRC
        assert report.baseline == "graph"
        assert set(read_facts(fresh, SRC)) == set(SRC)
    finally:
        fresh.close()


def test_changed_index_settings_invalidate_the_record(repo: Path, store: GraphStore) -> None:
    record = repo.parent / "record.sqlite"
    (repo / "src" / "big.py").write_text(
        "".join(f"def f{n}() -> int:\n    return {n}\n" for n in range(200))
    )
    index_repository(store, _aged(repo), record=record)
    report = index_repository(store, repo, IndexConfig(max_file_bytes=2000), record=record)
    assert report.baseline == "graph"
    # A file over the new limit is skipped now, and its facts removed.
    assert report.removed == ["src/big.py"]
    assert report.skipped[-1].path == "src/big.py"


def test_the_graph_carries_the_marker_of_its_record(repo: Path, store: GraphStore) -> None:
    _index(store, repo)
    assert MARKER_GRAPH in store.graphs()
    assert not MARKER_GRAPH.startswith(code.CODE_GRAPH_PREFIX)


def test_a_pool_of_parse_processes_writes_the_same_facts_as_one_process(
    tmp_path: Path, repo: Path
) -> None:
    many = repo / "many"
    many.mkdir()
    for n in range(POOL_MIN_FILES):
        (many / f"m{n}.py").write_text(f"import os\n\n\ndef f{n}(x: int) -> int:\n    return x\n")
    paths = SRC + [f"many/m{n}.py" for n in range(POOL_MIN_FILES)]
    one = open_store(GraphConfig(path="serial"), tmp_path)
    pool = open_store(GraphConfig(path="pool"), tmp_path)
    try:
        serial = index_repository(one, repo, IndexConfig(workers=0))
        pooled = index_repository(pool, repo, IndexConfig(workers=2))
        assert (serial.workers, pooled.workers) == (0, 2)
        assert pooled.indexed == serial.indexed == sorted(paths)
        assert read_facts(pool, paths) == read_facts(one, paths)
    finally:
        one.close()
        pool.close()


def test_a_short_run_parses_in_its_own_process_whatever_the_setting(
    repo: Path, store: GraphStore
) -> None:
    assert index_repository(store, repo, IndexConfig(workers=2)).workers == 0


def test_index_json_reports_timings_and_no_progress_bar(repo: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(repo), "index", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["indexed"] == SRC
    assert set(data["timings"]) == {"walk_s", "parse_s", "write_s", "total_s"}
    assert "files/s" not in result.stderr


def test_index_through_the_cli_keeps_its_record_in_the_run_directory(repo: Path) -> None:
    runner = CliRunner()
    runner.invoke(app, ["--repo", str(repo), "index"])
    assert (repo / ".semspec" / "run" / "code-index.sqlite").is_file()
    again = runner.invoke(app, ["--repo", str(repo), "index", "--json"])
    assert json.loads(again.stdout)["baseline"] == "record"


def test_a_terminal_gets_a_progress_bar_with_files_per_second(
    repo: Path, store: GraphStore
) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with progress_bar(console, enabled=True) as bar:
        assert bar is not None
        index_repository(store, repo, progress=bar)
    assert "files/s" in out.getvalue()
    assert f"{len(SRC)}/{len(SRC)}" in out.getvalue()


def test_no_progress_bar_when_disabled_or_not_a_terminal() -> None:
    with progress_bar(Console(file=io.StringIO(), force_terminal=True), enabled=False) as bar:
        assert bar is None
    with progress_bar(Console(file=io.StringIO()), enabled=True) as bar:
        assert bar is None
