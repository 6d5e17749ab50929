"""Tell the demo's story end to end: stack, sample repository, task 1, task 2 and its escalation."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from temporalio.client import Client

from semspec.cli.task_render import render_entry
from semspec.config import load_config
from semspec.config.models import SemspecConfig
from semspec.demo.follow import TaskFollower
from semspec.demo.sample import SampleRepo, create_sample_repo
from semspec.demo.stack import start_stack
from semspec.demo.story import MUL_GUIDANCE, MUL_TASK, SUB_TASK, DemoTask
from semspec.demo.summary import DemoSummary, EscalationRecord, TaskRecord
from semspec.errors import ServiceError
from semspec.services.connect import Endpoints, temporal_client
from semspec.task_client import resolve, submit
from semspec.task_spec import TaskDraft, build_task_input
from workflow.task.shared import Resolution, TaskStatus

CONNECT_TIMEOUT_S = 10.0
RESOLVED_BY = "human (semspec demo --yes)"


@dataclass(frozen=True)
class DemoOptions:
    """How the demo runs: answer the escalation itself, keep the sample, bound each wait."""

    yes: bool = False
    keep: bool = False
    timeout_s: float = 300.0


def resolve_command(sample: Path, task_id: str, guidance: str) -> str:
    """The ``semspec escalations resolve`` command line a human would run for the demo."""
    return (
        f"semspec --repo {shlex.quote(str(sample))} escalations resolve {task_id} "
        f"--action retry --guidance {shlex.quote(guidance)}"
    )


def run_demo(config: SemspecConfig, repo: Path, options: DemoOptions, out: Console) -> DemoSummary:
    """Start the stack of ``repo``, build the sample repository, run both tasks and summarize.

    The sample is removed at the end unless ``options.keep`` is set, the demo left an
    escalation waiting, or something did not go as scripted (then it is kept for inspection).
    """
    out.print(f"starting the embedded stack of {repo} (as `semspec up`)", markup=False)
    statuses, endpoints = start_stack(config, repo, lambda msg: out.print(f"  {msg}", markup=False))
    if endpoints.ui_url:
        out.print(f"Temporal Web UI: {endpoints.ui_url}", markup=False)
    workdir = Path(tempfile.mkdtemp(prefix="semspec-demo-"))
    sample = create_sample_repo(workdir / "calc", endpoints, config)
    out.print(
        f"sample repository: {sample.path} (main at {sample.base_commit[:10]}; "
        "gate `test` runs pytest; scripted developer and reviewer)",
        markup=False,
    )
    try:
        tasks, command = asyncio.run(_run_tasks(endpoints, config, sample, options, out))
    except BaseException:
        out.print(f"sample repository kept for inspection: {sample.path}", markup=False)
        raise
    ok = _as_expected(tasks, options.yes)
    # An escalation left for the user needs the sample; an unexpected ending is worth a look.
    kept = options.keep or command is not None or not ok
    if kept:
        out.print(f"sample repository kept: {sample.path}", markup=False)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    out.print(
        f"services keep running; stop them with `semspec --repo {shlex.quote(str(repo))} down`",
        markup=False,
    )
    return DemoSummary(
        ok=ok,
        sample_repo=str(sample.path),
        kept=kept,
        temporal_address=endpoints.temporal_address,
        namespace=endpoints.namespace,
        task_queue=endpoints.task_queue,
        ui_url=endpoints.ui_url,
        services=[asdict(s) for s in statuses],
        tasks=tasks,
        resolve_command=command,
    )


def _as_expected(tasks: list[TaskRecord], yes: bool) -> bool:
    """Task 1 approved with a commit; task 2 escalated with no_new_evidence, then approved
    (with ``--yes``) or still waiting for the human."""
    if len(tasks) != 2:
        return False
    first, second = tasks
    escalated = [e.reason for e in second.escalations] == ["no_new_evidence"]
    if yes:
        second_ok = second.state == "approved" and second.commit_id is not None
    else:
        second_ok = second.state == "escalated"
    return first.state == "approved" and first.commit_id is not None and escalated and second_ok


async def _run_tasks(
    endpoints: Endpoints,
    config: SemspecConfig,
    sample: SampleRepo,
    options: DemoOptions,
    out: Console,
) -> tuple[list[TaskRecord], str | None]:
    try:
        client = await asyncio.wait_for(
            temporal_client(config, endpoints.temporal_address), CONNECT_TIMEOUT_S
        )
    except Exception as exc:
        raise ServiceError(
            f"cannot connect ({type(exc).__name__})",
            service="temporal",
            address=endpoints.temporal_address,
            hint="check the services with `semspec status`",
        ) from None
    story = _Story(client, endpoints, sample, options, out)
    first = await story.run_sub_task()
    if first.state != "approved":
        return [first], None
    second, command = await story.run_mul_task()
    return [first, second], command


@dataclass
class _Story:
    """The two tasks, narrated on ``out`` as they run."""

    client: Client
    endpoints: Endpoints
    sample: SampleRepo
    options: DemoOptions
    out: Console

    def say(self, text: str) -> None:
        self.out.print(text, markup=False)

    async def run_sub_task(self) -> TaskRecord:
        """Task 1: fails the gate, is fixed, gets request_changes, is fixed and approved."""
        record, follower = await self._submit(1, SUB_TASK)
        status = await follower.until_settled(self.options.timeout_s)
        self._settled(record, status)
        return record

    async def run_mul_task(self) -> tuple[TaskRecord, str | None]:
        """Task 2: the same broken change twice escalates; a human's retry gets it approved."""
        record, follower = await self._submit(2, MUL_TASK)
        status = await follower.until_settled(self.options.timeout_s)
        self._settled(record, status)
        pending = status.pending_escalation
        if pending is None:
            return record, None
        command = resolve_command(self.sample.path, record.task_id, MUL_GUIDANCE)
        if not self.options.yes:
            self.say("the task now waits for a human; answer it with:")
            self.say(f"  {command}")
            return record, command
        self.say("answering as a human would (--yes):")
        self.say(f"  {command}")
        ack = await resolve(
            self.client,
            record.task_id,
            Resolution("retry", MUL_GUIDANCE, resolved_by=RESOLVED_BY),
        )
        record.escalations[-1].resolution = ack.action
        follower.mark_answered(pending)
        status = await follower.until_settled(self.options.timeout_s)
        self._settled(record, status)
        return record, None

    async def _submit(self, number: int, task: DemoTask) -> tuple[TaskRecord, TaskFollower]:
        draft = TaskDraft(
            title=task.title,
            files=list(task.files),
            criteria=list(task.criteria),
            script=str(self.sample.scripts[task.key]),
        )
        inp = build_task_input(draft, load_config(self.sample.path), self.sample.path)
        await submit(self.client, self.endpoints.task_queue, inp)
        task_id = inp.spec.task_id
        record = TaskRecord(task.key, task_id, task.title, "starting")
        self.say(f"\ntask {number} {task_id}: {task.title}")
        for criterion in task.criteria:
            self.say(f"  criterion: {criterion}")
        if self.endpoints.ui_url:
            record.workflow_url = (
                f"{self.endpoints.ui_url}/namespaces/{self.endpoints.namespace}"
                f"/workflows/task-{task_id}"
            )
            self.say(f"  {record.workflow_url}")
        follower = TaskFollower(
            self.client,
            task_id,
            on_entry=lambda entry: render_entry(self.out, entry),
            on_phase=lambda phase: self.say(f"  phase: {phase}"),
        )
        return record, follower

    def _settled(self, record: TaskRecord, status: TaskStatus) -> None:
        """Record the task's state and say how it stands."""
        record.update_from(status)
        esc = status.pending_escalation
        if esc is not None:
            record.escalations.append(EscalationRecord.of(esc))
            self.say(f"  ESCALATED ({esc.reason}): {esc.message}")
            self.say(f"  escalation {esc.escalation_id}, fingerprint {esc.fingerprint or '-'}")
            return
        if status.commit_id:
            self.say(
                f"task {record.task_id}: {record.state}, "
                f"commit {status.commit_id} on {status.branch}"
            )
        else:
            self.say(f"task {record.task_id}: {record.state} {status.reason or ''}".rstrip())
