"""Scenario: context pressure forces a checkpoint mid-task, and the task is approved after it.

The developer's model has a small configured window (``models.developer.context_window``) and
the first iteration's agent calls fill most of it, so before the second iteration the loop
checkpoints to a branch and continues in a fresh context. What the loop knew must survive the
checkpoint: the retry count keeps climbing (``retry 1/3`` then ``retry 2/3``) and the reviewer's
findings reach the next developer prompt.

The heavy call is the first review: the loop counts it against its window after the review, so
the checkpoint comes from the loop's own pressure level at the next safe point. (Had the
developer's step filled the window, the risk monitor's ``pause`` on the gate's context report
would race the first review, and the scenario could not know whether a review came first.)
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, call, text
from tests.fakes.llm_task import fake_model_entry, user_prompt
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config, with_new_function
from tests.support.scenario_tasks import EXIT_APPROVED, entries, new_id, submit
from tests.support.stack import Stack

WINDOW = 20_000
"""Big enough for the budget check (8K of working memory), small enough to fill in one step."""
HEAVY_USAGE = (14_000, 200)
"""Tokens the first review reports: ~80% of WINDOW with the task, ~50% of the 32K the registry
gives the model, so only the configured window makes the pressure red."""
FIRST_FINDING = "format_without_hash needs an example in its docstring"
SECOND_FINDING = "the example should show a URL with a query string"


def attempt(version: int) -> list[FakeReply]:
    """One developer iteration: write a distinct version of the change, then submit."""
    content = with_new_function() + f"\n# revision {version}\n"
    write = call("write_file", {"path": FORMAT_PY, "content": content})
    return [write, call("submit", {"summary": f"revision {version}"})]


def verdict(kind: str, finding: str | None = None, usage: tuple[int, int] = (10, 5)) -> FakeReply:
    """The reviewer's JSON verdict, with one finding when it asks for changes."""
    body: dict[str, Any] = {"verdict": kind, "summary": finding or "good"}
    if finding:
        body["findings"] = [{"message": finding, "severity": "error", "file": FORMAT_PY}]
    return text(json.dumps(body), usage=usage)


def iteration_prompts(requests: list[RecordedRequest]) -> list[str]:
    """The task prompt of each developer iteration (its first call: system + user only)."""
    return [user_prompt(r.body) for r in requests if len(r.body["messages"]) == 2]


def test_a_checkpoint_under_context_pressure_keeps_retries_and_findings_and_the_task_is_approved(
    stack: Stack,
) -> None:
    developer = [*attempt(1), *attempt(2), *attempt(3)]
    reviewer = [
        verdict("request_changes", FIRST_FINDING, HEAVY_USAGE),
        verdict("request_changes", SECOND_FINDING),
        verdict("approve"),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=reviewer) as llm:
        role = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        models = {"developer": {**role, "context_window": WINDOW}, "reviewer": role}
        config = project_config(stack, "pressure", models=models, loop={"max_retries": 3})
        registry = {"models": {"fake-model": fake_model_entry(llm.base_url)}}
        repo = make_project(stack, "pressure", config, registry=registry)
        task_id = new_id("pressure")
        code, status = submit(stack, repo, task_id, [FORMAT_PY])
        prompts = iteration_prompts(llm.requests_for("developer"))

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert status["outcome"] == "approved"
    assert status["iteration"] == 3
    checkpoints = entries(status, "checkpoint")
    assert checkpoints, status["log"]

    # The retry count climbs across the checkpoint instead of starting again.
    counts = [re.search(r"retry (\d+)/(\d+)", m) for m in entries(status, "retry")]
    assert [(int(m[1]), int(m[2])) for m in counts if m] == [(1, 3), (2, 3)]
    assert status["retries"] == 2

    # The reviewer's findings reach the developer after the checkpoint, and later ones too.
    assert len(prompts) == 3
    assert FIRST_FINDING in prompts[1], prompts[1]
    assert SECOND_FINDING in prompts[2], prompts[2]
