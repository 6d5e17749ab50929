"""Another local user cannot make the owner's worker run anything, as a child or directly.

``nobody`` runs a Temporal worker of its own (the ``temporalio`` SDK copied where it may read
it, under the system Python) on a task queue of its own. Its workflow then

- starts the owner's ``TaskWorkflow`` as its child on the owner's task queue, with a gate of
  its own that writes a marker file (issue 25: before, a child skipped the start signature and
  the worker checked only the key's name, so the owner's worker ran the gate as root), and
- calls the owner's activities (gates, workspace, developer, commit) on the owner's task queue
  directly, from its own workflow, so that no workflow check of ours runs at all.

The worker refuses each: no gate runs, no branch or worktree appears, and the refusal is in the
worker's log (ADR 0004, ``signing.start_guard``, ``signing.child_signer``).
"""

from __future__ import annotations

import json
import shlex
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pygit2
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from semspec.core.owner_key import OwnerKey
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.plan.messages import PlanInput, PlanTask
from semspec.workflow.signing.child_signer import derivation_problem
from semspec.workflow.task.messages import (
    TASK_START,
    CommitInput,
    DeveloperInput,
    EventContext,
    GatesInput,
    OwnerCheckInput,
    RoleSpec,
    TaskInput,
    Workspace,
    WorkspaceInput,
    signed_start,
    start_fields,
)
from semspec.workflow.task.owner_check import OwnerCheck
from tests.security.conftest import SYSTEM_PYTHON, ForeignUser, world_readable_dir
from tests.security.test_signed_control import TASK_QUEUE, as_json
from tests.support.repos import make_repo
from tests.support.scenario_tasks import APPROVE, branch_commits, new_id
from tests.support.stack import Stack, check_gate, running_stack, sample_config, write_script
from tests.support.tasks import task_input

FIXED = {
    "developer": {"write": {"calc.py": "def add(a, b):\n    return a + b\n\n# fixed\n"}},
    "reviewer": APPROVE,
}
SDK_PACKAGES = ("temporalio", "nexusrpc", "typing_extensions.py", "google/protobuf")
"""What the attacker's copy of the Temporal SDK needs (its own dependencies, nothing of ours)."""

ATTACKER_WORKER = r"""
import asyncio, json, os, sys, uuid
from datetime import timedelta
sys.path.insert(0, sys.argv[1])
from temporalio import workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

address, owner_queue, mode, target, payload = sys.argv[2:7]


@workflow.defn(name="Innocent")
class Innocent:
    @workflow.run
    async def run(self, args: list) -> str:
        mode, target, owner_queue, arg = args
        try:
            if mode == "child":
                result = await workflow.execute_child_workflow(
                    "TaskWorkflow", arg, id=target, task_queue=owner_queue,
                    execution_timeout=timedelta(seconds=90),
                )
            else:
                result = await workflow.execute_activity(
                    target, arg, task_queue=owner_queue,
                    start_to_close_timeout=timedelta(seconds=60),
                    retry_policy=RetryPolicy(maximum_attempts=1),
                )
        except Exception as exc:
            cause = exc
            while cause.__cause__ is not None:
                cause = cause.__cause__
            return "refused: " + str(cause)
        return "ran: " + json.dumps(result, default=str)[:2000]


async def main() -> None:
    client = await Client.connect(address)
    queue = "nobody-" + uuid.uuid4().hex
    async with Worker(client, task_queue=queue, workflows=[Innocent],
                      workflow_runner=UnsandboxedWorkflowRunner()):
        print(await client.execute_workflow(
            Innocent.run, [mode, target, owner_queue, json.loads(payload)],
            id="innocent-" + uuid.uuid4().hex, task_queue=queue,
            execution_timeout=timedelta(seconds=120),
        ))


asyncio.run(main())
# The answer is printed: leave without finalizing the interpreter, which can abort (exit 134,
# PyGILState_Release) while the SDK's core thread is still winding down.
sys.stdout.flush()
os._exit(0)
"""


