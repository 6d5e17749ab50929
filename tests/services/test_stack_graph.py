"""Several processes, one graph: the stack's Oxigraph server serves every worker and command.

One stack from the real ``semspec up`` (NATS, Temporal, the graph server, a worker, the monitor)
on a sample repository with an SOP for every Python file. The developer is scripted; the
reviewer is an LLM agent on the fake OpenAI-compatible server, whose recorded requests show the
context each reviewer was given, so every task reads the graph (and writes it when approved).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from temporalio.client import Client

from semspec.core.errors import ServiceError
from semspec.graph.access import sparql_store
from semspec.graph.store import embedded_store
from semspec.vocabulary import source as sd
from semspec.vocabulary.workflow_names import task_workflow_id
from tests.fakes.llm_server import FakeLLMServer, text
from tests.fakes.llm_task import fake_model_entry, user_prompt
from tests.support.stack import Stack, check_gate, cli_env, running_stack, sample_config

REQUIREMENT = "Keep every module importable without side effects."
SOP = {"id": "modules", "category": "sop", "applies_to": ["*.py"], "severity": "error"}
SOP_TEXT = (
    f"---\n{yaml.safe_dump(SOP)}---\n\n# Modules\n\nHow modules of this project behave.\n\n"
    f"## Requirements\n\n- {REQUIREMENT}\n"
)
TASKS = 6
MODULES = {f"mod_{n}.py": f"VALUE = {n}\n" for n in range(TASKS)}
APPROVE = text(json.dumps({"verdict": "approve", "summary": "fine"}))


@dataclass
class GraphStack:
    stack: Stack
    llm: FakeLLMServer


@pytest.fixture(scope="module")
def graph_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStack]:
    with FakeLLMServer.for_roles() as llm:
        reviewer = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        config = sample_config([check_gate()], models={"reviewer": {**reviewer, "timeout_s": 20}})
        files = {
            **MODULES,
            ".semspec/sources/docs/sops/modules.md": SOP_TEXT,
            ".semspec/models.yaml": yaml.safe_dump(
                {"models": {"fake-model": fake_model_entry(llm.base_url)}}
            ),
        }
        root = tmp_path_factory.mktemp("graph-stack")
        with running_stack(root, config, files) as stack:
            yield GraphStack(stack, llm)


def submit(stack: Stack, path: str, content: str, *, wait: bool) -> tuple[str, int]:
    """``task submit`` of a scripted developer writing ``path``; the task id and exit code."""
    task_id = f"graph-{uuid.uuid4().hex[:8]}"
    script = stack.root / "scripts" / f"{task_id}.yaml"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(yaml.safe_dump({"iterations": [{"developer": {"write": {path: content}}}]}))
    args = ["task", "submit", f"change {path}", "--id", task_id, "--file", path]
    args += ["--criterion", "the module still imports", "--script", str(script), "--json"]
    done = stack.cli(*args, *(["--wait"] if wait else []), timeout=180)
    assert done.returncode in (0, 3) or not wait, done.stderr
    return task_id, done.returncode


def reviewer_prompts(llm: FakeLLMServer) -> list[str]:
    return [user_prompt(request.body) for request in llm.requests_for("reviewer")]


def test_sources_sync_on_a_running_stack_writes_through_the_graph_server_and_a_reviewer_reads_it(
    graph_stack: GraphStack,
) -> None:
    stack, llm = graph_stack.stack, graph_stack.llm
    statuses = {s["name"]: s for s in stack.cli_json("status")}
    assert statuses["graph"]["state"] == "up"
    assert statuses["graph"]["version"].startswith("semspec graph server")

    synced = stack.cli_json("sources", "sync")
    assert synced["added"] == [".semspec/sources/docs/sops/modules.md"], synced

    # The server holds the store directory: no other process could have opened the files.
    with pytest.raises(ServiceError, match="graph store"):
        embedded_store(stack.repo / ".semspec" / "graph")
    graph = stack.records()["graph"]
    served = sparql_store(
        graph.extra["query_url"], graph.extra["update_url"], token_file=graph.extra["token_file"]
    )
    try:
        query = "SELECT ?req WHERE { GRAPH ?g { ?sop ?requirements ?req } }"
        rows = served.select(query, {"requirements": sd.REQUIREMENTS})
    finally:
        served.close()
    assert [str(row["req"]) for row in rows] == [REQUIREMENT]

    llm.push(APPROVE, route="reviewer")
    task_id, code = submit(stack, "calc.py", "def add(a, b):\n    return b + a\n", wait=True)
    assert code == 0, stack.status(task_id)
    prompts = reviewer_prompts(llm)
    assert len(prompts) == 1 and REQUIREMENT in prompts[0], prompts


def start_worker(stack: Stack, name: str) -> subprocess.Popen[bytes]:
    """``semspec worker`` started by hand on the stack, as on a second machine."""
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "worker"]
    with (stack.root / f"{name}.log").open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=cli_env())


def workers_up(stack: Stack, count: int, timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """The ``worker`` rows of ``status --json`` once ``count`` of them are up (bounded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = stack.cli("status", "--json")
        rows = [s for s in json.loads(done.stdout or "[]") if s["name"] == "worker"]
        if len(rows) == count and all(s["state"] == "up" for s in rows):
            return rows
        assert time.monotonic() < deadline, f"workers never all up: {rows}"
        time.sleep(0.3)


def ended_or_escalated(status: dict[str, Any]) -> bool:
    return bool(status["outcome"]) or status["phase"] == "escalated"


async def activity_identities(address: str, task_ids: list[str]) -> set[str]:
    """Identities of the workers that started the tasks' activities (from Temporal)."""
    client = await Client.connect(address)
    found = set()
    for task_id in task_ids:
        history = await client.get_workflow_handle(task_workflow_id(task_id)).fetch_history()
        for event in history.events:
            if event.HasField("activity_task_started_event_attributes"):
                found.add(event.activity_task_started_event_attributes.identity)
    return found


def test_two_more_workers_on_one_stack_run_tasks_that_all_touch_the_graph_and_none_escalates(
    graph_stack: GraphStack,
) -> None:
    stack, llm = graph_stack.stack, graph_stack.llm
    stack.cli_json("sources", "sync")
    extra = [start_worker(stack, f"worker-{n}") for n in range(2)]
    try:
        rows = workers_up(stack, 3)
        identities = {row["identity"] for row in rows}
        assert len(identities) == 3 and all(identities), rows
        assert {row["pid"] for row in rows} >= {proc.pid for proc in extra}

        before = len(reviewer_prompts(llm))
        llm.push(*[APPROVE] * TASKS, route="reviewer")
        task_ids = [submit(stack, path, f"VALUE = {path!r}\n", wait=False)[0] for path in MODULES]
        ended = [stack.wait_status(task_id, ended_or_escalated, 240) for task_id in task_ids]
        escalated = [s["pending_escalation"] for s in ended if s["phase"] == "escalated"]
        assert escalated == [], escalated
        assert [s["outcome"] for s in ended] == ["approved"] * TASKS, ended

        prompts = reviewer_prompts(llm)[before:]
        assert len(prompts) == TASKS and all(REQUIREMENT in p for p in prompts)
        ran_on = asyncio.run(activity_identities(stack.temporal_address(), task_ids))
        assert len(ran_on) > 1 and ran_on <= identities, (ran_on, identities)
    finally:
        for proc in extra:
            proc.send_signal(signal.SIGTERM)
        for proc in extra:
            proc.wait(timeout=60)
    # A worker that stopped withdraws itself; the one `up` started is still listed and up.
    assert [row["pid"] for row in workers_up(stack, 1)] == [stack.records()["worker"].pid]
