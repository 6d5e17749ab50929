"""Scenario: the live monitor sees a loop the way ``semspec monitor replay`` does.

The developer is a coding-agent CLI (``tests/fakes/claude_cli.py``, Claude Code's stream-json
print mode) whose model is the fake server; it runs the commands the model asks for for real,
in the task's worktree of a copy of ``mdurl``.

- Stuck: the model writes a test for a function that does not exist yet, then runs the
  project's test suite again and again. It fails the same way each time; only pytest's
  ``in 0.31s`` changes from run to run. Hashed raw, no two outputs
  would match; blanked as replay blanks them (``semspec.vocabulary.step_text``) they repeat, so
  the running monitor pauses the turn at ``risk.steps.repeated_failure``'s threshold and halts
  the fresh run at the same count.
- Polling: the model checks a build's progress; each check prints another ``N of 8 steps done``
  (and another elapsed time). The output really changes, so no rule fires, and the task is
  approved after the model finishes the work.

Model calls are counted at the fake server, never by the clock.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from semspec.core.config.models import StepRulesConfig
from tests.fakes.llm_server import FakeLLMServer, FakeReply, RecordedRequest, call, text
from tests.fakes.llm_task import approve_reply, fake_model_entry
from tests.support.looping_developer import calls_per_turn
from tests.support.mdurl_project import (
    ADDED_TEST,
    FORMAT_PY,
    make_project,
    project_config,
    with_new_function,
)
from tests.support.scenario_tasks import new_id, submit
from tests.support.stack import Stack, count_signals

CLI = Path(__file__).resolve().parents[1] / "fakes" / "claude_cli.py"
DELAY_S = 0.5
THRESHOLD = int(StepRulesConfig().repeated_failure.threshold)
SLACK = 1
"""Model calls a turn may make past the threshold: the one already under way."""
RUN_TESTS = call("Bash", {"command": "python -m pytest -q -p no:cacheprovider tests"})
POLLS = 8


def cli_project(stack: Stack, name: str, llm: FakeLLMServer) -> Path:
    """A copy of mdurl whose developer is the fake Claude Code over ``llm`` (reviewer: ``llm``)."""
    command = (
        f"{sys.executable} {CLI} --base-url {llm.base_url} -p --output-format stream-json --verbose"
    )
    developer = {"provider": "command", "model": "fake-model", "command": command, "timeout_s": 300}
    reviewer = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
    config = project_config(
        stack,
        name,
        models={"developer": developer, "reviewer": reviewer},
        gates={"sandbox": "none"},
    )
    registry = {"models": {"fake-model": fake_model_entry(llm.base_url)}}
    return make_project(stack, name, config, registry=registry)


def test_a_test_run_failing_the_same_way_in_another_time_is_paused_at_the_threshold(
    stack: Stack, tmp_path: Path
) -> None:
    written = tmp_path / "test_without_hash.py"
    written.write_text(ADDED_TEST, encoding="utf-8")
    write_test = call("Bash", {"command": f"cp {written} tests/"})

    def rerun(request: RecordedRequest) -> FakeReply:
        started = any(m.get("role") == "tool" for m in request.body["messages"])
        return replace(RUN_TESTS if started else write_test, delay_s=DELAY_S)

    with FakeLLMServer.for_roles(developer=[rerun] * 200) as llm:
        repo = cli_project(stack, "reruns", llm)
        task_id = new_id("reruns")
        code, _ = submit(stack, repo, task_id, [FORMAT_PY], wait=False)
        assert code == 0
        status = stack.wait_status(
            task_id, lambda s: s["phase"] == "escalated", timeout_s=240, repo=repo
        )
        sent = [len(r.body["messages"]) for r in llm.requests_for("developer")]

    escalation = status["pending_escalation"]
    assert (escalation["source"], escalation["reason"]) == ("halt", "repeated_failure"), status
    turns = calls_per_turn(sent)
    assert len(turns) == 2, turns  # paused, then halted in the fresh run
    # Each turn: the call writing the test, the threshold's failing runs, at most one more.
    assert all(1 + THRESHOLD <= n <= 1 + THRESHOLD + SLACK for n in turns), turns


def test_polling_a_build_whose_progress_changes_never_fires(stack: Stack, tmp_path: Path) -> None:
    progress = tmp_path / "progress"
    check = (
        f"echo . >> {progress}; "
        f'echo "build: $(wc -l < {progress} | tr -d " ") of {POLLS} steps done in 0.4s"'
    )
    fixed = tmp_path / "_format.py"
    fixed.write_text(with_new_function(), encoding="utf-8")
    developer: list[FakeReply] = [
        *[call("Bash", {"command": check})] * POLLS,
        call("Bash", {"command": f"cp {fixed} {FORMAT_PY}"}),
        text("added format_without_hash"),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = cli_project(stack, "polls", llm)
        task_id = new_id("polls")
        code, result = submit(stack, repo, task_id, [FORMAT_PY])
        model_calls = len(llm.requests_for("developer"))

    assert code == 0, result
    assert model_calls == len(developer)
    assert progress.read_text(encoding="utf-8").count(".") == POLLS
    assert signals(stack, task_id) == {"warn": 0, "pause": 0, "halt": 0}


def signals(stack: Stack, task_id: str) -> dict[str, Any]:
    """How many signals of each level the monitor sent for ``task_id``."""
    return {
        level: count_signals(stack.nats_url(), task_id, level)
        for level in ("warn", "pause", "halt")
    }
