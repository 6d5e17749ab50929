"""The developer's prompt takes rule files from the task's base commit, as the reviewer's
context does: neither a later commit synced into the graph nor the task's own edit of
``AGENTS.md`` changes the requirements the developer is guided by (issue 29, item 5)."""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.knowledge.sources.sync import sync_sources
from semspec.workflow.task.context_activities import developer_context
from semspec.workflow.task.messages import RoleSpec, TaskSpec
from tests.support.repos import commit_all, make_repo

BASE_RULE = "# Rules\n\n## Requirements\n\n- BASE-REQ: every public function has a docstring.\n"
LATER_RULE = "# Rules\n\n## Requirements\n\n- LATER-REQ: docstrings are optional.\n"


def test_the_developer_is_given_the_rule_files_of_the_base_commit_not_the_synced_graph(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    git = make_repo(repo, {"AGENTS.md": BASE_RULE, "src/a.py": "x = 1\n"})
    base = str(git.head.target)
    (repo / "AGENTS.md").write_text(LATER_RULE, encoding="utf-8")
    commit_all(git, "later")
    store = open_store(GraphConfig(), repo)
    try:
        sync_sources(store, repo)
    finally:
        store.close()
    spec = TaskSpec(
        task_id="t1", title="t", repo_path=str(repo), task_files=["src/a.py"],
        developer=RoleSpec(model="scripted"),
    )  # fmt: skip

    pinned = developer_context(spec, [], base)
    assert "[warning] AGENTS.md: BASE-REQ: every public function has a docstring." in pinned
    assert "LATER-REQ" not in pinned
    # Without a base commit (the demo, `semspec budget`) the graph's synced rules are used.
    assert "LATER-REQ" in developer_context(spec, [])
