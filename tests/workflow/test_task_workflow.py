"""The task loop on a real Temporal server, real git, real gates and real NATS."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import nats
import pygit2
import pytest
from nats.js import JetStreamContext
from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError

from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import SIGNAL_HALT, UPDATE_RESOLVE, task_workflow_id
from semspec.workflow.task.messages import Resolution, TaskResult
from semspec.workflow.task.publisher import EventPublisher
from tests.support.monitor_probe import stream_messages
from tests.support.owner import answer, send, signal_for, signed
from tests.support.tasks import (
    BROKEN_CALC,
    GOOD_CALC,
    GOOD_CALC_V2,
    owner_worker,
    start,
    task_input,
    wait_for_phase,
    write_script,
)

APPROVE = {"verdict": "approve", "summary": "looks right"}
CHANGES = {
    "verdict": "request_changes",
    "summary": "criterion not met",
    "findings": [{"message": "mul is missing", "criterion": "sub(a, b) returns a - b"}],
}


@pytest.fixture
async def worker(
    temporal_client: Client, task_queue: str, nats_url: str
) -> AsyncIterator[EventPublisher]:
    async with owner_worker(temporal_client, task_queue, nats_url) as publisher:
        yield publisher


def _tid() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def _branch_commits(repo: Path, task_id: str) -> list[pygit2.Commit]:
    git = pygit2.Repository(str(repo))
    tip = git.lookup_branch(f"semspec/task/{task_id}").peel(pygit2.Commit)
    base = git.lookup_branch("main").peel(pygit2.Commit)
    return [c for c in git.walk(tip.id) if c.id != base.id and git.descendant_of(c.id, base.id)]


async def test_a_task_approved_on_first_try_commits_once_on_its_branch(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}]
    )
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    assert result.iterations == 1
    commits = _branch_commits(git_repo, task_id)
    assert [c.id.hex if hasattr(c.id, "hex") else str(c.id) for c in commits] == [result.commit_id]
    assert f"Semspec-Task: {task_id}" in commits[0].message
    # The user's own checkout is untouched.
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


async def test_a_failed_required_gate_sends_the_error_back_and_the_fix_is_approved(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": BROKEN_CALC}}},
            {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE},
        ],
    )
    handle = await start(temporal_client, task_input(git_repo, script, _tid()), task_queue)
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    assert result.iterations == 2
    gate_lines = [e.message for e in result.status.log if e.kind == "gate"]
    assert gate_lines[0].startswith("check: FAIL")
    assert gate_lines[1].startswith("check: pass")
    assert len(result.status.fingerprints) == 1


async def test_request_changes_loops_back_with_findings_then_approves(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": CHANGES},
            {"developer": {"write": {"calc.py": GOOD_CALC_V2}}, "reviewer": APPROVE},
        ],
    )
    handle = await start(temporal_client, task_input(git_repo, script, _tid()), task_queue)
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    verdicts = [e.message.split()[0] for e in result.status.log if e.kind == "review"]
    assert verdicts == ["request_changes", "approve"]


async def test_an_unchanged_fingerprint_escalates_with_no_new_evidence(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    status = await wait_for_phase(handle, "escalated")
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "no_new_evidence"
    assert status.iteration == 2
    await answer(handle, Resolution("abort"))
    result: TaskResult = await handle.result()
    assert result.outcome == "aborted"
    assert result.commit_id is None


async def test_exhausted_retries_escalate_and_a_human_retry_with_guidance_gets_approved(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    # Each iteration writes a different broken file, so every fingerprint is new.
    broken = [
        {"developer": {"write": {"calc.py": BROKEN_CALC + f"# attempt {i}\n"}}} for i in range(3)
    ]
    script = write_script(
        tmp_path / "s.yaml",
        [*broken, {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    inp = task_input(git_repo, script, _tid(), max_retries=1)
    handle = await start(temporal_client, inp, task_queue)
    status = await wait_for_phase(handle, "escalated")
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "budget_exhausted"
    assert status.retries == 2
    with pytest.raises(WorkflowUpdateFailedError):
        await answer(handle, Resolution("retry"))  # no guidance
    with pytest.raises(WorkflowUpdateFailedError):
        # An action the loop does not know is refused when the answer is decoded.
        await handle.execute_update(UPDATE_RESOLVE, {"action": "merge"})
    await answer(handle, Resolution("retry", "fix add"))
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    assert result.iterations == 4  # the retry count was reset by the human's answer
    resolutions = [e.message for e in result.status.log if e.kind == "resolution"]
    assert resolutions[0] == "retry by human: fix add"


async def test_a_pause_checkpoints_and_continues_in_a_fresh_run(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    pause = RiskSignalInput(reason="context_pressure", level="pause", signal_id="p1")
    inp = task_input(git_repo, script, _tid())
    from semspec.workflow.task.workflows import TaskWorkflow

    handle = await temporal_client.start_workflow(
        TaskWorkflow.run,
        signed(inp),
        id=task_workflow_id(inp.spec.task_id),
        task_queue=task_queue,
        start_signal="pause",
        start_signal_args=[signal_for(inp.spec.task_id, "pause", pause)],
    )
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    kinds = [e.kind for e in result.status.log]
    assert kinds.index("checkpoint") < kinds.index("resumed") < kinds.index("developer")
    with pytest.raises(RPCError, match="completed"):
        await handle.execute_update(UPDATE_RESOLVE, Resolution("approve"))


async def test_red_context_pressure_checkpoints_to_a_branch_that_is_cleaned_up_at_the_end(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    # In a 32K window 25K tokens in one developer step is red pressure (the scripted model's
    # registry window is 128K: the config sets the smaller one).
    (git_repo / ".semspec").mkdir(exist_ok=True)
    (git_repo / ".semspec" / "config.yaml").write_text(
        "models:\n  developer: {context_window: 32000}\n", encoding="utf-8"
    )
    script = write_script(
        tmp_path / "s.yaml",
        [
            {"developer": {"write": {"calc.py": BROKEN_CALC}, "tokens": 25_000}},
            {"developer": {"write": {"calc.py": GOOD_CALC}, "tokens": 1_000}, "reviewer": APPROVE},
        ],
    )
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    assert result.status.checkpoints == [f"semspec/checkpoint/{task_id}/1"]
    assert result.iterations == 2
    assert any(e.kind == "cleanup" for e in result.status.log)
    git = pygit2.Repository(str(git_repo))
    assert git.lookup_branch(f"semspec/checkpoint/{task_id}/1") is None
    described = await handle.describe()
    assert described.run_id != handle.first_execution_run_id  # continued as new


async def test_a_halt_before_commit_stops_changes_until_a_human_answers(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    halt = RiskSignalInput("conflicting_changes", "halt", "h1", "calc.py")
    await send(handle, SIGNAL_HALT, halt)
    await send(handle, SIGNAL_HALT, halt)
    status = await wait_for_phase(handle, "escalated")
    assert status.halted
    assert status.commit_id is None
    signals = [e.message for e in status.log if e.kind == "signal"]
    assert signals == ["halt: conflicting_changes calc.py"]  # the duplicate was ignored
    await answer(handle, Resolution("abort"))
    result: TaskResult = await handle.result()
    assert result.outcome == "aborted"
    git = pygit2.Repository(str(git_repo))
    assert git.lookup_branch(f"semspec/task/{task_id}") is not None
    assert _branch_commits(git_repo, task_id) == []


async def test_loop_events_and_the_escalation_signal_reach_jetstream(
    temporal_client: Client,
    task_queue: str,
    worker: EventPublisher,
    git_repo: Path,
    tmp_path: Path,
    nats_url: str,
) -> None:
    script = write_script(tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    task_id = _tid()
    handle = await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    await wait_for_phase(handle, "escalated")
    await answer(handle, Resolution("abort"))
    await handle.result()
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        kinds = await _kinds_for(js, "agent.monitor.*", task_id)
        signals = await _kinds_for(js, "user.signal.>", task_id)
    finally:
        await nc.close()
    for kind in ("iteration", "files", "gate", "escalation", "finished"):
        assert kind in kinds
    assert kinds.count("finished") == 1
    assert signals == ["escalate"]


async def _kinds_for(js: JetStreamContext, subject: str, task_id: str) -> list[str]:
    """The ``kind`` of each loop event (the ``level`` of each signal) for ``task_id``."""
    return [b.get("kind") or b.get("level") for b in await stream_messages(js, subject, task_id)]


async def test_a_task_with_too_many_files_is_split_into_subtasks_on_one_branch(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    names = [f"mod{i}.py" for i in range(6)]
    git = pygit2.Repository(str(git_repo))
    for name in names:
        (git_repo / name).write_text(f"VALUE = {name!r}\n")
    git.index.add_all()
    git.index.write()
    sig = pygit2.Signature("t", "t@example.invalid")
    parent = git.lookup_branch("main").peel(pygit2.Commit)
    git.create_commit("refs/heads/main", sig, sig, "six", git.index.write_tree(), [parent.id])
    script = write_script(
        tmp_path / "s.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    task_id = _tid()
    inp = task_input(git_repo, script, task_id)
    inp = replace(inp, spec=replace(inp.spec, task_files=names))
    handle = await start(temporal_client, inp, task_queue)
    result: TaskResult = await handle.result()
    assert result.outcome == "approved"
    assert [s.split(":")[0] for s in result.status.subtasks] == [
        f"{task_id}-part1",
        f"{task_id}-part2",
    ]
    budget = next(e for e in result.status.log if e.kind == "budget")
    assert budget.message.startswith("too large")
    # Both parts committed on the parent's branch.
    assert len(_branch_commits(git_repo, task_id)) == 1  # part 2 had nothing new to change
    assert result.commit_id is not None


async def test_a_file_too_large_for_the_model_is_refused_by_name(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    words = " ".join(f"word{i}" for i in range(20_000))
    (git_repo / "huge.py").write_text(f'TEXT = """{words}"""\n')
    git = pygit2.Repository(str(git_repo))
    git.index.add_all()
    git.index.write()
    sig = pygit2.Signature("t", "t@example.invalid")
    parent = git.lookup_branch("main").peel(pygit2.Commit)
    git.create_commit("refs/heads/main", sig, sig, "huge", git.index.write_tree(), [parent.id])
    script = write_script(tmp_path / "s.yaml", [{"developer": {}, "reviewer": APPROVE}])
    inp = task_input(git_repo, script, _tid())
    inp = replace(inp, spec=replace(inp.spec, task_files=["huge.py"]))
    result: TaskResult = await (await start(temporal_client, inp, task_queue)).result()
    assert result.outcome == "refused"
    assert result.reason is not None and "huge.py" in result.reason
    assert "tokens" in result.reason


async def test_an_approval_records_its_decision_and_learned_conventions_in_the_graph(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    review = {
        **APPROVE,
        "noted_patterns": [
            {"name": "small-functions", "description": "one job each", "applies_to": "*.py"}
        ],
    }
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": review}]
    )
    task_id = _tid()
    result: TaskResult = await (
        await start(temporal_client, task_input(git_repo, script, task_id), task_queue)
    ).result()
    assert result.outcome == "approved"
    from semspec.core.config.models import GraphConfig
    from semspec.graph.access import open_store
    from semspec.workflow.knowledge import conventions_for, decisions_for

    store = open_store(GraphConfig(), git_repo)
    try:
        decisions = decisions_for(store, task_id, None, [])
        conventions = conventions_for(store, ["calc.py"])
    finally:
        store.close()
    assert [d.title for d in decisions] == [f"test task {task_id}"]
    assert [c.name for c in conventions] == ["small-functions"]
    # Its scope is the glob the approved files share, and the approval is kept with them.
    (learned,) = conventions
    assert learned.applies_to == ("**/*.py",)
    assert [(a.review.split(" reviewed by ")[0], a.files) for a in learned.approvals] == [
        (f"task {task_id}", ("calc.py",))
    ]
    assert learned.approvals[0].recorded_at


async def test_need_more_info_gets_one_enrichment_and_a_second_reviewer_call(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    ask = {"verdict": "need_more_info", "needed_evidence": ["task_files"], "summary": "show me"}
    script = write_script(
        tmp_path / "s.yaml",
        [
            {
                "developer": {"write": {"calc.py": GOOD_CALC}},
                "reviewer": ask,
                "reviewer_followup": APPROVE,
            }
        ],
    )
    result: TaskResult = await (
        await start(temporal_client, task_input(git_repo, script, _tid()), task_queue)
    ).result()
    assert result.outcome == "approved"
    kinds = [e.kind for e in result.status.log]
    assert kinds.count("review") == 2
    assert kinds.index("enrichment") < len(kinds) - kinds[::-1].index("review") - 1


async def test_need_more_info_without_any_evidence_escalates_with_no_new_evidence(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    ask = {"verdict": "need_more_info", "needed_evidence": ["sop_chunks"], "summary": "which SOP?"}
    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": ask}]
    )
    handle = await start(temporal_client, task_input(git_repo, script, _tid()), task_queue)
    status = await wait_for_phase(handle, "escalated")
    assert status.pending_escalation is not None
    assert status.pending_escalation.reason == "no_new_evidence"
    assert "which SOP?" in status.pending_escalation.message
    await answer(handle, Resolution("abort"))
    await handle.result()


async def test_cancelling_a_task_while_a_gate_runs_ends_it_as_cancelled(
    temporal_client: Client, task_queue: str, worker: EventPublisher, git_repo: Path, tmp_path: Path
) -> None:
    from temporalio.client import WorkflowFailureError

    from semspec.workflow.gates.types import GateSpec

    script = write_script(
        tmp_path / "s.yaml", [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}]
    )
    slow = GateSpec("slow", "sleep 30", True, 60.0, ".")
    handle = await start(
        temporal_client, task_input(git_repo, script, _tid(), gates=[slow]), task_queue
    )
    await wait_for_phase(handle, "gates")
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    described = await handle.describe()
    assert described.status is not None
    assert described.status.name == "CANCELED"
