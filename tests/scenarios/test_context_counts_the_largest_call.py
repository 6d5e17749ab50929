"""Scenario: the loop's context use is how full the developer's window got, not its calls summed.

Every model call resends the conversation, so four calls of an 8,000-token prompt fill a
32,768-token window to about a quarter, not past its end. Counted as the sum, the task showed
"critical" context after one turn and checkpointed for nothing; counted as its largest call, it
stays green and is approved in its first run.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mdurl

from tests.fakes.llm_server import FakeLLMServer, FakeReply, call
from tests.fakes.llm_task import approve_reply, fake_model_entry
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config
from tests.support.scenario_tasks import entries, new_id, submit
from tests.support.stack import Stack

PROMPT, COMPLETION = 8_000, 50


_FORMAT_SOURCE = (Path(mdurl.__file__).parent / "_format.py").read_text(encoding="utf-8")
"""The task file as the project copy holds it."""


def big(reply_call: str, arguments: dict[str, object]) -> FakeReply:
    """A tool-call reply billed like a call whose prompt is ``PROMPT`` tokens."""
    return replace(call(reply_call, arguments), usage=(PROMPT, COMPLETION))


def test_a_turn_of_four_large_calls_is_counted_as_its_largest_call(stack: Stack) -> None:
    developer = [
        big("list_dir", {"path": ".", "depth": 1}),
        big("list_dir", {"path": ".", "depth": 2}),
        # A turn that changes nothing is no submission (it would escalate no_change): the
        # third call adds a comment to the task's file.
        big("write_file", {"path": FORMAT_PY, "content": _FORMAT_SOURCE + "# checked\n"}),
        big("submit", {"summary": "noted the check"}),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        role = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        config = project_config(stack, "window", models={"developer": role, "reviewer": role})
        registry = {"models": {"fake-model": fake_model_entry(llm.base_url)}}
        repo = make_project(stack, "window", config, registry=registry)
        task_id = new_id("window")
        code, status = submit(stack, repo, task_id, [FORMAT_PY])

    assert code == 0, status
    assert status["outcome"] == "approved", status["pending_escalation"]
    used = status["context"]["tokens_used"]
    # The task's own files plus one call (and the reviewer's small one), far from 4 calls' sum.
    assert used < 2 * (PROMPT + COMPLETION), status["context"]
    assert status["context"]["pressure"] == "green", status["context"]
    assert not entries(status, "checkpoint"), status["log"]
    assert status["usage"]["input_tokens"] >= 4 * PROMPT  # every call still counts as spent
