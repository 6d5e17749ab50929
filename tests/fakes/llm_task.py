"""A sample repository and fake-LLM scripts for one task played end to end by LLM agents.

The task asks for ``sub(a, b)`` in ``calc.py``; the developer script explores, reads, writes the
new file and submits, and the reviewer's reply approves. The repository's config points both
roles at a fake OpenAI-compatible server, so the worker builds real LLM agents.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

from semspec.agents.stabilization.layer import candidate_id
from tests.fakes.llm_server import FakeReply, call, text
from tests.support.repos import make_repo

TASK_TITLE = "Add a sub function"
TASK_DESCRIPTION = "calc.py has add(a, b); add sub(a, b) next to it."
TASK_CRITERION = "sub(3, 1) returns 2"
START_CALC = "def add(a, b):\n    return a + b\n"
NEW_CALC = START_CALC + "\n\ndef sub(a, b):\n    return a - b\n"
SEARCH_QUERY = "def add"
APPROVE = {"verdict": "approve", "summary": "sub is correct and minimal"}
GATE_CODE = "import calc; assert calc.sub(3, 1) == 2, 'sub(3, 1) should be 2'"


def sample_repo(
    path: Path,
    llm_base_url: str,
    api_key_env: str | None = None,
    price: dict[str, float] | None = None,
) -> Path:
    """A git repository on ``main`` with ``calc.py`` and a config whose roles use the fake LLM.

    The config sits untracked in ``.semspec/`` as after ``semspec init``; the services take any
    free port, so parallel tests and other people's stacks never collide. ``price`` is the fake
    model's ``cost`` in the registry (none: the model has no price).
    """
    make_repo(path, {"README.md": "# sample\n", "calc.py": START_CALC})
    role: dict[str, Any] = {
        "provider": "openai",
        "model": "fake-model",
        "base_url": llm_base_url,
        "timeout_s": 20,
        "max_steps": 12,
    }
    if api_key_env is not None:
        role["api_key_env"] = api_key_env
    config = {
        "project": {"name": "llm-e2e"},
        "gates": {
            "preset": "none",
            "additional": [
                {"name": "check", "command": f'{sys.executable} -c "{GATE_CODE}"', "timeout": 60}
            ],
        },
        "loop": {"max_retries": 1, "activity_attempts": 3},
        "models": {"developer": role, "reviewer": role},
        "services": {"nats": {"port": 0}, "temporal": {"port": 0, "ui_port": 0}},
    }
    (path / ".semspec").mkdir(exist_ok=True)
    (path / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    entry = fake_model_entry(llm_base_url)
    if price is not None:
        entry["cost"] = price
    registry = {"models": {"fake-model": entry}}
    (path / ".semspec" / "models.yaml").write_text(yaml.safe_dump(registry), encoding="utf-8")
    return path


def fake_model_entry(base_url: str) -> dict[str, Any]:
    """A registry entry for the fake server's model, as a user adds one for a local model.

    The task's budget check sizes the work by the developer model's registry profile, so a model
    served locally needs an entry in ``.semspec/models.yaml``.
    """
    return {
        "provider": "openai-compatible",
        "endpoint": {"base_url": base_url},
        "capabilities": ["developer", "reviewer"],
        "tokenizer": None,
        "context": {
            "context_window": 32_768,
            "max_output_tokens": 4_096,
            "effective_context": 28_672,
            "sweet_spot": 16_000,
            "system_prompt_overhead": 2_000,
            "recommended_max_file_tokens": 6_000,
        },
    }


def developer_replies() -> list[FakeReply]:
    """list_dir, search, read (by the search hit's id), write_file, submit."""
    hit = candidate_id(SEARCH_QUERY, "calc.py", 1)
    return [
        call("list_dir", {"path": "."}),
        call("search", {"query": SEARCH_QUERY}),
        call("read", {"candidate_id": hit}),
        call("write_file", {"path": "calc.py", "content": NEW_CALC}),
        call("submit", {"summary": "added sub(a, b) below add"}),
    ]


def approve_reply() -> FakeReply:
    """The reviewer's verdict JSON approving the change."""
    return text(json.dumps(APPROVE))


def tool_names(body: dict[str, Any]) -> set[str]:
    """Names of the tools a chat request offered the model."""
    return {tool["function"]["name"] for tool in body.get("tools", [])}


def user_prompt(body: dict[str, Any]) -> str:
    """The first user message of a chat request (the task or the review request)."""
    return next(str(m["content"]) for m in body["messages"] if m["role"] == "user")
