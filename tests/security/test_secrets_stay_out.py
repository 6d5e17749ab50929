"""Keys in the environment of ``semspec up`` stay out of the run folder, the Temporal history and
every request an LLM receives, even when a gate prints its whole environment (and its parent's)
and fails once, so that output goes on to the next developer prompt.

The keys are planted in the environment the CLI (and so the worker ``up`` starts) runs with.
Two opt into the gates (``gates.env``): the gate really prints them, and only masking keeps them
out. The others must not reach a gate at all: its parent is semspec's launcher, fenced or not,
which holds only the gate's allowlisted environment.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import string
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client

from semspec.core.masking import MASK, mask_text
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.gates.capture import OutputCapture
from tests.fakes.llm_server import FakeLLMServer, FakeReply, call
from tests.fakes.llm_task import (
    GATE_CODE,
    NEW_CALC,
    START_CALC,
    TASK_CRITERION,
    approve_reply,
    developer_replies,
    fake_model_entry,
)
from tests.support.stack import Stack, running_stack, sample_config

TASK_ID = "secrets"
WRONG_CALC = START_CALC + "\n\ndef sub(a, b):\n    return a + b\n"
OPTED_IN = ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"]
ITERATION_CALLS = 5


def _token(size: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(size))


def planted_keys() -> dict[str, str]:
    """Fresh keys of the usual vendor shapes (and one with no shape at all)."""
    return {
        "OPENAI_API_KEY": f"sk-proj-{_token(48)}",
        "ANTHROPIC_API_KEY": f"sk-ant-api03-{_token(40)}",
        "AWS_ACCESS_KEY_ID": f"AKIA{_token(16, string.ascii_uppercase + string.digits)}",
        "AWS_SECRET_ACCESS_KEY": _token(40, string.ascii_letters + string.digits + "/+"),
        "GITHUB_TOKEN": f"ghp_{_token(36)}",
        "SLACK_BOT_TOKEN": f"xoxb-{_token(12, string.digits)}-{_token(24)}",
        "GOOGLE_API_KEY": f"AIza{_token(35)}",
    }


def env_gate() -> dict[str, object]:
    """A gate printing its environment and its parent's, then checking ``sub``.

    The parent is semspec's launcher (``core/fence_launch.py``), fenced or not, with only the
    gate's allowlisted environment.
    """
    check = f'{sys.executable} -c "{GATE_CODE}"'
    command = f"env; tr '\\0' '\\n' < /proc/$PPID/environ; {check}"
    return {"name": "check", "command": command, "timeout": 60}


def iteration(calc: str) -> list[FakeReply]:
    """One developer iteration writing ``calc`` (the explore-read-write-submit of the sample)."""
    replies = developer_replies()
    assert len(replies) == ITERATION_CALLS and replies[3].tool_calls[0][0] == "write_file"
    return [*replies[:3], call("write_file", {"path": "calc.py", "content": calc}), replies[4]]


def llm_repo_config(base_url: str, sandbox: str) -> dict[str, Any]:
    role = {"provider": "openai", "model": "fake-model", "base_url": base_url, "timeout_s": 20}
    config = sample_config([env_gate()], models={"developer": role, "reviewer": role})
    config["gates"].update(env=OPTED_IN, sandbox=sandbox)
    return config


def files_holding(root: Path, values: dict[str, str]) -> dict[str, list[str]]:
    """``{file: [names of the values it holds]}`` for every file under ``root``, bytes as stored."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        try:
            data = path.read_bytes()
        except OSError:
            continue  # a socket or a file that went away
        names = [name for name, value in values.items() if value.encode() in data]
        if names:
            found[str(path.relative_to(root))] = names
    return found


async def history_text(stack: Stack, task_id: str) -> str:
    """The task's whole history fetched from Temporal, payloads decoded (JSON keeps them in
    base64, where a plain search would find nothing)."""
    client = await Client.connect(stack.temporal_address())
    history = await client.get_workflow_handle(task_workflow_id(task_id)).fetch_history()
    parts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "data" and isinstance(value, str):
                    parts.append(base64.b64decode(value).decode("utf-8", "replace"))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str):
            parts.append(node)

    walk(json.loads(history.to_json()))
    return "\n".join(parts)


