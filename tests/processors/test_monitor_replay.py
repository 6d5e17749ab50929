"""``semspec monitor replay`` through the CLI: the labelled corpus, the report, hostile files."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from semspec.cli.app import app
from semspec.processors.risk_monitor.replay.scores import rule_scores
from tests.support.monitor_events import loop_event

CORPUS = Path(__file__).parents[1] / "data" / "trajectories"
LABELS: dict[str, str] = json.loads((CORPUS / "labels.json").read_text())
STEP_RULES = (
    "repeated_action",
    "repeated_failure",
    "no_tool_call",
    "alternating_actions",
    "context_window_errors",
)


def replay(repo: Path, *args: str) -> Result:
    """``semspec --repo REPO monitor replay ARGS`` in process, without SEMSPEC_* settings."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    env = {**unset, "COLUMNS": "240"}
    return CliRunner().invoke(app, ["--repo", str(repo), "monitor", "replay", *args], env=env)


def replay_json(repo: Path, *files: Path) -> dict[str, Any]:
    result = replay(repo, "--json", *map(str, files))
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def by_file(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {Path(run["run"]).name: run for run in body["runs"]}


def test_the_corpus_has_thirty_runs_with_every_rule_and_healthy_ones() -> None:
    assert len(LABELS) >= 30
    assert set(LABELS.values()) == {*STEP_RULES, "healthy"}
    assert {Path(name).suffixes[-2] for name in LABELS} == {".chat", ".traj", ".steps"}


def test_replay_on_the_corpus_catches_each_rule_with_precision_and_recall(
    git_repo: Path,
) -> None:
    runs = by_file(replay_json(git_repo, *(CORPUS / name for name in LABELS)))
    first = {
        name: (run["firings"][0]["rule"] if run["firings"] else None) for name, run in runs.items()
    }
    scores = rule_scores(LABELS, first)
    for rule in (*STEP_RULES, "all"):
        score = scores[rule]
        print(f"{rule}: precision {score.precision:.2f} recall {score.recall:.2f}")
        assert score.precision >= 0.95 and score.recall >= 0.95, (rule, score)


def test_a_looping_run_stops_at_the_threshold_and_saves_most_of_its_tokens(
    git_repo: Path,
) -> None:
    run = by_file(replay_json(git_repo, CORPUS / "pytest-same-failure.chat.json"))[
        "pytest-same-failure.chat.json"
    ]
    # Two exploring calls, then the third failing pytest: model and tool step each.
    assert run["stopped_at"] == 10
    # One recorded run is one turn: its steps after the pause never climb to halt (issue 24).
    assert [(f["rule"], f["level"], f["step"]) for f in run["firings"]] == [
        ("repeated_failure", "pause", 10),
    ]
    assert run["tokens_saved"] / run["tokens"] > 0.9
    assert run["usd_saved"] > 0 and run["dollars_from"] == "registry"


def test_the_table_names_each_rule_its_level_and_step(git_repo: Path) -> None:
    result = replay(git_repo, str(CORPUS / "talks.steps.jsonl"), str(CORPUS / "ci-poll.chat.json"))
    assert result.exit_code == 0, result.output
    assert "no_tool_call pause@7" in result.stdout
    assert "step 7" in result.stdout


def test_a_file_of_step_events_for_two_tasks_gives_a_run_for_each(
    git_repo: Path, tmp_path: Path
) -> None:
    lines = [
        loop_event("step", task, event_id=f"{task}-{n}", step=n, action_hash="a", error=True)
        for n in range(1, 4)
        for task in ("t1", "t2")
    ]
    recorded = tmp_path / "two.jsonl"
    recorded.write_text("".join(ev.to_json().decode() + "\n" for ev in lines))
    runs = {run["run"]: run for run in replay_json(git_repo, recorded)["runs"]}
    assert sorted(runs) == [f"{recorded}#t1", f"{recorded}#t2"]
    assert [f["event_id"] for f in runs[f"{recorded}#t2"]["firings"]] == ["t2-3"]


def _hostile(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Files replay must refuse, each with the words its error must hold."""
    files = {
        "missing": (tmp_path / "missing.json", "No such file"),
        "a directory": (tmp_path, "not a regular file"),
        "not utf-8": (tmp_path / "latin1.json", "not UTF-8"),
        "nested": (tmp_path / "nested.json", "nested too deeply"),
        "too large": (tmp_path / "huge.jsonl", "larger than 64 MiB"),
        "bad line": (tmp_path / "bad.jsonl", "bad.jsonl:2: step.data.step"),
        "atif without steps": (tmp_path / "run.atif.json", "steps: expected a non-empty list"),
        "atif bad step": (tmp_path / "step.atif.json", "steps[1]: expected an object with source"),
        "swe-agent bad entry": (tmp_path / "bad.traj", "trajectory[1]: expected an object"),
        "openhands bad event": (tmp_path / "events.json", "events[2]: expected an object"),
        "gzip bomb": (tmp_path / "bomb.json.gz", "MiB unpacked"),
        "broken gzip": (tmp_path / "broken.json.gz", "not a readable gzip file"),
        "bad tool calls": (tmp_path / "calls.json", "messages[0].tool_calls"),
        "no messages": (tmp_path / "empty.json", "messages: expected a non-empty list"),
        "other json": (tmp_path / "other.json", "not a recording"),
        "json null": (tmp_path / "null.json", "not a recording"),
        "empty": (tmp_path / "blank.jsonl", "no events"),
    }
    (tmp_path / "latin1.json").write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    (tmp_path / "nested.json").write_text("[" * 100_000)
    with (tmp_path / "huge.jsonl").open("wb") as big:
        big.truncate(64 * 1024 * 1024 + 1)
    good = loop_event("step", event_id="ok").to_json().decode()
    bad = json.loads(good)
    bad["data"]["step"] = 0
    (tmp_path / "bad.jsonl").write_text(good + "\n" + json.dumps(bad) + "\n")
    atif = {"schema_version": "ATIF-v1.7", "session_id": "s", "steps": []}
    (tmp_path / "run.atif.json").write_text(json.dumps(atif))
    steps = [{"step_id": 1, "source": "user", "message": "hi"}, {"source": "robot"}]
    (tmp_path / "step.atif.json").write_text(
        json.dumps({"schema_version": "ATIF-v1.5", "steps": steps})
    )
    entries = [{"action": "ls", "observation": "a.py"}, "ls"]
    (tmp_path / "bad.traj").write_text(json.dumps({"trajectory": entries}))
    events = [
        {"id": 1, "source": "agent", "action": "run"},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1},
        7,
    ]
    (tmp_path / "events.json").write_text(json.dumps(events))
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b" " * (65 * 1024 * 1024)))
    (tmp_path / "broken.json.gz").write_bytes(gzip.compress(b"[]")[:12])
    (tmp_path / "calls.json").write_text(json.dumps([{"role": "assistant", "tool_calls": 3}]))
    (tmp_path / "empty.json").write_text(json.dumps({"messages": []}))
    (tmp_path / "other.json").write_text(json.dumps({"hello": "world"}))
    (tmp_path / "null.json").write_text("null")
    (tmp_path / "blank.jsonl").write_text("\n\n")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")
        files["a fifo"] = (tmp_path / "pipe", "not a regular file")
    return files


def test_each_hostile_file_gets_one_error_and_the_good_ones_are_still_replayed(
    git_repo: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    files = _hostile(folder)
    good = CORPUS / "ls-loop.chat.json"
    result = replay(git_repo, str(good), *(str(path) for path, _ in files.values()))
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(files)
    for (path, words), line in zip(files.values(), errors, strict=True):
        assert str(path) in line and words in line, (line, words)
    assert "hint: replay reads" in result.stderr
    assert "repeated_action pause@12" in result.stdout


@pytest.mark.parametrize("as_json", [True, False])
def test_replay_without_any_readable_file_exits_2(
    git_repo: Path, tmp_path: Path, as_json: bool
) -> None:
    result = replay(git_repo, *(["--json"] if as_json else []), str(tmp_path / "none.json"))
    assert result.exit_code == 2
    assert "No such file" in result.output


def test_replay_without_any_readable_file_prints_no_empty_table(
    git_repo: Path, tmp_path: Path
) -> None:
    result = replay(git_repo, str(tmp_path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "not a regular file" in result.stderr


def test_a_log_with_a_byte_order_mark_and_no_usage_is_read_and_counted(
    git_repo: Path, tmp_path: Path
) -> None:
    log = [
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": "Done, I think.", "model": "no-such-model"},
    ]
    recorded = tmp_path / "bom.json"
    recorded.write_bytes(b"\xef\xbb\xbf" + json.dumps(log).encode())
    (run,) = replay_json(git_repo, recorded)["runs"]
    assert (run["steps"], run["dollars_from"], run["usd_saved"]) == (1, None, None)
    assert run["tokens"] > 0  # counted with semspec's tokenizer, no usage in the log
