"""What a person sees of a task through the real CLI: gate output, models, verdicts, history.

One stack for the module (``semspec up`` in a sample repository). Each fixture plays one task
to its end through the CLI and keeps what the commands printed on the way, so the tests read
those outputs and several behaviours share one task run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.stack import (
    Stack,
    check_gate,
    cli_env,
    running_stack,
    sample_config,
    write_script,
)
from tests.support.tasks import BROKEN_CALC, GOOD_CALC, GOOD_CALC_V2

EXIT_ESCALATED = 3
APPROVE = {"verdict": "approve", "summary": "looks right"}
# How the LLM reviewer reports that it gave no valid verdict (agents/llm_reviewer.py).
ABSTAIN = {"verdict": "request_changes", "reason": "abstain", "summary": "no valid verdict"}
GATE_MESSAGE = "add(2, 3) should be 5"  # the check gate's assertion message
# Long enough to fold in a 60-column table, and ending in -<digits> like an escalation id.
FAILING_ID = "gate-keeps-failing-in-a-task-whose-id-is-long-12"
ABSTAIN_ID = "reviewer-abstains-7"
CHECKPOINT_ID = "checkpoints-once-3"
NARROW = "60"


@dataclass
class Seen:
    """What the CLI printed at each step of one task's life."""

    task_id: str
    outputs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    escalation_id: str = ""
    """The escalation id as a person reads it off ``escalations list`` in a narrow terminal."""

    def out(self, step: str) -> str:
        done = self.outputs[step]
        assert done.returncode == 0, f"{step} exited {done.returncode}: {done.stderr}"
        return done.stdout


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("human-view")
    # A 32,000-token developer window (the default profile has 128,000): a checkpoint is cheap.
    config = sample_config([check_gate()], models={"developer": {"context_window": 32_000}})
    with running_stack(root, config) as running:
        yield running


def _submit(stack: Stack, task_id: str, iterations: list[dict[str, Any]], *extra: str) -> Any:
    return stack.submit_scripted(task_id, iterations, "--wait", *extra, criterion="add adds")


