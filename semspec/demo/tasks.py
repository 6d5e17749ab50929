"""Submit the demo's tasks, follow each as it runs, and narrate it (log lines and step callouts)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from temporalio.client import Client

from semspec.client.task_client import resolve, submit
from semspec.client.task_render import render_entry
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.core.owner_key import OwnerKey
from semspec.demo.follow import TaskFollower
from semspec.demo.narrate import callouts, task_heading
from semspec.demo.sample import SampleRepo
from semspec.demo.story import MUL_GUIDANCE, DemoTask
from semspec.demo.summary import EscalationRecord, TaskRecord
from semspec.services.connect import Endpoints
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import LogEntry, Resolution, TaskInput, TaskStatus

RESOLVED_BY = "human (semspec demo --yes)"


def resolve_command(stack_repo: Path, task_id: str, guidance: str) -> str:
    """The ``semspec escalations resolve`` command line a human would run for the demo.

    It names the stack's repository, not the sample: the answer only needs the Temporal
    server, and the stack's repository outlives the sample (which ``--yes`` removes).
    """
    return (
        f"semspec --repo {shlex.quote(str(stack_repo))} escalations resolve {task_id} "
        f"--action retry --guidance {shlex.quote(guidance)}"
    )


def task_input(sample: SampleRepo, task: DemoTask) -> TaskInput:
    """The workflow input of ``task``, validated against the sample as ``task submit`` does."""
    draft = TaskDraft(
        title=task.title,
        files=list(task.files),
        criteria=list(task.criteria),
        script=str(sample.scripts[task.key]),
    )
    return build_task_input(draft, load_config(sample.path), sample.path)


@dataclass
class TaskRunner:
    """Runs the demo's tasks one at a time on ``client``, narrated on ``out``."""

    client: Client
    endpoints: Endpoints
    stack_repo: Path
    owner: OwnerKey
    """The stack's owner key: it signs the demo's tasks and its answer (``--yes``)."""
    yes: bool
    timeout_s: float
    out: Console

    def say(self, text: str) -> None:
        self.out.print(text, markup=False)

    async def run_task(self, number: int, task: DemoTask, inp: TaskInput) -> TaskRecord:
        """Submit ``inp`` and follow it until it ends or waits on a human."""
        record, follower = await self._submit(number, task, inp)
        status = await follower.until_settled(self.timeout_s)
        self._settled(record, status)
        return record

    async def run_escalating_task(
        self, number: int, task: DemoTask, inp: TaskInput
    ) -> tuple[TaskRecord, str | None]:
        """Like ``run_task``; an escalation is answered with a retry (``--yes``) or left for
        the user, whose command is returned."""
        record, follower = await self._submit(number, task, inp)
        status = await follower.until_settled(self.timeout_s)
        self._settled(record, status)
        pending = status.pending_escalation
        if pending is None:
            return record, None
        command = resolve_command(self.stack_repo, record.task_id, MUL_GUIDANCE)
        if not self.yes:
            self.say("the task now waits for a human; answer it with:")
            self.say(f"  {command}")
            return record, command
        self.say("answering as a human would (--yes), as this command does:")
        self.say(f"  {command}")
        ack = await resolve(
            self.client,
            record.task_id,
            Resolution("retry", MUL_GUIDANCE, resolved_by=RESOLVED_BY),
            self.owner,
        )
        record.escalations[-1].resolution = ack.action
        follower.mark_answered(pending)
        status = await follower.until_settled(self.timeout_s)
        self._settled(record, status)
        return record, None

    async def _submit(
        self, number: int, task: DemoTask, inp: TaskInput
    ) -> tuple[TaskRecord, TaskFollower]:
        await submit(self.client, self.endpoints.task_queue, inp, self.owner)
        task_id = inp.spec.task_id
        record = TaskRecord(task.key, task_id, task.title, "starting")
        self.say(task_heading(number, task_id, task.title, task.shows))
        for criterion in task.criteria:
            self.say(f"  criterion: {criterion}")
        if self.endpoints.ui_url:
            record.workflow_url = (
                f"{self.endpoints.ui_url}/namespaces/{self.endpoints.namespace}"
                f"/workflows/{task_workflow_id(task_id)}"
            )
            self.say(f"  {record.workflow_url}")

        def on_status(status: TaskStatus) -> None:
            record.update_from(status)
            record.note_citations(status)

        def on_entry(entry: LogEntry) -> None:
            render_entry(self.out, entry)
            for line in callouts(entry, record):
                self.say(line)

        follower = TaskFollower(
            self.client,
            task_id,
            on_entry=on_entry,
            on_phase=lambda phase: self.say(f"  phase: {phase}"),
            on_status=on_status,
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
