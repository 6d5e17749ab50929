"""Scenario: rule files teams keep for other tools reach the reviewer, pinned to the base commit.

A copy of the real ``mdurl`` package gets an ``AGENTS.md`` at its root and another under
``src/``, Cursor rules with ``globs``, Copilot instructions with ``applyTo`` and a
``CLAUDE.md`` importing a file. Through the CLI on the running stack (real Oxigraph):
``sources sync`` reads them; ``review context --file src/x.py`` shows the rules that apply
with their origins; a task whose developer (an LLM on the fake server) also rewrites
``AGENTS.md`` is reviewed against the base commit's text, the reviewer is told of the edit,
the edit is scope creep (and an uncommitted edit synced from the checkout is not used
either), and the findings' rule citations are recorded and checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from tests.fakes.llm_server import FakeLLMServer, call, text
from tests.fakes.llm_task import fake_model_entry, user_prompt
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config, with_new_function
from tests.support.repos import SIGNATURE
from tests.support.scenario_tasks import EXIT_APPROVED, new_id, submit
from tests.support.stack import Stack

ROOT_RULE = "BASE-ROOT-RULE: every public function has a docstring."
RULE_FILES = {
    "AGENTS.md": f"# Project rules\n\n{ROOT_RULE}\n\n## Testing\n\n- Keep pytest green.\n",
    "src/AGENTS.md": "# Source rules\n\nSRC-RULE: modules under src never print.\n",
    ".cursor/rules/python.mdc": "---\ndescription: Python style\nglobs: src/**/*.py\n"
    "alwaysApply: false\n---\n# Python style\n\nCURSOR-RULE: prefer pathlib.\n",
    ".cursor/rules/docs.mdc": "---\nglobs: docs/**/*.md\n---\nDOCS-ONLY-RULE.\n",
    ".github/instructions/py.instructions.md": '---\napplyTo: "**/*.py"\n---\nCOPILOT-RULE.\n',
    ".github/instructions/js.instructions.md": '---\napplyTo: "**/*.js"\n---\nJS-ONLY-RULE.\n',
    "CLAUDE.md": "# Claude\n\nFollow @docs/claude-style.md and never @../../etc/passwd\n",
    "docs/claude-style.md": "IMPORTED-RULE: wrap lines at 100 columns.\n",
    "src/x.py": "def x():\n    return 1\n",
}
FOR_SRC_X = {
    "AGENTS.md": "agents_md",
    "src/AGENTS.md": "agents_md",
    ".cursor/rules/python.mdc": "cursor_rules",
    ".github/instructions/py.instructions.md": "copilot",
    "CLAUDE.md": "claude_md",
}


def _commit_rule_files(repo: Path) -> str:
    git = pygit2.Repository(str(repo))
    for rel, body in RULE_FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(body, encoding="utf-8")
        git.index.add(rel)
    git.index.write()
    tree = git.index.write_tree()
    head = git.head.target
    return str(git.create_commit("HEAD", SIGNATURE, SIGNATURE, "rules", tree, [head]))


def test_rule_files_reach_review_context_with_origins_and_a_task_is_judged_by_the_base_rules(
    stack: Stack,
) -> None:
    weakened = "# Project rules\n\nWEAKENED: docstrings are optional.\n"
    developer = [
        call("write_file", {"path": FORMAT_PY, "content": with_new_function()}),
        call("write_file", {"path": "AGENTS.md", "content": weakened}),
        call("submit", {"summary": "added format_without_hash and relaxed AGENTS.md"}),
    ]
    findings = [
        {"message": "keep tests green", "severity": "info", "sop_id": "AGENTS.md",
         "section": "Testing"},
        {"message": "follow the docs rule", "severity": "info", "sop_id": "docs/rules.md"},
    ]  # fmt: skip
    verdict = {"verdict": "approve", "summary": "fine", "findings": findings}
    with FakeLLMServer.for_roles(developer=developer, reviewer=[text(json.dumps(verdict))]) as llm:
        role = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        repo = make_project(
            stack,
            "rule-files",
            project_config(stack, "rule-files", models={"developer": role, "reviewer": role}),
            registry={"models": {"fake-model": fake_model_entry(llm.base_url)}},
        )
        base = _commit_rule_files(repo)

        synced = stack.cli("sources", "sync", "--json", repo=repo)
        assert synced.returncode == 0, synced.stderr
        report = json.loads(synced.stdout)
        assert sorted(report["added"]) == sorted(
            p for p in RULE_FILES if p not in ("docs/claude-style.md", "src/x.py")
        )
        assert [w["problem"].split(":")[0] for w in report["warnings"]] == ["../../etc/passwd"]
        listed = {e["sop_id"]: e for e in stack.cli_json("sources", "list", repo=repo)}
        assert listed["CLAUDE.md"]["imports"] == ["docs/claude-style.md"]
        assert listed["src/AGENTS.md"]["origin"] == "agents_md"

        context = stack.cli_json("review", "context", "--file", "src/x.py", repo=repo)
        given = {r["rule_id"]: (r["origin"], r["given"]) for r in context["rules"]}
        assert given == {rule: (kind, "full") for rule, kind in FOR_SRC_X.items()}
        shown = context["text"]
        for marker in ("SRC-RULE", "CURSOR-RULE", "COPILOT-RULE", "IMPORTED-RULE", ROOT_RULE):
            assert marker in shown
        assert "DOCS-ONLY-RULE" not in shown and "JS-ONLY-RULE" not in shown
        assert "Origin: .cursor/rules/python.mdc (cursor_rules)" in shown
        assert "Origin: CLAUDE.md (claude_md; imports docs/claude-style.md)" in shown
        src_block = shown.split("### Rule src/AGENTS.md", 1)[1]
        assert "Takes precedence over AGENTS.md where they disagree" in src_block

        # The checkout moves on (an edit not committed) and is synced: the graph now holds a
        # text the task's base commit does not.
        (repo / "AGENTS.md").write_text("# Project rules\n\nCHECKOUT-EDIT: anything goes.\n")
        assert stack.cli_json("sources", "sync", repo=repo)["updated"] == ["AGENTS.md"]
        task_id = new_id("rules")
        code, status = submit(stack, repo, task_id, [FORMAT_PY])
        reviewer_calls = llm.requests_for("reviewer")

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert len(reviewer_calls) == 1
    prompt = user_prompt(reviewer_calls[0].body)
    context_part = prompt.split("## Project context", 1)[1].split("\n## Diff", 1)[0]
    assert ROOT_RULE in context_part
    assert "WEAKENED" not in context_part and "CHECKOUT-EDIT" not in context_part
    assert "rule_file_changed: AGENTS.md (agents_md)" in prompt
    assert f"base commit {base[:12]}" in prompt
    assert "scope creep on a protected path" in prompt
    assert any(f.startswith("scope_creep") and "AGENTS.md" in f for f in status["flags"])

    review = status["last_verdict"]
    assert review["context"]["rules_commit"] == base
    rules = {r["rule_id"]: r["given"] for r in review["context"]["rules"]}
    assert rules["AGENTS.md"] == "full" and "src/AGENTS.md" not in rules
    cited = {f["sop_id"]: f for f in review["findings"]}
    assert cited["AGENTS.md"]["section"] == "Testing" and cited["AGENTS.md"]["citation"] is None
    assert "no SOP or rule that applies" in cited["docs/rules.md"]["citation"]

    # `review context TASK_ID` shows what that reviewer got: the base commit's rules.
    again = stack.cli_json("review", "context", task_id, repo=repo)
    assert again["rules_commit"] == base
    assert ROOT_RULE in again["text"] and "CHECKOUT-EDIT" not in again["text"]
