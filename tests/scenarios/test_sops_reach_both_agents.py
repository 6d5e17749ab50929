"""Scenario: a team's SOPs are synced into the graph and a task on matching files is approved.

The developer and the reviewer are LLM agents (the ``openai`` provider) served by the fake
OpenAI-compatible server on loopback, which records every request: the developer's task prompt
and the reviewer's context must carry every error-severity requirement of the SOPs whose
``applies_to`` matches the task file, and nothing of an SOP that does not match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.llm_server import FakeLLMServer, call, text
from tests.fakes.llm_task import fake_model_entry, user_prompt
from tests.support.mdurl_project import (
    FORMAT_PY,
    make_project,
    project_config,
    sop,
    with_new_function,
)
from tests.support.scenario_tasks import EXIT_APPROVED, branch_commits, file_at, new_id, submit
from tests.support.stack import Stack

URL_ERRORS = [
    "Raise ValueError naming the offending URL for input that cannot be parsed.",
    "Keep format(parse(url)) equal to url for every URL the tests list.",
]
PACKAGE_API = [
    "Give every new public function a docstring of one or two sentences.",
    "Never change the URL named tuple's field order; callers unpack it.",
]
STYLE = ["Prefer str methods over regular expressions for simple checks."]
NOTES = ["Mention the RFC 3986 section a parsing rule comes from."]
DOCS_ONLY = ["Every documentation page starts with a level-one heading."]

SOPS = {
    "url-errors.md": sop("url-errors", "error", ["**/*.py"], URL_ERRORS, "URL errors"),
    "package-api.md": sop("package-api", "error", ["mdurl/*.py"], PACKAGE_API, "Package API"),
    "url-style.md": sop("url-style", "warning", ["**/*.py"], STYLE, "Style"),
    "url-notes.md": sop("url-notes", "info", ["**/*.py"], NOTES, "Notes"),
    "docs-pages.md": sop("docs-pages", "error", ["docs/**/*.md"], DOCS_ONLY, "Docs pages"),
}
ERROR_REQUIREMENTS = URL_ERRORS + PACKAGE_API


def llm_role(base_url: str) -> dict[str, Any]:
    """A role played by the fake server's model (no API key: the endpoint is on loopback)."""
    return {
        "provider": "openai",
        "model": "fake-model",
        "base_url": base_url,
        "timeout_s": 20,
        "max_steps": 8,
    }


def test_synced_sops_reach_the_developer_prompt_and_the_reviewer_context_and_the_task_is_approved(
    stack: Stack,
) -> None:
    developer = [
        call("write_file", {"path": FORMAT_PY, "content": with_new_function()}),
        call("submit", {"summary": "added format_without_hash"}),
    ]
    approve = {"verdict": "approve", "summary": "meets the criterion and the SOPs"}
    with FakeLLMServer.for_roles(developer=developer, reviewer=[text(json.dumps(approve))]) as llm:
        role = llm_role(llm.base_url)
        repo = make_project(
            stack,
            "sops",
            project_config(stack, "sops", models={"developer": role, "reviewer": role}),
            sops=SOPS,
            registry={"models": {"fake-model": fake_model_entry(llm.base_url)}},
        )
        synced = stack.cli_json("sources", "sync", repo=repo)
        assert sorted(Path(rel).name for rel in synced["added"]) == sorted(SOPS), synced
        task_id = new_id("sops")
        code, status = submit(stack, repo, task_id, [FORMAT_PY])
        developer_calls = llm.requests_for("developer")
        reviewer_calls = llm.requests_for("reviewer")

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert status["outcome"] == "approved"
    commits = branch_commits(repo, task_id)
    assert [str(c.id) for c in commits] == [status["commit_id"]]
    assert file_at(repo, status["commit_id"], FORMAT_PY) == with_new_function()

    task_prompt = user_prompt(developer_calls[0].body)
    missing = [r for r in ERROR_REQUIREMENTS if r not in task_prompt]
    assert missing == [], f"the developer was not told: {missing}\n---\n{task_prompt}"
    assert DOCS_ONLY[0] not in task_prompt

    assert len(reviewer_calls) == 1
    review_prompt = user_prompt(reviewer_calls[0].body)
    counts = {r: review_prompt.count(r) for r in ERROR_REQUIREMENTS}
    assert counts == dict.fromkeys(ERROR_REQUIREMENTS, 1), review_prompt
    assert DOCS_ONLY[0] not in review_prompt
