"""The ``semspec sources``, ``review context`` and ``graph query`` commands end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.errors import InputError

REPO_SOPS = Path(__file__).resolve().parents[2] / ".semspec" / "sources" / "docs" / "sops"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(REPO_SOPS, root / ".semspec" / "sources" / "docs" / "sops")
    (root / ".git").mkdir()
    return root


def run(repo: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["--repo", str(repo), *args])
    return result.exit_code, result.stdout


@pytest.mark.slow  # syncs this repository's own SOPs
def test_sources_sync_list_and_show_work_on_this_repositorys_own_sops(repo: Path) -> None:
    code, out = run(repo, "sources", "sync", "--json")
    assert code == 0
    report = json.loads(out)
    assert len(report["added"]) == 3 and report["failed"] == []
    code, out = run(repo, "sources", "list", "--json")
    assert [e["sop_id"] for e in json.loads(out)] == [
        "python-errors",
        "tests-real-parts",
        "workflow-determinism",
    ]
    code, out = run(repo, "sources", "show", "python-errors", "--json")
    assert json.loads(out)["requirements"][0].startswith("Raise a class from")


def test_sources_sync_names_a_broken_file_and_exits_2(repo: Path) -> None:
    bad = repo / ".semspec" / "sources" / "docs" / "sops" / "bad.md"
    bad.write_text("---\ncategory: sop\nseverity: info\n---\nbody\n")
    code, out = run(repo, "sources", "sync", "--json")
    assert code == 2
    failed = json.loads(out)["failed"]
    assert failed == [
        {"file": ".semspec/sources/docs/sops/bad.md", "problem": failed[0]["problem"]}
    ]
    assert "missing applies_to" in failed[0]["problem"]


@pytest.mark.slow  # syncs this repository's own SOPs
def test_review_context_prints_matching_sops_and_a_budget(repo: Path) -> None:
    for name in ("workflow/task/loop.py", "workflow/x.py"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x = 1\n")
    run(repo, "sources", "sync")
    code, out = run(repo, "review", "context", "--file", "workflow/task/loop.py", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["sections"][0]["items"] == ["python-errors", "workflow-determinism"]
    assert data["used_tokens"] <= data["budget_tokens"]
    code, out = run(repo, "review", "context", "-f", "workflow/x.py")
    assert "## SOPs" in out and "budget" in out
    # A tight window (180 tokens of context): the warning SOP goes before the error SOP's
    # second section, and each cut is named.
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("x = 1\n")
    code, out = run(repo, "review", "context", "-f", "tests/test_x.py", "--window", "10800")
    assert code == 0
    assert "cut: tests-real-parts: warning SOP left out" in out
    assert "cut: python-errors: 1 of 2 section(s) left out" in out


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("missing.py", "--file missing.py does not exist in the repository"),
        (".semspec", "--file .semspec is not a regular file"),
        ("../outside.py", "--file ../outside.py is outside the repository"),
    ],
)
def test_review_context_rejects_a_file_that_is_not_in_the_repository(
    repo: Path, name: str, problem: str
) -> None:
    (repo.parent / "outside.py").write_text("x = 1\n")
    result = CliRunner().invoke(app, ["--repo", str(repo), "review", "context", "--file", name])
    # The entry point (semspec.cli.app.main) prints InputError as error:/hint: with exit 2.
    assert isinstance(result.exception, InputError)
    assert result.exception.exit_code == 2
    assert problem in result.exception.message


def test_review_context_uses_the_configured_reviewer_window(repo: Path) -> None:
    (repo / "calc.py").write_text("x = 1\n")
    config = "models:\n  reviewer: {provider: scripted, model: scripted, context_window: 50000}\n"
    (repo / ".semspec" / "config.yaml").write_text(config)
    code, out = run(repo, "review", "context", "--file", "calc.py", "--json")
    assert code == 0
    # 50,000 less the reviewer's reserved parts (2,000 + 6,000 + 1,000) and the 15% margin.
    assert json.loads(out)["budget_tokens"] == 50_000 - 9_000 - 7_500


def test_graph_query_prints_rows_as_json(repo: Path) -> None:
    run(repo, "sources", "sync")
    query = "SELECT ?id WHERE { GRAPH ?g { ?s <urn:semspec:source.doc.id> ?id } } ORDER BY ?id"
    code, out = run(repo, "graph", "query", query, "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)] == [
        "python-errors",
        "tests-real-parts",
        "workflow-determinism",
    ]
