"""The step rules: evaluation rate against raw JetStream, the corpus's precision and recall,
the tokens a stop saves on looping runs, and the per-step publish overhead.

Starts its own nats-server on a free loopback port (stopped by PID at the end) and measures,
in the same run:

- ``raw_per_s``: nats-py pull ``fetch`` + ``ack`` of N step events (the baseline);
- ``steps_per_s``: the risk monitor consuming the same number of step events (step rules, KV
  state, acks), the median of ``ROUNDS`` runs, and ``ratio`` against the baseline;
- ``rules_per_s``: ``rules.apply_event`` alone over the same events, in process;
- ``precision``/``recall``: ``semspec monitor replay``'s function over the labelled corpus in
  ``tests/data/trajectories/`` (first rule fired against each run's label), per rule in
  ``per_rule``;
- ``tokens_saved_on_loops``: over the corpus's looping runs, the share of their tokens spent
  after the step that raised the first pause or halt (what stopping there saves), and
  ``steps_to_stop`` the median step a loop was stopped at against its length;
- ``publish_overhead_ms``: the median ms publishing adds to one step, from
  ``bench/step_publish.py`` (``measure_publish_overhead``, its own nats-server);
- on the corpus of real recorded runs in ``tests/data/real_runs/`` (other agents' public runs,
  labelled healthy or stuck by reading them), reported apart: ``real_false_stop_rate``, the
  share of healthy runs the rules stop (target 0.01 or less), and ``real_recall``, the share of
  stuck runs stopped within 2 steps of the step their label names (target 0.90 or more), with
  ``real_runs``, ``real_stuck`` and, per format, the runs and stops.

The last line printed is one JSON object with ``publish_overhead_ms``, ``precision``,
``recall``, ``tokens_saved_on_loops``, ``real_false_stop_rate``, ``real_recall`` and the
numbers above. ``python bench/step_monitor.py --corpus-only`` replays both corpora and prints
their figures without starting a server (what ``tests/processors/test_real_runs.py`` checks);
``--real-corpus DIR`` scores another folder of labelled recordings in place of the real corpus
(a ``labels.json`` of ``{FILE: {label: healthy|stuck, step, reason}}`` beside the files).
``--quick`` (500 events, one round, the real runs left out: what a test runs) only checks that
the servers' side runs.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import step_publish
from bench.monitor_throughput import monitor_rate, raw_rate, start_server, stop_server
from bench.step_publish import measure_publish_overhead
from semspec.core.config.models import RiskConfig
from semspec.core.logging import configure_logging
from semspec.processors.risk_monitor.replay.command import registry_pricer, replay_files
from semspec.processors.risk_monitor.replay.scores import (
    HEALTHY,
    read_stop_labels,
    rule_scores,
    stop_scores,
)
from semspec.processors.risk_monitor.rules import apply_event
from semspec.processors.risk_monitor.state import FileIndex, TaskState
from semspec.vocabulary.events import MonitorEvent, monitor_event

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "trajectories"
REAL_CORPUS = CORPUS.parent / "real_runs"
EVENTS = 20_000
TASKS = 50
ROUNDS = 3
SCORE_REAL = True
"""Whether ``main`` scores the real runs too (``--quick`` leaves them to ``--corpus-only``)."""


def step_events(count: int, prefix: str) -> list[MonitorEvent]:
    """A developer's turns as step events: model calls and tool calls polling with changing
    output, below every threshold (the common case)."""
    events = []
    for n in range(count):
        task, turn_step = f"{prefix}-{n % TASKS}", n // TASKS + 1
        tool = turn_step % 2 == 0
        data: dict[str, Any] = {
            "role": "developer",
            "step": turn_step,
            "kind": "tool" if tool else "model",
            "tool": "bash" if tool else None,
            "action_hash": "poll",
            "observation_hash": f"out-{turn_step}",
            "error": False,
            "input_tokens": 0 if tool else 2_000 + 40 * turn_step,
            "output_tokens": 0 if tool else 120,
            "cost_usd": None if tool else 0.0075,
        }
        event_id = f"{prefix}-{task}/step/{turn_step}"
        events.append(
            monitor_event("step", data, event_id=event_id, task_id=task, run_id="r", iteration=1)
        )
    return events


def rules_rate(events: list[MonitorEvent]) -> float:
    """``apply_event`` alone over ``events``, states carried as the processor carries them."""
    risk = RiskConfig()
    states: dict[str, TaskState] = {}
    index = FileIndex()
    started = time.perf_counter()
    for event in events:
        own = states.get(event.task_id)
        step = apply_event(event, {event.task_id: own} if own else {}, index, risk)
        states.update(step.states)
    return len(events) / (time.perf_counter() - started)


def corpus_scores() -> dict[str, Any]:
    """Precision and recall per rule, and what stopping saved on the looping runs."""
    labels: dict[str, str] = json.loads((CORPUS / "labels.json").read_text())
    files = [CORPUS / name for name in labels]
    reports, errors = replay_files(files, RiskConfig(), registry_pricer(None))
    if errors:
        raise SystemExit("; ".join(e.message for e in errors))
    by_name = {Path(r.name).name: r for r in reports}
    scores = rule_scores(labels, {n: r.first_rule for n, r in by_name.items()})
    loops = [by_name[n] for n, label in labels.items() if label != HEALTHY]
    saved = sum(r.tokens_saved for r in loops) / sum(r.tokens for r in loops)
    stopped = [r.stopped_at / r.steps for r in loops if r.stopped_at]
    return {
        "precision": round(scores["all"].precision, 3),
        "recall": round(scores["all"].recall, 3),
        "per_rule": {
            rule: {"precision": round(s.precision, 3), "recall": round(s.recall, 3)}
            for rule, s in scores.items()
            if rule != "all"
        },
        "tokens_saved_on_loops": round(saved, 3),
        "steps_to_stop": round(statistics.median(stopped), 3),
        "runs": len(labels),
        "loops": len(loops),
    }


def real_corpus_scores(corpus: Path = REAL_CORPUS) -> dict[str, Any]:
    """False stops and recall of the default rules on the labelled real runs."""
    labels = read_stop_labels(json.loads((corpus / "labels.json").read_text()))
    reports, errors = replay_files([corpus / n for n in labels], RiskConfig(), lambda _m: None)
    if errors:
        raise SystemExit("; ".join(e.message for e in errors))
    by_name = {Path(r.name).relative_to(corpus).as_posix(): r for r in reports}
    score = stop_scores(labels, {n: r.stopped_at for n, r in by_name.items()})
    formats: dict[str, dict[str, int]] = {}
    for report in by_name.values():
        row = formats.setdefault(report.format, {"runs": 0, "stopped": 0})
        row["runs"] += 1
        row["stopped"] += report.stopped_at is not None
    return {
        "real_false_stop_rate": round(score.false_stop_rate, 4),
        "real_recall": round(score.recall, 3),
        "real_runs": len(labels),
        "real_stuck": score.stuck,
        "real_false_stops": score.false_stops,
        "real_missed": score.missed,
        "real_formats": formats,
    }


def print_corpora(corpus: dict[str, Any], real: dict[str, Any]) -> None:
    print(
        f"synthetic corpus ({corpus['runs']} runs, {corpus['loops']} loops): precision "
        f"{corpus['precision']:.2f}  recall {corpus['recall']:.2f}"
    )
    for rule, score in corpus["per_rule"].items():
        print(f"  {rule:24s} precision {score['precision']:.2f}  recall {score['recall']:.2f}")
    print(
        f"loops stopped at {corpus['steps_to_stop']:.0%} of their steps (median); "
        f"tokens saved {corpus['tokens_saved_on_loops']:.0%}"
    )
    healthy = real["real_runs"] - real["real_stuck"]
    print(
        f"real corpus ({real['real_runs']} runs, {real['real_stuck']} stuck): "
        f"{len(real['real_false_stops'])} of {healthy} healthy runs stopped "
        f"(false stop rate {real['real_false_stop_rate']:.4f}); recall "
        f"{real['real_recall']:.2f} (stopped within 2 steps of the labelled step)"
    )
    for fmt, row in sorted(real["real_formats"].items()):
        print(f"  {fmt:24s} {row['runs']:4d} runs, {row['stopped']} stopped")


def corpus_only(real_corpus: Path = REAL_CORPUS) -> dict[str, Any]:
    """Both corpora's figures, without the servers (fast: replay only)."""
    corpus, real = corpus_scores(), real_corpus_scores(real_corpus)
    print_corpora(corpus, real)
    result = {k: corpus[k] for k in ("precision", "recall", "tokens_saved_on_loops")}
    result |= {k: real[k] for k in ("real_false_stop_rate", "real_recall", "real_runs")}
    print(json.dumps(result, sort_keys=True))
    return result