def holding(text: str, values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() if value in text]


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_planted_keys_reach_no_file_no_history_and_no_llm_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    keys = planted_keys()
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    developer = [*iteration(WRONG_CALC), *iteration(NEW_CALC)]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        config = llm_repo_config(llm.base_url, sandbox)
        registry = json.dumps({"models": {"fake-model": fake_model_entry(llm.base_url)}})
        with running_stack(tmp_path, config, {".semspec/models.yaml": registry}) as stack:
            submitted = stack.cli(
                "task", "submit", "Add a sub function", "--id", TASK_ID, "--file", "calc.py",
                "--criterion", TASK_CRITERION, "--wait", "--json", timeout=180,
            )  # fmt: skip
            history = asyncio.run(history_text(stack, TASK_ID))
            gate_logs = sorted((stack.run_dir / "logs" / TASK_ID).rglob("check.log"))
            first_gate_log = gate_logs[0].read_text(encoding="utf-8") if gate_logs else ""
        run_dir = stack.run_dir
        requests = [json.dumps({"headers": r.headers, "body": r.body}) for r in llm.requests]
        second_prompt = json.dumps(llm.requests_for("developer")[ITERATION_CALLS].body)

    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    status = json.loads(submitted.stdout)
    assert (status["outcome"], status["iteration"]) == ("approved", 2)
    # The gate did print the opted-in keys, masked, and that output reached the next prompt.
    assert "GITHUB_TOKEN=***" in first_gate_log
    assert "AWS_SECRET_ACCESS_KEY=***" in first_gate_log
    assert "GITHUB_TOKEN=***" in second_prompt
    assert "should be 2" in second_prompt
    # The gate's parent is semspec's launcher (fenced or not), which holds only the gate's
    # allowlisted environment: the worker's own keys are not even reachable through /proc.
    assert "OPENAI_API_KEY" not in first_gate_log
    # Nothing anywhere holds a planted value.
    assert files_holding(run_dir, keys) == {}
    assert "temporal.db" in {p.name for p in run_dir.iterdir()}
    assert "GITHUB_TOKEN=***" in history  # the gate output is in the history, masked
    assert holding(history, keys) == []
    assert [holding(r, keys) for r in requests if holding(r, keys)] == []
    assert holding(submitted.stdout + submitted.stderr, keys) == []


@pytest.mark.parametrize("name", sorted(set(planted_keys()) - {"AWS_SECRET_ACCESS_KEY"}))
def test_every_vendor_key_shape_is_masked_in_text(name: str) -> None:
    value = planted_keys()[name]
    line = f"curl -H 'x: {value}' failed; {name}={value}\n"

    masked = mask_text(line, environ={})

    assert value not in masked
    assert f"{name}={MASK}" in masked


def test_the_value_of_a_secret_named_variable_is_masked_wherever_it_appears() -> None:
    value = _token(40, string.ascii_letters + "/+")
    environ = {"DEPLOY_PASSWORD": value, "EDITOR": "vim-editor-long"}

    masked = mask_text(f"connecting with {value} using vim-editor-long", environ)

    assert masked == f"connecting with {MASK} using vim-editor-long"


def test_ordinary_log_text_is_left_alone() -> None:
    text = "retry 3 of task t-1 (tokens=1200, skip-list, max_tokens: 4096), sk-8 passed"
    assert mask_text(text, environ={}) == text


def test_a_key_split_across_two_chunks_of_gate_output_is_still_masked(tmp_path: Path) -> None:
    key = planted_keys()["OPENAI_API_KEY"]
    data = f"before\nOPENAI key is {key} and more\nafter\n".encode()
    cut = data.index(key.encode()) + 10

    with OutputCapture(tmp_path / "gate.log", max_bytes=1_000) as capture:
        capture.write(data[:cut])
        capture.write(data[cut:])

    assert key not in capture.text()
    assert key.encode() not in (tmp_path / "gate.log").read_bytes()
    assert f"OPENAI key is {MASK} and more" in capture.text()
