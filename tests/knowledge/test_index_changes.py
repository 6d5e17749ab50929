"""``task.reindex``: the graph takes an approved commit's changed files, read from the commit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.knowledge.code_index import index_repository
from semspec.knowledge.code_index.graph_read import read_facts
from semspec.workflow.task.index_activity import ReindexInput, reindex_changes
from tests.support.code_samples import FIXTURES, sample_repo

pytestmark = pytest.mark.usefixtures("fresh_logging")


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = sample_repo(tmp_path / "repo")
    _git(root, "init", "-q")
    (root / ".gitignore").write_text(".semspec/\n")
    return root


def test_an_approved_commit_renames_deletes_and_breaks_files_in_the_graph(repo: Path) -> None:
    base = _commit(repo, "samples")
    store = open_store(GraphConfig(), repo)
    try:
        index_repository(store, repo)
    finally:
        store.close()
    _git(repo, "mv", "src/service.py", "src/renamed.py")
    (repo / "src" / "lib.rs").unlink()
    shutil.copy(FIXTURES / "broken.py", repo / "src" / "app.js")
    (repo / "notes.md").write_text("not code\n")
    head = _commit(repo, "task")
    # The checkout moves on: what is indexed is the commit, not the files on disk.
    (repo / "src" / "renamed.py").write_text("def not_in_the_commit() -> None:\n    pass\n")

    step = reindex_changes(ReindexInput(str(repo), base, head))

    assert step.indexed == ["src/renamed.py"]
    assert step.removed == ["src/lib.rs", "src/service.py"]
    assert [f.split(":")[0] for f in step.failed] == ["src/app.js"]
    store = open_store(GraphConfig(), repo)
    try:
        found = read_facts(store, ["src/renamed.py", "src/service.py", "src/lib.rs", "src/app.js"])
    finally:
        store.close()
    assert set(found) == {"src/renamed.py"}
    assert "not_in_the_commit" not in {s.name for s in found["src/renamed.py"].symbols}
