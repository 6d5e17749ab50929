"""The read/search stabilization layer: gate, budgets, relevance, dedupe, metrics, analytics."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from semspec.agents.stabilization import (
    AnalyticsQueue,
    BatchWriter,
    JsonlSink,
    ReadArgs,
    ReasonCode,
    SearchHit,
    SessionState,
    StabilizationPolicy,
    Stabilizer,
    session_key,
)
from semspec.agents.stabilization.reasons import reason_registry
from semspec.agents.tools.search import search_files
from semspec.agents.workspace import Workspace

FILES = {
    "src/app.py": [f"app line {i}" for i in range(1, 1001)],
    "src/util.py": [f"util line {i}" for i in range(1, 401)],
    "docs/notes.md": [f"note {i}" for i in range(1, 51)],
    "vendor/lib.py": [f"lib {i}" for i in range(1, 21)],
}


def load(path: str) -> list[str]:
    return FILES[path]


def codes(response: dict[str, Any]) -> list[str]:
    codes: list[str] = response["meta"]["stabilization"]["reason_codes"]
    return codes


def searched(stab: Stabilizer, state: SessionState) -> dict[str, Any]:
    hits = [SearchHit("src/app.py", 10, "app line 10"), SearchHit("src/util.py", 5, "util line 5")]
    return stab.search_response(state, "line", hits)


def test_search_issues_the_same_ids_for_the_same_results() -> None:
    first = searched(Stabilizer(), SessionState("a"))
    second = searched(Stabilizer(), SessionState("b"))

    assert first["bundle_id"] == second["bundle_id"]
    assert [c["candidate_id"] for c in first["candidates"]] == [
        c["candidate_id"] for c in second["candidates"]
    ]
    assert first["meta"]["stabilization"]["next_calls"][0] == {
        "tool": "read",
        "args": {"candidate_id": first["candidates"][0]["candidate_id"]},
    }


def test_read_without_ref_before_any_search_is_blocked_with_search_first() -> None:
    response = Stabilizer().read_response(SessionState("s"), ReadArgs(path="src/app.py"), load)

    assert response["ok"] is False
    assert response["error"]["code"] == "SEARCH_FIRST_REQUIRED"
    assert codes(response) == ["SEARCH_FIRST_REQUIRED"]
    assert response["meta"]["stabilization"]["next_calls"][0]["tool"] == "search"


def test_read_without_ref_after_a_search_is_blocked_with_ref_required() -> None:
    stab, state = Stabilizer(), SessionState("s")
    searched(stab, state)

    response = stab.read_response(state, ReadArgs(path="docs/notes.md"), load)

    assert response["error"]["code"] == "SEARCH_REF_REQUIRED"
    assert "precision read" in response["error"]["hint"]


def test_precision_read_of_up_to_200_lines_needs_no_search() -> None:
    response = Stabilizer().read_response(
        SessionState("s"), ReadArgs(path="src/app.py", start_line=1, end_line=200), load
    )

    assert response["ok"] is True
    assert (response["start_line"], response["end_line"]) == (1, 200)
    assert codes(response) == []


def test_precision_read_over_200_lines_is_blocked_with_windowed_next_calls() -> None:
    response = Stabilizer().read_response(
        SessionState("s"), ReadArgs(path="src/app.py", start_line=1, end_line=201), load
    )

    assert response["error"]["code"] == "RANGE_TOO_LARGE"
    assert codes(response) == ["PRECISION_RANGE_TOO_LARGE"]
    calls = response["meta"]["stabilization"]["next_calls"]
    assert calls[0]["args"] == {"path": "src/app.py", "start_line": 1, "end_line": 200}
    assert calls[1]["args"] == {"path": "src/app.py", "start_line": 201, "end_line": 400}


def test_advise_mode_allows_a_read_without_ref_but_says_so() -> None:
    stab = Stabilizer(StabilizationPolicy(gate_mode="advise"))

    response = stab.read_response(SessionState("s"), ReadArgs(path="docs/notes.md"), load)

    assert response["ok"] is True
    assert codes(response) == ["SEARCH_FIRST_REQUIRED"]


def test_unknown_candidate_id_is_refused() -> None:
    response = Stabilizer().read_response(SessionState("s"), ReadArgs(candidate_id="c-nope"), load)

    assert response["error"]["code"] == "CANDIDATE_REF_REQUIRED"


def test_candidate_read_returns_a_window_around_the_hit() -> None:
    stab, state = Stabilizer(), SessionState("s")
    found = searched(stab, state)

    response = stab.read_response(
        state, ReadArgs(candidate_id=found["candidates"][0]["candidate_id"]), load
    )

    assert response["ok"] is True
    assert (response["path"], response["start_line"], response["end_line"]) == ("src/app.py", 1, 80)
    assert "    10| app line 10" in response["content"]


def test_bundle_read_is_limited_to_the_bundles_paths() -> None:
    stab, state = Stabilizer(), SessionState("s")
    bundle = searched(stab, state)["bundle_id"]

    inside = stab.read_response(
        state, ReadArgs(bundle_id=bundle, path="src/util.py", start_line=1, end_line=10), load
    )
    outside = stab.read_response(state, ReadArgs(bundle_id=bundle, path="docs/notes.md"), load)

    assert inside["ok"] is True
    assert outside["error"]["code"] == "CANDIDATE_REF_REQUIRED"


def test_single_read_is_cut_to_300_lines_and_marked_degraded() -> None:
    stab, state = Stabilizer(), SessionState("s")
    bundle = searched(stab, state)["bundle_id"]

    response = stab.read_response(state, ReadArgs(bundle_id=bundle, path="src/app.py"), load)

    assert (response["start_line"], response["end_line"]) == (1, 300)
    assert codes(response) == ["PREVIEW_DEGRADED"]
    assert response["meta"]["stabilization"]["next_calls"][-1]["args"] == {
        "path": "src/app.py",
        "start_line": 301,
        "end_line": 500,
    }


def test_preview_is_cut_at_12000_characters() -> None:
    wide = {"wide.txt": ["y" * 500 for _ in range(100)]}
    response = Stabilizer().read_response(
        SessionState("s"), ReadArgs(path="wide.txt", start_line=1, end_line=100), wide.__getitem__
    )

    assert len(response["content"]) < 12_100
    assert "PREVIEW_DEGRADED" in codes(response)


def test_read_budget_goes_soft_then_hard_by_read_count() -> None:
    stab, state = Stabilizer(), SessionState("s")
    responses = [
        stab.read_response(state, ReadArgs(path="src/app.py", start_line=i, end_line=i), load)
        for i in range(1, 27)
    ]

    assert [r["meta"]["stabilization"]["budget_state"] for r in responses[:19]] == ["ok"] * 19
    assert "BUDGET_SOFT_LIMIT" in codes(responses[20])
    assert responses[24]["ok"] is True
    assert responses[25]["ok"] is False
    assert responses[25]["error"]["code"] == "BUDGET_EXCEEDED"
    assert codes(responses[25]) == ["BUDGET_HARD_LIMIT"]
    assert "Read budget exceeded" in responses[25]["error"]["message"]


def test_soft_limit_by_lines_reduces_the_payload() -> None:
    stab, state = Stabilizer(), SessionState("s")
    for start in range(1, 1000, 200):
        stab.read_response(
            state, ReadArgs(path="src/app.py", start_line=start, end_line=start + 199), load
        )
    assert state.metrics.reads_lines_total == 1000
    for start in range(1, 400, 200):
        stab.read_response(
            state, ReadArgs(path="src/util.py", start_line=start, end_line=start + 199), load
        )
    # 1,400 lines so far; two more 200-line reads cross the 2,000-line soft line.
    for start in (1, 21):
        stab.read_response(
            state, ReadArgs(path="docs/notes.md", start_line=start, end_line=start + 19), load
        )
    extra = {"more.txt": [f"m{i}" for i in range(1, 1001)]}
    loader = {**FILES, **extra}.__getitem__
    for start in (1, 201, 401):
        stab.read_response(
            state, ReadArgs(path="more.txt", start_line=start, end_line=start + 199), loader
        )

    reduced = stab.read_response(
        state, ReadArgs(path="more.txt", start_line=601, end_line=800), loader
    )

    assert state.metrics.reads_lines_total >= 2_000
    assert "BUDGET_SOFT_LIMIT" in codes(reduced)
    assert reduced["end_line"] - reduced["start_line"] + 1 == 100


def test_read_outside_the_latest_searchs_top_k_gets_a_soft_warning() -> None:
    stab, state = Stabilizer(), SessionState("s")
    searched(stab, state)

    miss = stab.read_response(state, ReadArgs(path="docs/notes.md", start_line=1, end_line=5), load)
    hit = stab.read_response(state, ReadArgs(path="src/util.py", start_line=1, end_line=5), load)

    assert miss["ok"] is True
    assert codes(miss) == ["LOW_RELEVANCE_OUTSIDE_TOPK"]
    assert "seems unrelated" in miss["meta"]["stabilization"]["warnings"][0]
    assert miss["meta"]["stabilization"]["next_calls"][0]["tool"] == "read"
    assert codes(hit) == []


def test_read_of_an_excluded_path_is_flagged() -> None:
    response = Stabilizer().read_response(
        SessionState("s"), ReadArgs(path="vendor/lib.py", start_line=1, end_line=5), load
    )

    assert codes(response) == ["EXCLUDED_PATH"]


def test_repeated_read_output_collapses_to_a_marker_and_costs_no_budget() -> None:
    stab, state = Stabilizer(), SessionState("s")
    args = ReadArgs(path="src/app.py", start_line=1, end_line=50)

    first = stab.read_response(state, args, load)
    second = stab.read_response(state, args, load)
    third = stab.read_response(state, args, load)

    assert "     1| app line 1" in first["content"]
    assert second["content"] == "     …| [lines 1-50 unchanged, already shown in this session]"
    assert third["content"] == second["content"]
    assert codes(second) == ["DUPLICATE_READ_COLLAPSED"]
    assert state.metrics.reads_lines_total == 50


def test_metrics_count_reads_and_searches_deterministically() -> None:
    stab, state = Stabilizer(), SessionState("s")
    stab.read_response(state, ReadArgs(path="src/app.py", start_line=1, end_line=10), load)
    searched(stab, state)
    stab.read_response(state, ReadArgs(path="src/util.py", start_line=1, end_line=30), load)
    stab.read_response(state, ReadArgs(path="docs/notes.md"), load)

    assert state.metrics.snapshot() == {
        "reads_count": 2,
        "reads_lines_total": 40,
        "reads_chars_total": len("\n".join(f"{n:>6}| app line {n}" for n in range(1, 11)))
        + len("\n".join(f"{n:>6}| util line {n}" for n in range(1, 31))),
        "search_count": 1,
        "read_after_search_ratio": 0.5,
        "avg_read_span": 20.0,
        "max_read_span": 30,
        "preview_degraded_count": 0,
        "blocked_count": 1,
    }


def test_session_key_prefers_the_session_id_and_canonicalizes_the_workspace(
    tmp_path: Path,
) -> None:
    real = tmp_path / "ws"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")

    with_sid = session_key(str(real), session_id="abc", connection_id="conn-1")
    via_alias = session_key(str(tmp_path / "alias"), session_id="abc", connection_id="conn-2")
    fallback = session_key(str(real), session_id=None, connection_id="conn-1")

    assert with_sid == via_alias
    assert with_sid.startswith("ws:") and with_sid.endswith(":sid:abc")
    assert fallback.endswith(":conn:conn-1")


def test_every_reason_code_is_described_in_the_registry() -> None:
    registry = reason_registry()

    for code in ReasonCode:
        assert registry[code.value]["description"]
        assert registry[code.value]["severity"] in ("info", "warn", "block")
    assert set(registry) == {code.value for code in ReasonCode}


def test_search_skips_excluded_directories_and_git(tmp_path: Path) -> None:
    for rel in ("src/a.py", "node_modules/m/index.js", "vendor/v.py", ".git/config"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("needle\n")

    hits = search_files(
        Workspace(tmp_path), "NEEDLE", excluded_dirs=StabilizationPolicy().excluded_dirs
    )

    assert [h.path for h in hits] == ["src/a.py"]


def test_analytics_queue_drops_the_newest_on_overflow_and_counts_by_type() -> None:
    queue = AnalyticsQueue(maxsize=3)
    accepted = [
        queue.enqueue({"type": kind, "reason_codes": ["BUDGET_HARD_LIMIT"]})
        for kind in ("read", "read", "search", "read", "search", "search")
    ]

    assert accepted == [True, True, True, False, False, False]
    assert dict(queue.drop_count_by_type) == {"read": 1, "search": 2}
    assert dict(queue.drop_count_by_reason) == {"BUDGET_HARD_LIMIT": 3}
    assert [e["type"] for e in queue.take_batch(10)] == ["read", "read", "search"]


def test_default_analytics_queue_holds_2000_events() -> None:
    queue = AnalyticsQueue()
    for i in range(2_100):
        queue.enqueue({"type": "read", "i": i})

    assert queue.qsize() == 2_000
    assert queue.drop_count_by_type["read"] == 100


async def test_batch_writer_drains_the_queue_into_a_jsonl_file(tmp_path: Path) -> None:
    queue = AnalyticsQueue()
    stab = Stabilizer(analytics=queue)
    state = SessionState("s")
    writer = BatchWriter(queue, JsonlSink(tmp_path / "analytics.jsonl"), batch_size=2)
    writer.start()
    searched(stab, state)
    stab.read_response(state, ReadArgs(path="docs/notes.md", start_line=1, end_line=2), load)
    stab.read_response(state, ReadArgs(path="docs/notes.md"), load)
    await writer.stop()

    events = [json.loads(line) for line in (tmp_path / "analytics.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events] == ["search", "read", "read_blocked"]
    assert writer.written == 3


@pytest.mark.parametrize("mode", ["enforce", "advise"])
def test_precision_read_with_inverted_range_is_refused(mode: str) -> None:
    stab = Stabilizer(StabilizationPolicy(gate_mode=mode))  # type: ignore[arg-type]

    response = stab.read_response(
        SessionState("s"), ReadArgs(path="src/app.py", start_line=9, end_line=3), load
    )

    assert response["ok"] is False
    assert "before start_line" in response["error"]["message"]
