"""Scenario: the developer is guided by the rules of the task's base commit, in every iteration,
and what an approval teaches applies to the folder its files share.

A copy of the real ``mdurl`` package commits an ``AGENTS.md`` with a requirement. The checkout
then moves on (an uncommitted edit, synced into the graph), and the developer (an LLM on the
fake server) rewrites ``AGENTS.md`` in its first turn. The reviewer asks for changes, so the
developer's second prompt is built after both edits: it, like the first, must carry the base
commit's requirement and neither edit, and so must both reviews. The approving reviewer notes a
convention for ``mdurl/*.py``; ``review context`` then shows it for another file of the package
(its scope is the folder, ``mdurl/**/*.py``) and not for a file elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2

from tests.fakes.llm_server import FakeLLMServer, call, text
from tests.fakes.llm_task import fake_model_entry, user_prompt
from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    project_config,
    with_new_function,
)
from tests.support.repos import SIGNATURE
from tests.support.scenario_tasks import EXIT_APPROVED, new_id, submit
from tests.support.stack import Stack

BASE_REQ = "BASE-REQ: every public function has a docstring."
CHECKOUT_REQ = "CHECKOUT-REQ: anything goes."
WEAKENED_REQ = "WEAKENED-REQ: docstrings are optional."
SECOND_TURN = "\n\n# format_without_hash is tested in tests/test_mdurl.py\n"


def _rules(requirement: str) -> str:
    return f"# Project rules\n\nRules for agents.\n\n## Requirements\n\n- {requirement}\n"


def _commit_agents_md(repo: Path) -> str:
    git = pygit2.Repository(str(repo))
    (repo / "AGENTS.md").write_text(_rules(BASE_REQ), encoding="utf-8")
    git.index.add("AGENTS.md")
    git.index.write()
    tree = git.index.write_tree()
    return str(git.create_commit("HEAD", SIGNATURE, SIGNATURE, "rules", tree, [git.head.target]))


def test_every_developer_prompt_and_review_carry_the_base_commits_rules_not_an_edit_of_them(
    stack: Stack,
) -> None:
    developer = [
        call("write_file", {"path": FORMAT_PY, "content": with_new_function()}),
        call("write_file", {"path": "AGENTS.md", "content": _rules(WEAKENED_REQ)}),
        call("submit", {"summary": "added format_without_hash and relaxed AGENTS.md"}),
        call("write_file", {"path": FORMAT_PY, "content": with_new_function() + SECOND_TURN}),
        call("submit", {"summary": "noted where format_without_hash is tested"}),
    ]
    redo = {
        "verdict": "request_changes",
        "summary": "say where it is tested",
        "findings": [{"message": "REDO: name the test of format_without_hash", "severity": "info"}],
    }
    pattern = {
        "name": "docstrings",
        "description": "every public function of the package has a docstring",
        "applies_to": "mdurl/*.py",
    }
    approve = {"verdict": "approve", "summary": "fine", "noted_patterns": [pattern]}
    reviewer = [text(json.dumps(redo)), text(json.dumps(approve))]
    with FakeLLMServer.for_roles(developer=developer, reviewer=reviewer) as llm:
        role = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        repo = make_project(
            stack,
            "developer-rules",
            project_config(
                stack,
                "developer-rules",
                models={"developer": role, "reviewer": role},
                loop={"max_retries": 2},
            ),
            registry={"models": {"fake-model": fake_model_entry(llm.base_url)}},
        )
        _commit_agents_md(repo)
        # The checkout moves on after the base commit, and the graph is synced from it.
        (repo / "AGENTS.md").write_text(_rules(CHECKOUT_REQ), encoding="utf-8")
        assert stack.cli_json("sources", "sync", repo=repo)["added"] == ["AGENTS.md"]
        task_id = new_id("devrules")
        code, status = submit(stack, repo, task_id, [FORMAT_PY])
        developer_calls = llm.requests_for("developer")
        reviewer_calls = llm.requests_for("reviewer")

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert status["iteration"] == 2
    # Each developer turn starts with one request holding the task prompt; later requests of
    # the same turn carry the same first user message.
    prompts = list(dict.fromkeys(user_prompt(c.body) for c in developer_calls))
    assert len(prompts) == 2, prompts
    for prompt in prompts:
        assert f"[warning] AGENTS.md: {BASE_REQ}" in prompt, prompt
        assert CHECKOUT_REQ not in prompt and WEAKENED_REQ not in prompt, prompt
    assert "REDO: name the test" in prompts[1]
    assert len(reviewer_calls) == 2
    for call_ in reviewer_calls:
        context = user_prompt(call_.body).split("## Project context", 1)[1].split("\n## Diff")[0]
        assert BASE_REQ in context and CHECKOUT_REQ not in context
        assert WEAKENED_REQ not in context

    # The approval's convention applies to the folder of the file it was seen in.
    inside = stack.cli_json("review", "context", "--file", "mdurl/_parse.py", repo=repo)
    assert "every public function of the package has a docstring" in inside["text"]
    assert "mdurl/**/*.py" in inside["text"]
    outside = stack.cli_json("review", "context", "--file", "tests/test_mdurl.py", repo=repo)
    assert "every public function of the package" not in outside["text"]
