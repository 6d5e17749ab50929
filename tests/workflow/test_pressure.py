"""Runtime context pressure: exact level boundaries, growth rate, and the checkpoint decision."""

from __future__ import annotations

import dataclasses

import pytest
from temporalio.converter import DataConverter

from semspec.workflow.context.monitor import (
    ContextSnapshot,
    ContextTracker,
    pressure_for,
    should_checkpoint,
)


@pytest.mark.parametrize(
    ("tokens", "level"),
    [
        (0, "green"),
        (4_999, "green"),
        (5_000, "yellow"),
        (6_499, "yellow"),
        (6_500, "orange"),
        (7_499, "orange"),
        (7_500, "red"),
        (8_500, "red"),
        (8_501, "critical"),
        (10_000, "critical"),
        (12_000, "critical"),
    ],
)
def test_pressure_levels_at_each_boundary_of_a_10k_window(tokens: int, level: str) -> None:
    assert pressure_for(tokens, 10_000) == level


def test_boundaries_hold_for_windows_where_floats_would_round() -> None:
    # 65% of 128,000 = 83,200 exactly; 85% of 131,072 = 111,411.2.
    assert pressure_for(83_200, 128_000) == "orange"
    assert pressure_for(83_199, 128_000) == "yellow"
    assert pressure_for(111_411, 131_072) == "red"
    assert pressure_for(111_412, 131_072) == "critical"


def test_checkpoint_is_required_at_red_and_critical_only() -> None:
    tracker = ContextTracker(window=10_000)
    decisions = {
        tokens: should_checkpoint(tracker.observe(n, tokens))
        for n, tokens in enumerate([4_000, 5_000, 6_500, 7_499, 7_500, 8_500, 8_501], start=1)
    }
    assert decisions == {
        4_000: False,
        5_000: False,
        6_500: False,
        7_499: False,
        7_500: True,
        8_500: True,
        8_501: True,
    }


def test_tracker_reports_growth_rate_and_iterations_left() -> None:
    tracker = ContextTracker(window=100_000)
    tracker.observe(1, 10_000)
    tracker.observe(2, 22_000)
    snapshot = tracker.observe(3, 30_000)
    assert snapshot.tokens_per_iteration == 10_000
    assert snapshot.iterations_remaining == 7
    assert snapshot.utilization == 0.30
    assert snapshot.pressure == "green"


def test_a_single_sample_has_no_rate_yet() -> None:
    snapshot = ContextTracker(window=1_000).observe(1, 100)
    assert snapshot.tokens_per_iteration is None
    assert snapshot.iterations_remaining is None


def test_shrinking_context_predicts_no_exhaustion() -> None:
    tracker = ContextTracker(window=1_000)
    tracker.observe(1, 600)
    snapshot = tracker.observe(2, 300)  # after compaction
    assert snapshot.tokens_per_iteration == -300
    assert snapshot.iterations_remaining is None


def test_a_repeated_iteration_replaces_its_sample() -> None:
    tracker = ContextTracker(window=1_000)
    tracker.observe(1, 100)
    tracker.observe(2, 200)
    snapshot = tracker.observe(2, 400)
    assert tracker.samples == [(1, 100), (2, 400)]
    assert snapshot.tokens_per_iteration == 300


def test_going_back_in_iterations_is_an_error() -> None:
    tracker = ContextTracker(window=1_000)
    tracker.observe(3, 100)
    with pytest.raises(ValueError, match="iteration 2"):
        tracker.observe(2, 100)


def test_snapshot_and_tracker_survive_the_temporal_payload_converter() -> None:
    tracker = ContextTracker(window=32_000)
    tracker.observe(1, 9_000)
    snapshot = tracker.observe(2, 25_000)
    converter = DataConverter.default.payload_converter
    [payload] = converter.to_payloads([snapshot])
    [back] = converter.from_payloads([payload], [ContextSnapshot])
    assert back == snapshot
    assert dataclasses.is_dataclass(back)
    [tracker_payload] = converter.to_payloads([tracker])
    [tracker_back] = converter.from_payloads([tracker_payload], [ContextTracker])
    assert tracker_back.observe(3, 26_000).pressure == "red"
