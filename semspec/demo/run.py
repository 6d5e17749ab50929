"""Tell the demo's story end to end: stack, sample repository, SOP sync, task 1 and task 2.

The sample is kept when the demo printed commands into it or left work in it: without
``--yes`` (task 2 waits for the user), with ``--keep``, or when something did not go as
scripted. With ``--yes`` alone it is removed, and every command printed before names the
stack's repository instead, which stays.
"""

from __future__ import annotations

import asyncio
import shlex
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console

from semspec.core.config.models import SemspecConfig
from semspec.core.owner_key import load_owner_key
from semspec.demo.knowledge import KnowledgeRecord, knowledge_step
from semspec.demo.narrate import knowledge_lines, recap_lines
from semspec.demo.sample import SampleRepo, create_sample_repo
from semspec.demo.sample_sops import SOPS_DIR
from semspec.demo.stack import start_stack
from semspec.demo.steps import judge_steps
from semspec.demo.story import MUL_TASK, SUB_TASK
from semspec.demo.summary import DemoSummary, TaskRecord
from semspec.demo.tasks import TaskRunner, task_input
from semspec.services.connect import Endpoints, temporal_client
from semspec.services.supervisor import ServiceStatus


@dataclass(frozen=True)
class DemoOptions:
    """How the demo runs: answer the escalation itself, keep the sample, bound each wait."""

    yes: bool = False
    keep: bool = False
    timeout_s: float = 300.0


def run_demo(config: SemspecConfig, repo: Path, options: DemoOptions, out: Console) -> DemoSummary:
    """Start the stack of ``repo``, build the sample repository, sync its SOPs, run both
    tasks, and judge which of the demo's steps the run showed."""
    out.print(f"starting the embedded stack of {repo} (as `semspec up`)", markup=False)
    statuses, endpoints = start_stack(config, repo, lambda msg: out.print(f"  {msg}", markup=False))
    if endpoints.ui_url:
        out.print(f"Temporal Web UI: {endpoints.ui_url}", markup=False)
    console = console_address(config, repo, statuses)
    if console:
        out.print(f"semspec console: {console}", markup=False)
    workdir = Path(tempfile.mkdtemp(prefix="semspec-demo-"))
    sample = create_sample_repo(workdir / "calc", endpoints, config)
    out.print(
        f"sample repository: {sample.path} (main at {sample.base_commit[:10]}; "
        "gate `test` runs pytest; scripted developer and reviewer)",
        markup=False,
    )
    try:
        knowledge, tasks, command = asyncio.run(
            _run_story(endpoints, config, repo, sample, options, out)
        )
    except BaseException:
        out.print(f"sample repository kept for inspection: {sample.path}", markup=False)
        raise
    steps = judge_steps(knowledge, tasks, options.yes)
    for line in recap_lines(steps):
        out.print(line, markup=False)
    ok = _as_expected(tasks, options.yes) and all(s.shown for s in steps)
    # An escalation left for the user needs the sample; an unexpected ending is worth a look.
    kept = options.keep or command is not None or not ok
    if kept:
        _print_kept(out, sample.path, tasks)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        out.print("sample repository removed (pass --keep to keep it)", markup=False)
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
        knowledge=knowledge,
        steps=steps,
        resolve_command=command,
        console_url=console,
    )


def console_address(config: SemspecConfig, repo: Path, statuses: list[ServiceStatus]) -> str | None:
    """The URL (with the stack's secret) of the console ``up`` started, if it did."""
    from semspec.console.auth import login_url
    from semspec.core.run_folder import run_dir_of

    console = next((s for s in statuses if s.name == "console" and s.pid), None)
    return login_url(console.address, run_dir_of(config, repo)) if console else None


def _print_kept(out: Console, sample: Path, tasks: list[TaskRecord]) -> None:
    """Where the sample stays, and commands to look around in it."""
    at = shlex.quote(str(sample))
    out.print(f"sample repository kept: {sample}; look around with:", markup=False)
    out.print(f"  semspec --repo {at} sources list", markup=False)
    for task in tasks:
        out.print(f"  semspec --repo {at} task logs {task.task_id}", markup=False)


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


async def _run_story(
    endpoints: Endpoints,
    config: SemspecConfig,
    repo: Path,
    sample: SampleRepo,
    options: DemoOptions,
    out: Console,
) -> tuple[KnowledgeRecord, list[TaskRecord], str | None]:
    client = await temporal_client(config, endpoints.temporal_address)
    first_input = task_input(sample, SUB_TASK)
    # Graph and git work blocks: off the event loop (the follower's polls share it later).
    knowledge = await asyncio.to_thread(knowledge_step, sample.path, first_input.spec)
    for line in knowledge_lines(knowledge, str(SOPS_DIR)):
        out.print(line, markup=False)
    owner = await asyncio.to_thread(load_owner_key, config, repo)
    runner = TaskRunner(client, endpoints, repo, owner, options.yes, options.timeout_s, out)
    first = await runner.run_task(1, SUB_TASK, first_input)
    if first.state != "approved":
        return knowledge, [first], None
    second, command = await runner.run_escalating_task(2, MUL_TASK, task_input(sample, MUL_TASK))
    return knowledge, [first, second], command