def _cli_narrow(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a terminal ``NARROW`` columns wide (rich's ``TTY_COMPATIBLE`` makes the pipe
    count as a terminal; written to a real pipe nothing folds)."""
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), *args]
    env = {**cli_env(), "COLUMNS": NARROW, "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=90, check=False)


def _only_first_cell(table: str) -> str:
    """The first cell of a one-row rich table, put back together when it folded."""
    return "".join(line.split("│")[1].strip() for line in table.splitlines() if "│" in line)


@pytest.fixture(scope="module")
def failing(stack: Stack) -> Seen:
    """A task whose gate fails twice the same way (escalated), looked at, then cancelled."""
    seen = Seen(FAILING_ID)
    broken = {"developer": {"write": {"calc.py": BROKEN_CALC}}}
    submitted = _submit(stack, FAILING_ID, [broken])
    assert submitted.returncode == EXIT_ESCALATED, submitted.stderr
    seen.outputs["escalations narrow"] = _cli_narrow(stack, "escalations", "list")
    seen.escalation_id = _only_first_cell(seen.out("escalations narrow"))
    steps = {
        "status": ("task", "status", FAILING_ID),
        "logs": ("task", "logs", FAILING_ID),
        "show": ("escalations", "show", seen.escalation_id),
        "show by task id": ("escalations", "show", FAILING_ID),
        "show json": ("escalations", "show", seen.escalation_id, "--json"),
    }
    for step, args in steps.items():
        seen.outputs[step] = stack.cli(*args)
    seen.outputs["list narrow"] = _cli_narrow(stack, "task", "list")
    seen.outputs["list wide"] = _cli_narrow(stack, "task", "list", "--wide")
    seen.outputs["cancel"] = stack.cli("task", "cancel", FAILING_ID)
    stack.wait_status(FAILING_ID, lambda s: bool(s["outcome"]))
    seen.outputs["cancelled status"] = stack.cli("task", "status", FAILING_ID)
    seen.outputs["cancelled logs"] = stack.cli("task", "logs", FAILING_ID)
    return seen


@pytest.fixture(scope="module")
def abstained(stack: Stack, failing: Seen) -> Seen:
    """A task whose reviewer abstains (escalated), aborted by its task id."""
    seen = Seen(ABSTAIN_ID)
    step = {"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": ABSTAIN}
    seen.outputs["submit"] = _submit(stack, ABSTAIN_ID, [step])
    assert seen.outputs["submit"].returncode == EXIT_ESCALATED, seen.outputs["submit"].stderr
    seen.outputs["status"] = stack.cli("task", "status", ABSTAIN_ID)
    seen.outputs["logs"] = stack.cli("task", "logs", ABSTAIN_ID)
    seen.outputs["resolve"] = stack.cli("escalations", "resolve", ABSTAIN_ID, "--action", "abort")
    if seen.outputs["resolve"].returncode != 0:
        # End the task anyway: later tasks on calc.py would be halted as conflicting changes.
        stack.cli("escalations", "resolve", f"{ABSTAIN_ID}-1", "--action", "abort")
    stack.wait_status(ABSTAIN_ID, lambda s: s["outcome"] == "aborted")
    seen.outputs["list"] = stack.cli("task", "list", "--json")
    return seen


@pytest.fixture(scope="module")
def checkpointed(stack: Stack, abstained: Seen) -> Seen:
    """A task that checkpoints under context pressure (a second workflow run), then approves."""
    seen = Seen(CHECKPOINT_ID)
    changes = {"verdict": "request_changes", "findings": [{"message": "mul is missing"}]}
    iterations = [
        # 26,000 of the 32,000-token window: red pressure, checkpoint before the next step.
        {"developer": {"write": {"calc.py": GOOD_CALC}, "tokens": 26_000}, "reviewer": changes},
        {"developer": {"write": {"calc.py": GOOD_CALC_V2}}, "reviewer": APPROVE},
    ]
    seen.outputs["submit"] = _submit(stack, CHECKPOINT_ID, iterations)
    seen.outputs["status json"] = stack.cli("task", "status", CHECKPOINT_ID, "--json")
    seen.outputs["list"] = stack.cli("task", "list", "--json")
    return seen


# ----- the failed gate's output ---------------------------------------------------------------


def _shows_gate_tail_and_log(text: str, task_id: str) -> None:
    assert f"| AssertionError: {GATE_MESSAGE}" in text, text
    log_line = next(line for line in text.splitlines() if "full log: " in line)
    log_path = Path(log_line.split("full log: ", 1)[1].strip())
    assert task_id in str(log_path)
    assert GATE_MESSAGE in log_path.read_text(encoding="utf-8")


def test_task_status_prints_the_failed_gates_last_lines_and_its_full_log(failing: Seen) -> None:
    _shows_gate_tail_and_log(failing.out("status"), FAILING_ID)


def test_task_logs_prints_the_failed_gates_last_lines_and_its_full_log(failing: Seen) -> None:
    _shows_gate_tail_and_log(failing.out("logs"), FAILING_ID)


def test_escalations_show_prints_the_failed_gates_last_lines_and_its_full_log(
    failing: Seen,
) -> None:
    _shows_gate_tail_and_log(failing.out("show"), FAILING_ID)


# ----- models, verdicts, the final line ---------------------------------------------------------


def test_task_status_names_the_models_that_ran_apart_from_the_registry_suggestion(
    failing: Seen,
) -> None:
    lines = failing.out("status").splitlines()
    assert "  models: developer scripted:scripted, reviewer scripted:scripted" in lines
    suggestion = next(line for line in lines if "gpt" in line)
    assert suggestion.startswith("  the registry would pick instead: developer gpt")
    assert suggestion.endswith("(why: `semspec models assign`)")
    assert not any("assignment:" in line for line in lines)


def test_an_abstaining_reviewer_shows_as_abstain_in_status_and_logs(abstained: Seen) -> None:
    assert "  last verdict: abstain by " in abstained.out("status")
    assert "review      abstain by " in abstained.out("logs")
    assert "request_changes" not in abstained.out("status") + abstained.out("logs")


def test_submit_wait_states_the_outcome_once_in_its_final_line(checkpointed: Seen) -> None:
    commit = json.loads(checkpointed.out("status json"))["commit_id"]
    lines = checkpointed.out("submit").splitlines()
    assert [line for line in lines if "approved" in line] == [
        f"task {CHECKPOINT_ID}: approved, commit {commit} on semspec/task/{CHECKPOINT_ID}"
    ]
    assert lines[-1].startswith(f"task {CHECKPOINT_ID}: approved")


# ----- history and lists ------------------------------------------------------------------------


def test_a_cancelled_task_keeps_its_log_and_last_gates_in_status(failing: Seen) -> None:
    text = failing.out("cancelled status")
    assert "state: cancelled   iteration: 2" in text
    assert f"task {FAILING_ID}: task {FAILING_ID}" in text
    _shows_gate_tail_and_log(text, FAILING_ID)


def test_a_cancelled_task_keeps_its_history_in_task_logs(failing: Seen) -> None:
    text = failing.out("cancelled logs")
    for expected in ("iteration 1", "iteration 2", "check: FAIL", "no_new_evidence", "cancelled"):
        assert expected in text


def test_task_list_shows_a_task_that_checkpointed_once(checkpointed: Seen) -> None:
    rows = [r for r in json.loads(checkpointed.out("list")) if r["task_id"] == CHECKPOINT_ID]
    assert [(r["state"], r["phase"]) for r in rows] == [("completed", "approved")]
    assert len(json.loads(checkpointed.out("status json"))["checkpoints"]) == 1


def test_task_list_shows_an_aborted_task_as_failed(abstained: Seen) -> None:
    rows = [r for r in json.loads(abstained.out("list")) if r["task_id"] == ABSTAIN_ID]
    assert [(r["state"], r["phase"]) for r in rows] == [("failed", "aborted")]


def test_task_list_in_a_narrow_terminal_folds_ids_instead_of_cutting_them(failing: Seen) -> None:
    text = failing.out("list narrow")
    assert "…" not in text
    assert _only_first_cell(text) == FAILING_ID


def test_task_list_wide_prints_each_id_on_one_line(failing: Seen) -> None:
    assert any(FAILING_ID in line for line in failing.out("list wide").splitlines())


# ----- ids --------------------------------------------------------------------------------------


def test_escalations_show_takes_the_id_escalations_list_prints(failing: Seen) -> None:
    assert failing.escalation_id == f"{FAILING_ID}-1"
    assert failing.out("show").startswith(f"escalation {FAILING_ID}-1 of task {FAILING_ID}:")


def test_escalations_show_json_gives_each_suggested_action_as_an_object(failing: Seen) -> None:
    shown = json.loads(failing.out("show json"))
    assert shown["escalation"]["escalation_id"] == f"{FAILING_ID}-1"
    actions = shown["actions"]
    abort = f"semspec escalations resolve {FAILING_ID} --action abort"
    assert {"description": "abort the task", "command": abort} in actions
    assert all(set(action) == {"description", "command"} for action in actions), actions


def test_escalations_show_takes_a_task_id_that_ends_in_digits(failing: Seen) -> None:
    assert failing.out("show by task id").startswith(f"escalation {FAILING_ID}-1 of task ")


def test_resolve_takes_a_task_id_that_ends_in_digits(abstained: Seen) -> None:
    assert abstained.out("resolve").strip() == (
        f"resolved {ABSTAIN_ID}-1 of task {ABSTAIN_ID} with abort"
    )


def test_resubmitting_a_task_id_that_ran_is_refused_with_exit_2_saying_so(
    stack: Stack, checkpointed: Seen
) -> None:
    again = _submit(stack, CHECKPOINT_ID, [{"reviewer": APPROVE}])

    assert again.returncode == 2, again.stderr
    assert again.stderr.splitlines()[0] == (
        f"error: task '{CHECKPOINT_ID}' already ran (completed)"
    )
    status = json.loads(stack.cli("task", "status", CHECKPOINT_ID, "--json").stdout)
    assert status["outcome"] == "approved"


# ----- plans ------------------------------------------------------------------------------------


def test_resubmitting_a_plan_that_ran_is_refused_with_exit_2_saying_so(
    stack: Stack, checkpointed: Seen
) -> None:
    write_script(
        stack.repo / "approve.yaml",
        [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": APPROVE}],
    )
    plan = stack.repo / "once.yaml"
    task = {"id": "once-a", "title": "once", "files": ["calc.py"], "script": "approve.yaml"}
    plan.write_text(yaml.safe_dump({"id": "once", "title": "once", "tasks": [task]}))
    first = stack.cli("plan", "submit", str(plan), "--wait")
    assert first.returncode == 0, first.stderr

    again = stack.cli("plan", "submit", str(plan), "--wait")

    assert again.returncode == 2
    assert again.stderr.splitlines()[0] == "error: plan 'once' already ran (approved)"
    assert again.stderr.splitlines()[1].startswith("hint: see it with `semspec plan status once`")