@dataclass(frozen=True)
class Attacker:
    """``nobody`` with its own copy of the Temporal SDK and a worker script."""

    user: ForeignUser
    sdk: Path
    script: Path

    def run(self, stack: Stack, mode: str, target: str, payload: str) -> str:
        """Run ``nobody``'s worker and workflow; what its workflow returned."""
        done = self.user.run(
            [SYSTEM_PYTHON, "-I", str(self.script), str(self.sdk),
             stack.temporal_address(), TASK_QUEUE, mode, target, payload],
            timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def attacker(foreign_user: ForeignUser) -> Iterator[Attacker]:
    """The SDK copied from our environment into a folder ``nobody`` may read: ``nobody``
    never gets our virtual environment itself, whose interpreter it cannot run."""
    import temporalio

    site = Path(temporalio.__file__).parent.parent
    sdk = world_readable_dir("semspec-attacker-sdk-")
    try:
        for name in SDK_PACKAGES:
            source, into = site / name, sdk / name
            into.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, into, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, into)
        for path in [sdk, *sdk.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        script = foreign_user.home / "innocent.py"
        script.write_text(ATTACKER_WORKER)
        script.chmod(0o644)
        yield Attacker(foreign_user, sdk, script)
    finally:
        shutil.rmtree(sdk, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("childattack") / "stack"
    with running_stack(root, sample_config([check_gate()])) as running:
        yield running


def marker_gate(marker: Path) -> GateSpec:
    """A gate that leaves ``marker`` behind (and its user's name) when it runs."""
    command = f"sh -c 'id -un > {shlex.quote(str(marker))}'"
    return GateSpec("pwn", command, True, 60.0, ".")


def worker_log(stack: Stack) -> str:
    """What the stack's worker logged so far."""
    return Path(stack.records()["worker"].log).read_text(errors="replace")


def attack_input(stack: Stack, task_id: str, marker: Path) -> TaskInput:
    script = write_script(stack.root / "scripts" / f"{task_id}.yaml", [FIXED])
    return task_input(stack.repo, script, task_id, [marker_gate(marker)], run_dir=stack.run_dir)


def nothing_happened(stack: Stack, task_id: str, marker: Path) -> None:
    assert not marker.exists(), f"the gate ran as {marker.read_text().strip()}"
    assert pygit2.Repository(str(stack.repo)).lookup_branch(f"semspec/task/{task_id}") is None
    assert branch_commits(stack.repo, task_id) == []
    assert not (stack.run_dir / "worktrees" / task_id).exists()


@pytest.mark.parametrize("signature", ["none", "copied"])
def test_the_owners_task_started_as_a_child_of_another_users_workflow_runs_no_gate(
    stack: Stack, attacker: Attacker, shared_tmp: Path, signature: str
) -> None:
    task_id = new_id("child")
    marker = shared_tmp / "child-gate-ran"
    inp = attack_input(stack, task_id, marker)
    if signature == "none":
        # The owner's key, read from any history; no signature.
        inp = replace(inp, owner_key=stack.owner().public_key)
    else:
        # A real signature the owner made for this id (as a history shows it), over a task
        # with the owner's own gates; the attacker puts its gate in.
        owners = task_input(stack.repo, Path(inp.spec.developer.script or ""), task_id)
        signed = signed_start(stack.owner(), TASK_START, task_workflow_id(task_id), owners)
        inp = replace(inp, owner_key=signed.owner_key, start_signature=signed.start_signature)
    before = worker_log(stack).count("refused")

    outcome = attacker.run(stack, "child", task_workflow_id(task_id), as_json(inp))

    assert outcome.startswith("refused: "), outcome
    assert "start signature is" in outcome, outcome
    nothing_happened(stack, task_id, marker)
    assert worker_log(stack).count("refused") > before


def attacker_worktree(
    stack: Stack, shared_tmp: Path, task_id: str
) -> tuple[Workspace, EventContext]:
    """A worktree-like repository the attacker owns (with a change), and event ids."""
    path = shared_tmp / f"work-{uuid.uuid4().hex[:6]}"
    branch = f"semspec/task/{task_id}"
    repo = make_repo(path, {"calc.py": "x = 1\n"}, branch=branch)
    (path / "calc.py").write_text("x = 2\n")
    base = str(repo.head.target)
    ws = Workspace(str(path), branch, base)
    events = EventContext(task_id, None, f"innocent-{task_id}", "run", 1)
    return ws, events


def direct_call(stack: Stack, shared_tmp: Path, activity: str, task_id: str, marker: Path) -> Any:
    """The argument of ``activity`` as the attacker sends it."""
    inp = attack_input(stack, task_id, marker)
    ws, events = attacker_worktree(stack, shared_tmp, task_id)
    if activity == "task.run_gates":
        return GatesInput(ws, list(inp.gates), events, repo_path=str(stack.repo))
    if activity == "task.prepare_workspace":
        return WorkspaceInput(task_id, str(stack.repo), "main", str(stack.run_dir))
    if activity == "task.develop":
        return DeveloperInput(inp.spec, ws, events)
    assert activity == "task.commit"
    return CommitInput(inp.spec, ws, events, "mallory", "mallory", f"{task_id}/commit")


@pytest.mark.parametrize(
    "activity", ["task.run_gates", "task.prepare_workspace", "task.develop", "task.commit"]
)
def test_the_owners_activities_called_from_another_users_workflow_are_refused(
    stack: Stack, attacker: Attacker, shared_tmp: Path, activity: str
) -> None:
    task_id = new_id("direct")
    marker = shared_tmp / "direct-gate-ran"
    arg = direct_call(stack, shared_tmp, activity, task_id, marker)
    before = worker_log(stack).count("activity refused")

    outcome = attacker.run(stack, "activity", activity, as_json(arg))

    assert outcome.startswith("refused: "), outcome
    assert "was not started by this stack's owner" in outcome, outcome
    nothing_happened(stack, task_id, marker)
    if isinstance(arg, (DeveloperInput, CommitInput)):
        # Neither the agent's write nor a commit reached the attacker's worktree.
        git = pygit2.Repository(arg.workspace.path)
        assert str(git.head.target) == arg.workspace.base_commit
        assert (Path(arg.workspace.path) / "calc.py").read_text() == "x = 2\n"
    log = worker_log(stack)
    assert log.count("activity refused") > before
    refusal = [json.loads(line) for line in log.splitlines() if "activity refused" in line][-1]
    assert refusal["activity"] == activity and refusal["refused"] >= 1


async def test_check_owner_refuses_the_owners_key_name_without_its_signature(
    tmp_path: Path,
) -> None:
    owner = OwnerKey.generate()
    inp = task_input(tmp_path, tmp_path / "script.yaml", "named")
    wid = task_workflow_id("named")
    signed = signed_start(owner, TASK_START, wid, inp)
    check = OwnerCheck(owner.public_key).check_owner
    start = start_fields(wid, signed)
    # The real start passes; the key's name with a signature over other input does not.
    await ActivityEnvironment().run(
        check, OwnerCheckInput("named", owner.public_key, TASK_START, start, signed.start_signature)
    )
    other = signed_start(owner, TASK_START, wid, replace(inp, gates=[marker_gate(tmp_path / "m")]))
    for signature in ("", other.start_signature):
        with pytest.raises(ApplicationError, match="not started by this stack's owner"):
            await ActivityEnvironment().run(
                check, OwnerCheckInput("named", owner.public_key, TASK_START, start, signature)
            )


def test_the_worker_signs_only_children_that_keep_their_signed_parents_gates_and_agents(
    tmp_path: Path,
) -> None:
    parent = task_input(tmp_path, tmp_path / "script.yaml", "big")
    parent = replace(parent, spec=replace(parent.spec, task_files=["a.py", "b.py"]))
    wid = task_workflow_id("big")
    part = replace(parent, spec=replace(parent.spec, task_id="big-part1", task_files=["a.py"]))
    assert derivation_problem(part, task_workflow_id("big-part1"), parent, wid) is None
    assert derivation_problem(parent, wid, parent, wid) is None  # its own continued run
    gate = replace(part, gates=[marker_gate(tmp_path / "m")])
    assert "gates" in str(derivation_problem(gate, task_workflow_id("big-part1"), parent, wid))
    agent = replace(part, spec=replace(part.spec, developer=RoleSpec("command", "sh")))
    assert "developer" in str(derivation_problem(agent, task_workflow_id("big-part1"), parent, wid))
    stranger = replace(part, spec=replace(part.spec, task_id="other"))
    assert derivation_problem(stranger, task_workflow_id("other"), parent, wid) is not None
    plan = PlanInput("p", "plan", [PlanTask(parent)])
    assert derivation_problem(parent, wid, plan, "plan-p") is None
    assert derivation_problem(gate, task_workflow_id("big-part1"), plan, "plan-p") is not None
