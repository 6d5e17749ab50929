"""Each recording format ``semspec monitor replay`` reads, on small real samples (trimmed copies
of public runs: tests/data/replay_formats/README.md), and the repeat count across a format-error
turn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.replay.backtest import backtest
from semspec.processors.risk_monitor.replay.files import read_runs
from semspec.processors.risk_monitor.replay.runs import RecordedRun

SAMPLES = Path(__file__).parents[1] / "data" / "replay_formats"


def run_of(name: str) -> RecordedRun:
    runs = read_runs(SAMPLES / name, lambda _model: None)
    assert len(runs) == 1
    return runs[0]


def tools(run: RecordedRun) -> list[str | None]:
    return [e.data.tool for e in run.events if e.kind == "step" and e.data.kind == "tool"]


def test_mini_swe_agent_turns_holding_a_python_and_a_bash_block_are_tool_calls() -> None:
    run = run_of("astropy-13579.two-fence-turns.traj.json")
    assert run.format == "mini-swe-agent"
    # 17 replies, each ran its bash block (mini-swe-agent answered every one with an output).
    assert tools(run) == ["bash"] * 16
    assert backtest(run, RiskConfig()).firings == []


def test_a_no_op_command_four_times_across_a_format_error_turn_is_stopped() -> None:
    run = run_of("sympy-15976.noop-loop.traj.json")
    report = backtest(run, RiskConfig())
    assert [(f.rule, f.level, f.step) for f in report.firings] == [("repeated_action", "pause", 46)]
    silent = [e.data.step for e in run.events if e.data.kind == "model" and not e.data.action_hash]
    assert 44 in silent  # the refused reply between the third and fourth sed


def test_a_swe_agent_traj_is_read_from_its_trajectory() -> None:
    run = run_of("pydicom-1458.traj")
    assert run.format == "swe-agent"
    assert len(run.events) == 24
    assert tools(run)[:3] == ["create", "edit", "python"]
    assert tools(run)[-1] == "submit"
    assert run.dollars_from == "run total"


def test_a_swe_agent_traj_with_only_a_history_is_read_from_it() -> None:
    run = run_of("function-calling-simple.history.traj")
    assert run.format == "swe-agent"
    assert len(tools(run)) == 5
    assert backtest(run, RiskConfig()).firings == []


def test_an_openhands_event_list_pairs_each_action_with_its_observation() -> None:
    run = run_of("openhands-basic.events.json")
    assert run.format == "openhands"
    kinds = [(e.data.kind, e.data.tool) for e in run.events]
    assert kinds == [("model", None), ("tool", "str_replace_editor"), ("model", None)]


def test_an_atif_trajectory_gives_its_steps_tokens_and_dollars() -> None:
    run = run_of("written-here-greeting.atif.json")
    assert run.format == "atif"
    report = backtest(run, RiskConfig())
    assert report.tokens == 100 + 50 + 120 + 30  # the steps' metrics
    assert report.cost_usd is not None and abs(report.cost_usd - 0.00135) < 1e-9
    assert tools(run) == ["str_replace_editor"]


def test_replay_names_the_format_of_each_file_in_its_table_and_json(git_repo: Path) -> None:
    files = sorted(SAMPLES.glob("*.json")) + sorted(SAMPLES.glob("*.traj"))
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    env = {**unset, "COLUMNS": "240"}
    args = ["--repo", str(git_repo), "monitor", "replay"]
    runner = CliRunner()
    body: dict[str, Any] = json.loads(
        runner.invoke(app, [*args, "--json", *map(str, files)], env=env).stdout
    )
    formats = {Path(r["run"]).name: r["format"] for r in body["runs"]}
    assert formats == {
        "astropy-13579.two-fence-turns.traj.json": "mini-swe-agent",
        "function-calling-simple.history.traj": "swe-agent",
        "openhands-basic.events.json": "openhands",
        "written-here-greeting.atif.json": "atif",
        "pydicom-1458.traj": "swe-agent",
        "sympy-15976.noop-loop.traj.json": "mini-swe-agent",
    }
    table = runner.invoke(app, [*args, *map(str, files)], env=env)
    assert table.exit_code == 0, table.output
    rows = [line for line in table.stdout.splitlines() if "pydicom-1458.traj" in line]
    assert len(rows) == 1 and "swe-agent" in rows[0]


def test_openhands_parallel_calls_of_one_response_are_one_model_call(tmp_path: Path) -> None:
    def action(n: int, tool: str, response: str, **args: str) -> dict[str, Any]:
        meta = {"function_name": tool, "model_response": {"id": response}}
        return {
            "id": n,
            "source": "agent",
            "action": "run",
            "args": args,
            "tool_call_metadata": meta,
        }

    def observation(n: int, cause: int, code: int) -> dict[str, Any]:
        return {
            "id": n,
            "source": "agent",
            "observation": "run",
            "cause": cause,
            "content": "out",
            "extras": {"exit_code": code},
        }

    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        action(1, "execute_bash", "r1", command="ls"),
        observation(2, 1, 0),
        action(3, "str_replace_editor", "r1", path="a.py"),
        observation(4, 3, 0),
        action(5, "execute_bash", "r2", command="false"),
        observation(6, 5, 1),
    ]
    (tmp_path / "events.json").write_text(json.dumps(events))
    (run,) = read_runs(tmp_path / "events.json", lambda _model: None)
    assert [(e.data.kind, e.data.tool, e.data.error) for e in run.events] == [
        ("model", None, False),
        ("tool", "execute_bash", False),
        ("tool", "str_replace_editor", False),
        ("model", None, False),
        ("tool", "execute_bash", True),
    ]
