"""``semspec plan`` and ``semspec escalations watch`` end to end, on a stack from ``semspec up``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml

from semspec.vocabulary.subjects import SIGNAL_STREAM
from tests.support.stack import (
    Stack,
    check_gate,
    cli_env,
    running_stack,
    sample_config,
    write_script,
)
from tests.support.tasks import BROKEN_CALC, GOOD_CALC

APPROVE = {"verdict": "approve", "summary": "looks right"}
EXIT_ESCALATED = 3


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("plan-cli"), sample_config([check_gate()])) as s:
        yield s


def write_plan(stack: Stack, name: str, tasks: list[dict[str, Any]]) -> Path:
    path = stack.repo / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"id": name, "title": name, "tasks": tasks}), encoding="utf-8")
    return path


def plan_task(task_id: str, script: str, *deps: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "title": f"task {task_id}",
        "files": ["calc.py"],
        "criteria": ["add works"],
        "script": script,
        "depends_on": list(deps),
    }


def signal_watchers(nats_url: str) -> int:
    """Consumers on the user-signal stream (a running ``watch`` holds one)."""

    async def count() -> int:
        nc = await nats.connect(nats_url, connect_timeout=2)
        try:
            info = await nc.jetstream().stream_info(SIGNAL_STREAM)
            return int(info.state.consumer_count)
        finally:
            await nc.close()

    return asyncio.run(count())


def test_semspec_up_starts_the_risk_monitor_with_the_other_services(stack: Stack) -> None:
    services = {s["name"]: s["state"] for s in stack.cli_json("status")}
    assert services == {
        "nats": "up",
        "temporal": "up",
        "graph": "up",
        "worker": "up",
        "monitor": "up",
        "console": "up",
    }


def test_plan_submit_wait_runs_a_dependent_task_after_its_dependency_and_reports_both(
    stack: Stack,
) -> None:
    write_script(
        stack.repo / "approve.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    # The dependent task starts from ok-a's approved commit: it must change something of its
    # own, or its turn is no submission (it would escalate no_change).
    write_script(
        stack.repo / "approve-b.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC + "\n# ok-b\n"}}, "reviewer": APPROVE}],
    )
    plan = write_plan(
        stack,
        "ok-plan",
        [plan_task("ok-b", "approve-b.yaml", "ok-a"), plan_task("ok-a", "approve.yaml")],
    )
    done = stack.cli("plan", "submit", str(plan), "--wait", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "approved"
    assert [(t["task_id"], t["state"]) for t in result["tasks"]] == [
        ("ok-a", "approved"),
        ("ok-b", "approved"),
    ]
    steps = [(e["kind"], e["task_id"]) for e in result["log"]]
    assert steps.index(("started", "ok-b")) > steps.index(("finished", "ok-a"))
    again = stack.cli_json("plan", "status", "ok-plan")
    assert again["state"] == "done" and again["outcome"] == "approved"
    # Each task of the plan is an ordinary task, with its plan id.
    assert stack.status("ok-b")["outcome"] == "approved"


def test_an_escalating_plan_task_reaches_escalations_watch_and_plan_submit_exits_3(
    stack: Stack,
) -> None:
    write_script(stack.repo / "broken.yaml", [{"developer": {"write": {"calc.py": BROKEN_CALC}}}])
    plan = write_plan(stack, "bad-plan", [plan_task("bad-a", "broken.yaml")])
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo)]
    watch = subprocess.Popen(
        [*argv, "escalations", "watch", "--json", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while signal_watchers(stack.nats_url()) == 0:
            assert watch.poll() is None, watch.communicate()[1]
            assert time.monotonic() < deadline, "escalations watch never subscribed"
            time.sleep(0.1)
        done = stack.cli("plan", "submit", str(plan), "--wait", "--json")
        assert done.returncode == EXIT_ESCALATED, done.stderr
        waiting = json.loads(done.stdout)
        assert [(t["task_id"], t["phase"], t["reason"]) for t in waiting["tasks"]] == [
            ("bad-a", "escalated", "no_new_evidence")
        ]
        out, err = watch.communicate(timeout=30)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.communicate()
    assert watch.returncode == 0, err
    seen = json.loads(out.strip().splitlines()[-1])
    assert (seen["task_id"], seen["level"], seen["reason"]) == (
        "bad-a",
        "escalate",
        "no_new_evidence",
    )

    resolved = stack.cli("escalations", "resolve", "bad-a", "--action", "abort")
    assert resolved.returncode == 0, resolved.stderr
    deadline = time.monotonic() + 30
    while (status := stack.cli_json("plan", "status", "bad-plan"))["state"] != "done":
        assert time.monotonic() < deadline, f"plan never finished: {status}"
        time.sleep(0.3)
    assert status["outcome"] == "incomplete"
    assert status["tasks"][0]["state"] == "aborted"


def test_a_plan_with_a_cycle_is_refused_with_exit_2_naming_the_task(git_repo: Path) -> None:
    plan = git_repo / "cycle.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "title": "cyclic",
                "tasks": [
                    {"id": "a", "title": "a", "depends_on": ["b"]},
                    {"id": "b", "title": "b", "depends_on": ["a"]},
                ],
            }
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(git_repo), "plan", "submit", str(plan)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "error: tasks.a.depends_on: dependency cycle a -> b -> a" in done.stderr
    assert "hint:" in done.stderr
