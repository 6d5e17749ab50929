"""Scenario: tasks played by the real agent CLIs through the whole stack (issue 24).

One stack whose worker has the variables the docs' configs pass (``ANTHROPIC_BASE_URL``,
``OPENAI_API_BASE`` and the keys) exported, all pointing at one fake model server on loopback;
one repository per CLI whose developer is that CLI's role from docs/providers.md, word for word
but for the server's port, fenced by bubblewrap. The reviewer is the fake OpenAI-compatible
server. For each CLI:

- a task is approved with the agent's edit committed on the task branch, with the steps and
  tokens the CLI reported;
- a run that changes nothing is sent back once, then escalates ``no_change``, and nothing is
  "committed";
- a looping run (watched step by step: a stream, a trajectory or an LLM history file) is paused
  by the step rules, and halted in its fresh run, long before its ``timeout_s``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml

from semspec.workflow.task.loop.empty_turn import NO_CHANGE_FEEDBACK
from tests.fakes.agent_model_server import AgentModelServer, AgentReply, calls, says
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.llm_task import approve_reply, fake_model_entry
from tests.scenarios.test_agent_clis import (  # noqa: F401  (bwrap is a fixture)
    CLIS,
    MINI_SUBMIT,
    NEW_CALC,
    anthropic_env,
    bwrap,
    documented_role,
    openai_env,
)
from tests.support.scenario_tasks import (
    EXIT_APPROVED,
    EXIT_ESCALATED,
    entries,
    file_at,
    new_id,
    resolve,
    submit,
)
from tests.support.stack import Stack, check_gate, cli_env, running_stack, sample_config

pytestmark = pytest.mark.usefixtures("bwrap")
CRITERION = "sub(3, 1) returns 2"
NOTHING: dict[str, AgentReply] = {
    "claude": says("Nothing needs to change."),
    "codex": says("Nothing needs to change."),
    "aider": says("Nothing needs to change."),
    "mini-swe-agent": calls("bash", {"command": MINI_SUBMIT}),
}
"""A reply that ends the CLI's run without touching a file."""


@pytest.fixture(scope="module")
def model() -> Iterator[AgentModelServer]:
    with AgentModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def reviewer() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture(scope="module")
def cli_stack(tmp_path_factory: pytest.TempPathFactory, model: AgentModelServer) -> Iterator[Stack]:
    env = {**cli_env(), **openai_env(model), **anthropic_env(model)}
    root = tmp_path_factory.mktemp("agent-cli-tasks")
    with running_stack(root, sample_config([check_gate()]), env=env) as stack:
        yield stack


def cli_repo(stack: Stack, name: str, model: AgentModelServer, reviewer: FakeLLMServer) -> Path:
    """A repository on the stack whose developer is the CLI's documented role."""
    cli = CLIS[name]
    developer = documented_role(cli.heading, model, cli.install())
    review = {"provider": "openai", "model": "fake-model", "base_url": reviewer.base_url}
    config = sample_config([check_gate()], loop={"max_retries": 1})
    config["models"] = {"developer": developer, "reviewer": review}
    repo = stack.sibling_repo(f"{name}-{new_id('r')}", config)
    registry = {"models": {"fake-model": fake_model_entry(reviewer.base_url)}}
    (repo / ".semspec" / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    return repo


def repo_config(repo: Path) -> str:
    """The developer role of the repository's config, as YAML."""
    config = yaml.safe_load((repo / ".semspec" / "config.yaml").read_text(encoding="utf-8"))
    return yaml.safe_dump(config["models"]["developer"])


def run(stack: Stack, repo: Path, task_id: str, wait: bool = True) -> tuple[int, dict[str, Any]]:
    return submit(stack, repo, task_id, ["calc.py"], criterion=CRITERION, wait=wait)


@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_task_played_by_the_cli_is_approved_with_its_edit_committed(
    name: str,
    cli_stack: Stack,
    model: AgentModelServer,
    reviewer: FakeLLMServer,
) -> None:
    cli = CLIS[name]
    repo = cli_repo(cli_stack, name, model, reviewer)
    model.play(cli.edit)
    reviewer.push(approve_reply())
    task_id = new_id(name.split("-")[0])

    code, status = run(cli_stack, repo, task_id)

    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    base = pygit2.Repository(str(repo)).revparse_single("main").id
    assert status["commit_id"] and status["commit_id"] != str(base)
    assert file_at(repo, status["commit_id"], "calc.py") == NEW_CALC
    # The developer's steps and tokens, apart from the reviewer's (the fake-model).
    developer = status["usage"]["by_model"][yaml.safe_load(repo_config(repo))["model"]]
    assert developer["steps"] == len(cli.steps)
    if cli.tokens is not None:
        assert (developer["input_tokens"], developer["output_tokens"]) == cli.tokens
    else:
        assert developer["unpriced"]
    shown = cli_stack.cli("task", "status", task_id, repo=repo).stdout
    assert f"commit: {status['commit_id']}" in shown


@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_cli_run_that_changes_nothing_escalates_no_change_and_commits_nothing(
    name: str,
    cli_stack: Stack,
    model: AgentModelServer,
    reviewer: FakeLLMServer,
) -> None:
    repo = cli_repo(cli_stack, name, model, reviewer)
    model.play([], after=NOTHING[name])
    task_id = new_id(name.split("-")[0])
    before, reviews = len(model.turns), len(reviewer.requests)

    code, status = run(cli_stack, repo, task_id)

    assert code == EXIT_ESCALATED, json.dumps(status)[-3000:]
    assert status["pending_escalation"]["reason"] == "no_change"
    assert status["commit_id"] is None and len(reviewer.requests) == reviews
    assert entries(status, "gate") == []  # nothing reached the gates or the reviewer
    told = [json.dumps(turn.body) for turn in model.turns[before:]]
    assert any(NO_CHANGE_FEEDBACK in body for body in told)
    resolve(cli_stack, repo, task_id, "abort")


@pytest.mark.parametrize("name", sorted(CLIS))
def test_a_looping_cli_is_paused_then_halted_by_the_step_rules(
    name: str,
    cli_stack: Stack,
    model: AgentModelServer,
    reviewer: FakeLLMServer,
) -> None:
    cli = CLIS[name]
    repo = cli_repo(cli_stack, name, model, reviewer)
    model.play([], after=cli.loop)
    task_id = new_id(name.split("-")[0])
    before = len(model.turns)

    code, _ = run(cli_stack, repo, task_id, wait=False)
    assert code == 0
    # Bounded by turns, not the clock: the role's timeout_s is 1800 s.
    status = cli_stack.wait_status(
        task_id, lambda s: s["phase"] == "escalated", timeout_s=240, repo=repo
    )
    turns = len(model.turns) - before

    escalation = status["pending_escalation"]
    assert (escalation["source"], escalation["reason"]) == ("halt", cli.loop_rule), status
    paused = entries(status, "checkpoint")
    assert paused and paused[0].startswith("pause"), "paused first, then halted"
    assert turns < 30
    resolve(cli_stack, repo, task_id, "abort")