async def main() -> dict[str, Any]:
    configure_logging("json", "ERROR")
    with tempfile.TemporaryDirectory(prefix="semspec-bench-") as tmp:
        proc, url = start_server(Path(tmp) / "single")
        try:
            nc = await nats.connect(url)
            raw = await raw_rate(nc, step_events(EVENTS, "raw"))
            await nc.close()
            rounds = [await monitor_rate(url, step_events(EVENTS, f"m{n}")) for n in range(ROUNDS)]
        finally:
            stop_server(proc)
    ours = statistics.median(rounds)
    pure = rules_rate(step_events(EVENTS, "pure"))
    corpus = corpus_scores()
    real = real_corpus_scores() if SCORE_REAL else None
    overhead = measure_publish_overhead()
    result = {
        "publish_overhead_ms": overhead,
        "precision": corpus["precision"],
        "recall": corpus["recall"],
        "tokens_saved_on_loops": corpus["tokens_saved_on_loops"],
        "steps_to_stop": corpus["steps_to_stop"],
        "per_rule": corpus["per_rule"],
        "steps_per_s": round(ours, 1),
        "raw_per_s": round(raw, 1),
        "ratio": round(ours / raw, 3),
        "rules_per_s": round(pure, 1),
    }
    if real is not None:
        keys = ("real_false_stop_rate", "real_recall", "real_runs", "real_stuck", "real_formats")
        result |= {k: real[k] for k in keys}
    print(f"raw JetStream fetch+ack:        {raw:10.0f} step events/s")
    print(f"risk monitor (step rules + KV): {ours:10.0f} step events/s   ratio {ours / raw:.2f}x")
    print(f"apply_event alone:              {pure:10.0f} step events/s")
    if real is not None:
        print_corpora(corpus, real)
    print(f"per-step publish overhead (median): {overhead:.4f} ms (bench/step_publish.py)")
    print(json.dumps(result, sort_keys=True))
    return result


if __name__ == "__main__":
    if "--corpus-only" in sys.argv[1:]:
        args = sys.argv[1:]
        given = args.index("--real-corpus") + 1 if "--real-corpus" in args else 0
        corpus_only(Path(args[given]) if 0 < given < len(args) else REAL_CORPUS)
    else:
        if "--quick" in sys.argv[1:]:
            # Few events and steps (step_publish's too); the synthetic corpus is scored whole,
            # the real runs are --corpus-only's (tests/processors/test_real_runs.py runs it).
            EVENTS, ROUNDS, SCORE_REAL = 500, 1, False
            step_publish.STEPS, step_publish.ROUNDS = 20, 1
        asyncio.run(main())
