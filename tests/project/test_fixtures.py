"""The fixtures themselves start real servers that answer."""

from __future__ import annotations

import uuid
from pathlib import Path

import nats
import pygit2
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker


@activity.defn
async def echo(text: str) -> str:
    return text


@workflow.defn
class EchoWorkflow:
    @workflow.run
    async def run(self, text: str) -> str:
        from datetime import timedelta

        return await workflow.execute_activity(
            echo, text, start_to_close_timeout=timedelta(seconds=10)
        )


async def test_nats_fixture_serves_jetstream(nats_url: str) -> None:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="FIXTURE", subjects=["fixture.>"])
        ack = await js.publish("fixture.one", b"hello")
        assert ack.seq == 1
    finally:
        await nc.close()


async def test_temporal_fixture_runs_a_workflow(temporal_client: Client, task_queue: str) -> None:
    async with Worker(
        temporal_client, task_queue=task_queue, workflows=[EchoWorkflow], activities=[echo]
    ):
        result = await temporal_client.execute_workflow(
            EchoWorkflow.run, "ping", id=f"echo-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == "ping"


async def test_time_skipping_fixture_runs_a_workflow(
    time_skipping_env: WorkflowEnvironment, task_queue: str
) -> None:
    client = time_skipping_env.client
    async with Worker(client, task_queue=task_queue, workflows=[EchoWorkflow], activities=[echo]):
        result = await client.execute_workflow(
            EchoWorkflow.run, "tick", id=f"echo-{uuid.uuid4()}", task_queue=task_queue
        )
    assert result == "tick"


def test_git_repo_fixture_has_one_commit_on_main(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    head = repo.lookup_reference("refs/heads/main").peel(pygit2.Commit)
    assert head.message == "initial"
    assert (git_repo / "calc.py").exists()
