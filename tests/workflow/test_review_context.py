"""The workflow's reviewer context uses the reviewer's real window: the configured
``models.reviewer.context_window``, else the registry's figure, else its default profile's; and
``semspec review context`` shows the same text the review activity gives the reviewer."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.config import load_config
from semspec.core.config.models import GraphConfig, RoleModel
from semspec.graph.access import open_store
from semspec.knowledge.code_index import index_repository
from semspec.knowledge.sources.sync import SOP_DIR, sync_sources
from semspec.workflow.context.windows import DEFAULT_WINDOW, role_window
from semspec.workflow.task.messages import RoleSpec, TaskSpec
from semspec.workflow.task.review_context import review_context, reviewer_window

LONG_INFO = "---\nid: long-notes\ncategory: sop\napplies_to: '*.py'\nseverity: info\n---\n" + (
    "# Notes\n\n" + "Some background the reviewer may like to read. " * 250 + "\n"
)
ERRORS = (
    "---\nid: py-errors\ncategory: sop\napplies_to: '*.py'\nseverity: error\n---\n"
    "# Errors\n\nTyped errors.\n\n## Requirements\n- Raise InputError for bad input.\n"
)


def _repo(tmp_path: Path, reviewer: dict[str, object]) -> Path:
    repo = tmp_path / "repo"
    (repo / SOP_DIR).mkdir(parents=True)
    (repo / SOP_DIR / "long.md").write_text(LONG_INFO)
    (repo / SOP_DIR / "errors.md").write_text(ERRORS)
    config = {"models": {"reviewer": {"provider": "scripted", "model": "scripted", **reviewer}}}
    (repo / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config))
    store = open_store(GraphConfig(), repo)
    try:
        sync_sources(store, repo)
    finally:
        store.close()
    return repo


def _spec(repo: Path, model: str = "scripted") -> TaskSpec:
    return TaskSpec(
        task_id="t1",
        title="t",
        repo_path=str(repo),
        task_files=["calc.py"],
        reviewer=RoleSpec(model=model),
    )


def test_the_configured_reviewer_window_wins_then_the_registry_then_the_default(
    tmp_path: Path,
) -> None:
    configured = _repo(tmp_path / "a", {"context_window": 12_000})
    assert reviewer_window(configured, load_config(configured)) == 12_000
    assert reviewer_window(configured, load_config(configured), "unknown-model") == 12_000
    plain = _repo(tmp_path / "b", {})
    assert reviewer_window(plain, load_config(plain)) == 128_000  # the registry's "scripted"
    # A model the registry does not hold is sized by the default profile, as the budget does.
    assert reviewer_window(plain, load_config(plain), "unknown-model") == 128_000
    assert role_window(RoleModel(model="unknown-model"), None) == DEFAULT_WINDOW


def test_the_workflows_reviewer_context_is_cut_to_the_configured_window(tmp_path: Path) -> None:
    small = _repo(tmp_path / "small", {"context_window": 12_000})
    text = review_context(small, _spec(small), diff="")
    assert "Raise InputError for bad input." in text
    # 12,000 less 9,000 reserved and the 15% margin leaves 1,200 tokens: the info SOP goes.
    assert "long-notes" not in text
    roomy = _repo(tmp_path / "roomy", {})
    assert "### SOP long-notes" in review_context(roomy, _spec(roomy), diff="")


def test_review_context_shows_what_the_review_activity_gives_the_reviewer(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {})
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    store = open_store(GraphConfig(), repo)
    try:
        index_repository(store, repo)
    finally:
        store.close()
    given = review_context(repo, _spec(repo), diff="")
    assert "### calc.py\ncalc.py (python, 2 lines" in given
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    shown = CliRunner().invoke(
        app, ["--repo", str(repo), "review", "context", "--file", "calc.py"], env=unset
    )
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith(given)
