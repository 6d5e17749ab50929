"""Rules pinned to the base commit (the reviewer's context reads rule files from git, not the
graph or a worktree), notes for a change that edits a rule file, rule files never allowed as
extras, and findings checked against the rules the reviewer was given."""

from __future__ import annotations

from pathlib import Path

from semspec.agents.protocol import Finding, ReviewVerdict
from semspec.core.config import load_config
from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.knowledge.sources.sync import sync_sources
from semspec.workflow.task.messages import ReviewContextUse, RoleSpec, RuleUse, TaskSpec
from semspec.workflow.task.review_context import assemble_for_review, review_context_used
from semspec.workflow.task.rule_pinning import check_citations, rule_change_notes
from semspec.workflow.task.scope import out_of_scope
from tests.support.repos import commit_all, make_repo

KINDS = ["agents_md", "claude_md", "cursor_rules", "copilot"]


def _spec(repo: Path) -> TaskSpec:
    return TaskSpec(
        task_id="t1", title="t", repo_path=str(repo), task_files=["src/a.py"],
        reviewer=RoleSpec(model="scripted"),
    )  # fmt: skip


def test_the_review_reads_rule_files_of_the_base_commit_not_the_synced_graph(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    git = make_repo(
        repo,
        {
            "AGENTS.md": "# Rules\n\nBASE TEXT.\n",
            "CLAUDE.md": "# C\n\nSee @docs/x.md\n",
            "docs/x.md": "BASE IMPORT.\n",
            "src/a.py": "x = 1\n",
        },
    )
    base = str(git.head.target)
    (repo / "AGENTS.md").write_text("# Rules\n\nLATER TEXT.\n")
    (repo / "docs" / "x.md").write_text("LATER IMPORT.\n")
    (repo / "src" / "AGENTS.md").write_text("# Src\n\nADDED LATER.\n")
    commit_all(git, "later")
    store = open_store(GraphConfig(), repo)
    try:
        sync_sources(store, repo)
    finally:
        store.close()
    text, used = review_context_used(repo, _spec(repo), "", None, base)
    assert "BASE TEXT." in text and "BASE IMPORT." in text
    assert "LATER" not in text and "ADDED LATER" not in text
    assert used is not None and used.rules_commit == base
    assert [r.rule_id for r in used.rules] == ["AGENTS.md", "CLAUDE.md"]
    # Without a task (no base commit) the graph's synced text is what `review context` shows.
    graph_text, _ = review_context_used(repo, _spec(repo), "")
    assert "LATER TEXT." in graph_text and "ADDED LATER." in graph_text


def test_a_rule_left_out_for_the_budget_is_reported_as_left_out(tmp_path: Path) -> None:
    long_rule = "# Long\n\n" + "Background the reviewer may read. " * 900 + "\n"
    repo = tmp_path / "repo"
    make_repo(repo, {"AGENTS.md": long_rule, "src/a.py": "x = 1\n"})
    store = open_store(GraphConfig(), repo)
    try:
        sync_sources(store, repo)
        assembled = assemble_for_review(store, load_config(repo), ["src/a.py"], 10_800)
    finally:
        store.close()
    assert [(r.rule_id, r.origin, r.given) for r in assembled.rules] == [
        ("AGENTS.md", "agents_md", "left_out")
    ]


def test_a_change_to_a_rule_file_is_noted_and_is_scope_creep_unless_a_task_file() -> None:
    notes = rule_change_notes(["AGENTS.md", "src/a.py"], ["src/a.py"], KINDS, "a" * 40)
    assert len(notes) == 1
    assert notes[0].startswith("rule_file_changed: AGENTS.md (agents_md)")
    assert "scope creep on a protected path" in notes[0]
    declared = rule_change_notes(["AGENTS.md"], ["AGENTS.md"], KINDS, "a" * 40)
    assert "scope creep" not in declared[0]
    assert rule_change_notes(["AGENTS.md"], [], ["cursor_rules"], "a" * 40) == []
    # scope.allow covering *.md does not let a task change a rule file it did not name.
    touched = ["AGENTS.md", "docs/guide.md", "src/a.py"]
    assert out_of_scope(touched, ["src/a.py"], ["**/*.md"], ["AGENTS.md"]) == ["AGENTS.md"]
    assert out_of_scope(touched, ["src/a.py", "AGENTS.md"], ["**/*.md"], ["AGENTS.md"]) == []


def test_findings_citing_a_rule_not_given_are_marked() -> None:
    verdict = ReviewVerdict(
        verdict="request_changes",
        summary="",
        findings=[
            Finding("given", sop_id="AGENTS.md", section="Testing"),
            Finding("cut", sop_id="CLAUDE.md"),
            Finding("left out", sop_id="notes.md"),
            Finding("unknown", sop_id="nowhere.md"),
            Finding("no rule"),
        ],
        reviewer="r",
    )
    used = ReviewContextUse(
        100,
        50,
        rules=[
            RuleUse("AGENTS.md", "agents_md", "AGENTS.md", "warning", "full"),
            RuleUse("CLAUDE.md", "claude_md", "CLAUDE.md", "warning", "cut"),
            RuleUse("notes.md", "sop", "x/notes.md", "info", "left_out"),
        ],
    )
    marks = [f.citation for f in check_citations(verdict, used).findings]
    assert marks[0] is None and marks[1] is None and marks[4] is None
    assert marks[2] == "cites notes.md, which was left out of the reviewer's context"
    assert marks[3] == "cites nowhere.md, which is no SOP or rule that applies to the task"


def test_the_task_page_shows_the_rules_report_and_suspect_citations() -> None:
    from dataclasses import asdict

    from semspec.console.state import template_environment
    from semspec.console.task_timeline import timeline
    from semspec.workflow.context.assembler_model import AssembledContext, RuleReport
    from semspec.workflow.task.messages import LogEntry, ReviewStep, TaskStatus
    from semspec.workflow.task.review_context import context_use

    assembled = AssembledContext([], "", 1000, 10, rules_commit="c" * 40)
    assembled.rules = [
        RuleReport("AGENTS.md", "agents_md", "AGENTS.md", "warning", "full", 2, 2),
        RuleReport("notes", "sop", ".semspec/sources/docs/sops/notes.md", "info", "left_out", 0, 3),
    ]
    review = {"findings": [], "context": asdict(context_use(assembled))}
    findings = [
        Finding("keep tests green", sop_id="AGENTS.md", section="Testing"),
        Finding("<b>x</b>", sop_id="notes", citation="cites notes, which was left out"),
    ]
    verdict = ReviewStep("approve", "", findings, "r")
    status = TaskStatus(
        "t", "", "done", 1, 0, 1, log=[LogEntry(1, "review", "approve", review)],
        last_verdict=verdict,
    )  # fmt: skip
    view = timeline(status)
    assert view.last_context is not None and view.last_context.rules_commit == "c" * 40
    html = (
        template_environment()
        .get_template("task.html")
        .render(
            task_id="t",
            status=status,
            problem="",
            timeline=view,
            cost="$0",
            budget="",
            diff={"problem": "none"},
            request=None,
            url_for=lambda *a, **k: "/",
            active="",
        )
    )
    assert 'data-rule="AGENTS.md" data-origin="agents_md" data-given="full"' in html
    assert "sop (.semspec/sources/docs/sops/notes.md)" in html and "left out" in html
    assert "Rule files as on the base commit cccccccccc." in html
    assert "AGENTS.md, Testing: keep tests green" in html
    assert 'data-citation="suspect"' in html and "&lt;b&gt;x&lt;/b&gt;" in html
