"""A halt from the risk monitor stops a running gate of a task on a real stack (``semspec up``).

The task is submitted and answered through the CLI; the halt reaches its workflow through the
signal bridge the risk monitor uses, while the task's gate hangs (``tests/support/slow_gate.py``).
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.client import Client

from semspec.processors.risk_monitor.signal_bridge import TemporalSignalBridge
from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.signal_evidence import ConflictEvidence
from tests.support.slow_gate import SLEEP_S, gate_pid, is_running, slow_gate_command
from tests.support.stack import Stack, running_stack, sample_config, write_script

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}


async def halt_as_the_monitor_would(stack: Stack, task_id: str) -> None:
    """Deliver a conflicting-changes halt to the task's workflow through the signal bridge."""
    client = await Client.connect(stack.temporal_address())
    signal = UserSignal(
        signal_id=f"halt-{task_id}",
        task_id=task_id,
        level="halt",
        reason="conflicting_changes",
        evidence=ConflictEvidence(event_id="e1", files=["calc.py"], other_tasks=["other"]),
        message="calc.py is also changed by task other",
    )
    bridge = TemporalSignalBridge.for_client(client, stack.owner().sign)
    delivered = await bridge.deliver(task_id, "halt", signal)
    assert delivered


def test_a_halt_stops_the_running_gate_and_a_human_retry_takes_the_task_to_approval(
    tmp_path: Path,
) -> None:
    gates = tmp_path / "gate"
    gates.mkdir()
    gate = {"name": "slow", "command": slow_gate_command(gates), "timeout": SLEEP_S * 2}
    # The gate writes its pid outside the worktree for the test to watch: no sandbox.
    config = sample_config([gate])
    config["gates"]["sandbox"] = "none"
    with running_stack(tmp_path / "stack", config) as stack:
        task_id = f"halt-{uuid.uuid4().hex[:8]}"
        script = write_script(
            stack.root / "scripts" / f"{task_id}.yaml",
            [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}],
        )
        submitted = stack.cli(
            "task", "submit", f"task {task_id}", "--id", task_id, "--file", "calc.py",
            "--criterion", "sub(a, b) returns a - b", "--script", str(script),
        )  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr
        pid = asyncio.run(gate_pid(gates))
        asyncio.run(halt_as_the_monitor_would(stack, task_id))

        status = stack.wait_status(task_id, lambda s: s.get("pending_escalation") is not None)
        escalation = status["pending_escalation"]
        assert escalation["source"] == "halt"
        assert escalation["reason"] == "conflicting_changes"
        assert escalation["message"].startswith("halt (conflicting_changes): calc.py is also")
        assert escalation["message"].endswith("the running gates step was cancelled")
        assert not is_running(pid)  # the gate's process group was ended before the question
        assert status["halted"] is True
        shown = stack.cli("escalations", "show", escalation["escalation_id"])
        assert shown.returncode == 0, shown.stderr
        assert "source halt" in shown.stdout
        assert "halt (conflicting_changes)" in shown.stdout

        resolved = stack.cli(
            "escalations", "resolve", escalation["escalation_id"],
            "--action", "retry", "--guidance", "the other task is gone; carry on",
        )  # fmt: skip
        assert resolved.returncode == 0, resolved.stderr
        final = stack.wait_status(task_id, lambda s: s.get("outcome") is not None)
        assert final["outcome"] == "approved"
        assert final["iteration"] == 2
        assert [e["kind"] for e in final["log"]].count("cancelled") == 1
