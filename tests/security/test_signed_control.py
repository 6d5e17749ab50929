"""Only the stack's owner steers its tasks, though the dev server lets anyone talk to Temporal.

Another local user (``nobody``, with a copy of the ``temporal`` CLI) reaches the embedded
Temporal on loopback and tries what worked before signatures (ADR 0004): approving an
escalation, halting or pausing a task, replaying an answer read from a history, and starting a
task of their own on our task queue. Each is refused by the workflow or the worker; the owner's
own CLI keeps working.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.converter import default as default_converter

from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.events import RiskSignalInput
from semspec.vocabulary.workflow_names import (
    SIGNAL_HALT,
    SIGNAL_PAUSE,
    TASK_WORKFLOW,
    UPDATE_RESOLVE,
    task_workflow_id,
)
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.task.messages import TASK_START, TaskInput, signed_start
from tests.security.conftest import ForeignUser
from tests.support.owner import signal_for
from tests.support.scenario_tasks import APPROVE, branch_commits, entries, new_id
from tests.support.stack import Stack, check_gate, running_stack, sample_config
from tests.support.tasks import task_input, write_script

BROKEN = {"developer": {"write": {"calc.py": "def add(a, b):\n    return a - b\n"}}}
BROKEN_AGAIN = {"developer": {"write": {"calc.py": "def add(a, b):\n    return b - a\n"}}}
FIXED = {
    "developer": {"write": {"calc.py": "def add(a, b):\n    return a + b\n\n# fixed\n"}},
    "reviewer": APPROVE,
}
TASK_QUEUE = "semspec"
"""The config's default task queue, which the stack's worker polls."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # No retries: the first failed gate escalates, so each test reaches a question quickly.
    config = sample_config([check_gate()], loop={"max_retries": 0})
    with running_stack(tmp_path_factory.mktemp("signed") / "stack", config) as running:
        yield running


def as_json(value: Any) -> str:
    """``value`` as Temporal's converter writes it (what the CLI's ``--input`` takes)."""
    return default_converter().payload_converter.to_payloads([value])[0].data.decode()


def attacker_update(user: ForeignUser, stack: Stack, task_id: str, answer: str) -> str:
    """Send ``resolve_escalation`` as the other user; what the CLI printed (it must fail)."""
    done = user.temporal(
        "workflow", "update", "execute", "--address", stack.temporal_address(),
        "-w", task_workflow_id(task_id), "--name", UPDATE_RESOLVE, "--input", answer,
    )  # fmt: skip
    assert done.returncode != 0, f"the update was accepted: {done.stdout}"
    return done.stdout + done.stderr


