"""The step rules on real recorded runs no one here wrote (tests/data/real_runs/README.md): the
targets of issue 24, and the fence parser against mini-swe-agent's own decisions."""

from __future__ import annotations

import gzip
import itertools
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.replay.command import replay_files
from semspec.processors.risk_monitor.replay.scores import (
    StopScore,
    read_stop_labels,
    stop_scores,
)
from semspec.vocabulary.fenced_blocks import shell_action

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "real_runs"
FORMAT_ERROR = "Please always provide EXACTLY ONE action"


@cache
def score() -> StopScore:
    labels = read_stop_labels(json.loads((CORPUS / "labels.json").read_text()))
    reports, errors = replay_files([CORPUS / n for n in labels], RiskConfig(), lambda _m: None)
    assert errors == []
    stops = {Path(r.name).relative_to(CORPUS).as_posix(): r.stopped_at for r in reports}
    assert stops.keys() == labels.keys()
    return stop_scores(labels, stops)


def test_the_real_corpus_holds_over_200_labelled_runs_of_three_agents() -> None:
    labels = json.loads((CORPUS / "labels.json").read_text())
    assert len(labels) >= 200
    assert {name.split("/")[0] for name in labels} == {"mini-swe-agent", "swe-agent", "openhands"}
    assert all(entry["reason"] for entry in labels.values())
    assert sum(f.stat().st_size for f in CORPUS.rglob("*")) < 10 * 1024 * 1024


@pytest.mark.slow  # replays the 525 real runs
def test_the_default_rules_stop_at_most_one_healthy_real_run_in_a_hundred() -> None:
    assert score().false_stop_rate <= 0.01, score().false_stops


@pytest.mark.slow  # replays the 525 real runs
def test_the_default_rules_stop_nine_in_ten_stuck_real_runs_near_their_labelled_step() -> None:
    assert score().stuck >= 5
    assert score().recall >= 0.90, score().missed


@pytest.mark.slow  # replays the 525 real runs
def test_the_fence_parser_agrees_with_mini_swe_agent_on_its_recorded_replies() -> None:
    agree = total = 0
    for path in sorted((CORPUS / "mini-swe-agent").glob("*.gz")):
        messages = json.loads(gzip.decompress(path.read_bytes()))["messages"]
        for reply, answer in itertools.pairwise(messages):
            if reply["role"] != "assistant" or answer["role"] != "user":
                continue
            ran = not answer["content"].startswith(FORMAT_ERROR)
            agree += (shell_action(reply["content"]) is not None) == ran
            total += 1
    assert total > 20_000
    assert agree / total >= 0.999, (agree, total)


def test_the_bench_reports_both_corpora_and_the_real_targets() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "step_monitor.py"), "--corpus-only"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=600,
    ).stdout
    assert "synthetic corpus" in out and "real corpus" in out
    last = json.loads(out.strip().splitlines()[-1])
    assert last["precision"] == 1.0 and last["recall"] == 1.0
    assert last["real_false_stop_rate"] <= 0.01
    assert last["real_recall"] >= 0.90
