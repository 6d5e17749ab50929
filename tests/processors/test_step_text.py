"""The one hash of a step's output: what it blanks (timings, timestamps, memory addresses), what
it keeps (counts, line numbers, short hex values), and that the live agents and ``semspec
monitor replay`` hash an output the same way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from semspec.agents.steps import observation_hash
from semspec.processors.risk_monitor.replay.chat_log import chat_run
from semspec.vocabulary.step_text import NORMALIZED_EDGE, normalized_output, output_digest

SAME = {
    "pytest": ("1 failed, 5 passed in 0.12s", "1 failed, 5 passed in 0.15s"),
    "pytest over a minute": ("2 passed in 62.13s (0:01:02)", "2 passed in 63.40s (0:01:03)"),
    "unittest": (
        "Ran 3 tests in 0.002s\n\nFAILED (failures=1)",
        "Ran 3 tests in 0.004s\n\nFAILED (failures=1)",
    ),
    "go test": (
        "--- FAIL: TestParse (0.00s)\nFAIL\tpkg 0.012s",
        "--- FAIL: TestParse (0.01s)\nFAIL\tpkg 0.019s",
    ),
    "milliseconds": ("timed out after 250 ms", "timed out after 251 ms"),
    "iso timestamp": ("2026-11-20T10:00:01Z ERROR db down", "2026-11-20T10:00:07.5Z ERROR db down"),
    "log timestamp": ("2026-11-20 10:00:01,123 refused", "2026-11-20 10:00:09,456 refused"),
    "clock time": ("[10:00:01] build failed", "[10:02:41] build failed"),
    "address": ("<Conn object at 0x7f3a2c1b9d40> closed", "<Conn object at 0x7f3a2c1ba110> closed"),
    "whitespace at the ends": ("boom\n", "  boom"),
}

DIFFERENT = {
    "failed count": ("1 failed, 5 passed in 0.12s", "2 failed, 4 passed in 0.12s"),
    "progress": ("3 of 10 done", "4 of 10 done"),
    "counter": ("waiting: 3 jobs queued", "waiting: 2 jobs queued"),
    "line number": ("calc.py:12:5: E501 line too long", "calc.py:13:5: E501 line too long"),
    "line and column": ("calc.py:12:5: error", "calc.py:12:15: error"),
    "short hex": ("expected 0xff, got 0x10", "expected 0xff, got 0x20"),
    "skipped": ("1 failed, 2 skipped", "1 failed, 3 skipped"),
    "size": ("downloaded 12 MB", "downloaded 13 MB"),
    "message": ("1 failed: test_parse", "1 failed: test_format"),
}


@pytest.mark.parametrize("first,second", SAME.values(), ids=SAME.keys())
def test_outputs_differing_only_in_time_or_addresses_hash_the_same(first: str, second: str) -> None:
    assert observation_hash(first) == observation_hash(second)


@pytest.mark.parametrize("first,second", DIFFERENT.values(), ids=DIFFERENT.keys())
def test_outputs_differing_in_counts_lines_or_values_hash_apart(first: str, second: str) -> None:
    assert observation_hash(first) != observation_hash(second)
    assert replayed_hashes([first, second])[0] != replayed_hashes([first, second])[1]


def test_blanking_keeps_the_rest_of_the_line() -> None:
    assert normalized_output("FAILED t.py::test_a - 1 failed in 0.12s at 0x7f3a2c1b9d40") == (
        "FAILED t.py::test_a - 1 failed in <duration> at 0x<address>"
    )


@pytest.mark.parametrize(
    "output", [*(pair[0] for pair in SAME.values()), *(pair[0] for pair in DIFFERENT.values())]
)
def test_replay_hashes_a_tool_output_as_the_live_agent_does(output: str) -> None:
    assert replayed_hashes([output]) == [observation_hash(output)]


def replayed_hashes(outputs: list[str]) -> list[str]:
    """The observation hashes ``semspec monitor replay`` gives the tool steps of a chat log
    whose agent runs one command per output."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the failing test"}]
    for number, output in enumerate(outputs):
        call = {
            "id": f"call-{number}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": "pytest -q"})},
        }
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call-{number}", "content": output})
    run = chat_run("log", messages, lambda _model: None)
    return [e.data.observation_hash for e in run.events if e.kind == "step" and e.data.tool]


def test_a_very_long_output_is_blanked_at_both_ends_and_differs_in_its_middle() -> None:
    middle = "x" * (3 * NORMALIZED_EDGE)
    first = f"started 10:00:01\n{middle}\n1 failed in 0.12s"
    again = f"started 10:02:09\n{middle}\n1 failed in 0.15s"
    changed = f"started 10:00:01\n{middle[:-1]}y\n1 failed in 0.12s"

    assert output_digest(first) == output_digest(again)
    assert output_digest(first) != output_digest(changed)