def attacker_signal(user: ForeignUser, stack: Stack, task_id: str, kind: str, arg: str) -> None:
    """Send risk signal ``kind`` as the other user (Temporal itself accepts any signal)."""
    done = user.temporal(
        "workflow", "signal", "--address", stack.temporal_address(),
        "-w", task_workflow_id(task_id), "--name", kind, "--input", arg,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def escalated(stack: Stack, iterations: list[dict[str, Any]], repo: Path | None = None) -> str:
    """Submit (as the owner) a task whose first gate run fails; its id once it waits."""
    task_id = new_id("signed")
    submitted = stack.submit_scripted(task_id, iterations, repo=repo)
    assert submitted.returncode == 0, submitted.stderr
    stack.wait_status(task_id, lambda s: s["pending_escalation"] is not None, repo=repo)
    return task_id


def test_an_unsigned_approve_from_another_user_is_refused_and_commits_nothing(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    task_id = escalated(stack, [BROKEN])
    unsigned = json.dumps({"action": "approve", "resolved_by": "mallory"})
    assert "unsigned answer" in attacker_update(foreign_user, stack, task_id, unsigned)
    forged = json.dumps({"action": "approve", "signature": "AAAA" * 22})
    assert "wrongly signed answer" in attacker_update(foreign_user, stack, task_id, forged)

    status = stack.status(task_id)
    assert status["phase"] == "escalated" and status["pending_escalation"] is not None
    assert status["commit_id"] is None and status["refused"] == 2
    assert branch_commits(stack.repo, task_id) == []
    # The owner's CLI still answers.
    aborted = stack.cli("escalations", "resolve", task_id, "--action", "abort")
    assert aborted.returncode == 0, aborted.stderr


def test_forged_or_copied_halt_and_pause_signals_leave_the_task_running(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    # A sibling repository on the same stack (sharing its key) with a gate slow enough to
    # signal the task while it runs.
    repo = stack.sibling_repo(
        "slow", sample_config([check_gate(before="import time; time.sleep(5)")])
    )
    task_id = new_id("signals")
    submitted = stack.submit_scripted(task_id, [FIXED], repo=repo)
    assert submitted.returncode == 0, submitted.stderr
    stack.wait_status(task_id, lambda s: s["phase"] == "gates", repo=repo)

    halt = RiskSignalInput(reason="conflicting_changes", level="halt", signal_id="forged-1")
    attacker_signal(foreign_user, stack, task_id, SIGNAL_HALT, as_json(halt))
    pause = RiskSignalInput(reason="context_pressure", level="pause", signal_id="forged-2")
    attacker_signal(foreign_user, stack, task_id, SIGNAL_PAUSE, as_json(pause))
    # A real signature, but one the monitor made for another task.
    copied = signal_for(
        "another-task", SIGNAL_HALT, replace(halt, signal_id="forged-3"), stack.owner()
    )
    attacker_signal(foreign_user, stack, task_id, SIGNAL_HALT, as_json(copied))

    final = stack.wait_status(task_id, lambda s: bool(s["outcome"]), 120, repo=repo)
    assert final["outcome"] == "approved" and final["commit_id"]
    assert final["refused"] == 3 and not final["checkpoints"]
    assert entries(final, "signal") == [] and entries(final, "escalation") == []
    assert entries(final, "refused") == [
        "unsigned halt signal forged-1 dropped",
        "unsigned pause signal forged-2 dropped",
        "wrongly signed halt signal forged-3 dropped",
    ]


async def accepted_answers(address: str, task_id: str) -> list[str]:
    """The answers a task's history recorded, as JSON: what anyone who can read it sees."""
    client = await Client.connect(address)
    handle = client.get_workflow_handle(task_workflow_id(task_id))
    answers = []
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            request = event.workflow_execution_update_accepted_event_attributes.accepted_request
            answers.append(request.input.args.payloads[0].data.decode())
    return answers


def test_an_answer_copied_from_an_earlier_escalation_does_not_answer_a_later_one(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    task_id = escalated(stack, [BROKEN, BROKEN_AGAIN])
    first = stack.status(task_id)["pending_escalation"]["escalation_id"]
    answered = stack.cli(
        "escalations", "resolve", task_id, "--action", "retry", "--guidance", "try again"
    )
    assert answered.returncode == 0, answered.stderr
    status = stack.wait_status(
        task_id,
        lambda s: (s["pending_escalation"] or {}).get("escalation_id", first) != first,
    )
    second = status["pending_escalation"]["escalation_id"]

    [copied] = asyncio.run(accepted_answers(stack.temporal_address(), task_id))
    assert json.loads(copied)["signature"]
    assert "wrongly signed answer" in attacker_update(foreign_user, stack, task_id, copied)
    after = stack.status(task_id)
    assert after["pending_escalation"]["escalation_id"] == second and after["refused"] == 1
    aborted = stack.cli("escalations", "resolve", task_id, "--action", "abort")
    assert aborted.returncode == 0, aborted.stderr


async def failure_of(address: str, task_id: str) -> str:
    """Why the task's workflow failed (bounded wait)."""
    client = await Client.connect(address)
    handle = client.get_workflow_handle(task_workflow_id(task_id))
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), 60)
    return str(failed.value.cause)


@pytest.mark.parametrize("signed_by", ["attacker", "nobody"])
def test_a_task_another_user_starts_on_our_queue_never_runs_its_gate(
    stack: Stack, foreign_user: ForeignUser, shared_tmp: Path, signed_by: str
) -> None:
    task_id = new_id("foreign")
    marker = shared_tmp / "gate-ran"
    gate = GateSpec("pwn", f"touch {shlex.quote(str(marker))} pwned", True, 60.0, ".")
    script = write_script(stack.root / "scripts" / f"{task_id}.yaml", [FIXED])
    inp: TaskInput = task_input(stack.repo, script, task_id, [gate], run_dir=stack.run_dir)
    if signed_by == "attacker":
        # Signed, but with the attacker's own key: the workflow's check passes, the worker's not.
        inp = signed_start(OwnerKey.generate(), TASK_START, task_workflow_id(task_id), inp)
    else:
        inp = replace(inp, owner_key=stack.owner().public_key)  # the owner's key, no signature
    done = foreign_user.temporal(
        "workflow", "start", "--address", stack.temporal_address(), "--type", TASK_WORKFLOW,
        "--task-queue", TASK_QUEUE, "-w", task_workflow_id(task_id), "--input", as_json(inp),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    why = asyncio.run(failure_of(stack.temporal_address(), task_id))
    if signed_by == "attacker":
        assert "was not started by this stack's owner" in why
    else:
        assert "start signature is missing" in why
    assert not marker.exists()
    assert branch_commits(stack.repo, task_id) == []
    assert not (stack.run_dir / "worktrees" / task_id).exists()
