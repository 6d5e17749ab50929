"""Aider's LLM history file read as it grows (``semspec.agents.aider_history``).

``data/aider/stale_edit.llm.history.md`` is what Aider 0.86.2 wrote (its long system prompts cut
to their first line) when the model answered every request with the same edit whose SEARCH text
is not in the file: four replies, three of them sent back as failed, then Aider stopped.
"""

from __future__ import annotations

import random
from pathlib import Path

from semspec.agents.aider_history import AiderHistoryWatch
from semspec.agents.cli_streams import ModelStep, StreamStep, ToolStep

STALE_EDIT = Path(__file__).parents[1] / "data" / "aider" / "stale_edit.llm.history.md"
FAILED = "# 1 SEARCH/REPLACE block failed to match!"


def kinds(steps: list[StreamStep]) -> list[tuple[str, bool]]:
    return [
        ("model", False) if isinstance(step, ModelStep) else ("edit", step.error) for step in steps
    ]


def test_each_reply_is_a_model_step_and_each_failed_edit_a_failed_tool_step(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.md"
    history.write_bytes(STALE_EDIT.read_bytes())
    watch = AiderHistoryWatch.before_run(tmp_path / "history.md")
    watch.offset = 0  # the whole file is this run's

    steps = watch.poll() + watch.finish()

    assert kinds(steps) == [("model", False), ("edit", True)] * 3 + [
        ("model", False),
        ("edit", False),  # the last reply: the run ended without a word about it
    ]
    tools = [step for step in steps if isinstance(step, ToolStep)]
    assert all(step.output.startswith(FAILED) for step in tools[:3])
    assert len({step.call.arguments["blocks"][0] for step in tools}) == 1  # the same edit


def test_a_failed_edit_is_seen_when_aider_sends_it_back_before_the_model_answers(
    tmp_path: Path,
) -> None:
    data = STALE_EDIT.read_bytes()
    history = tmp_path / "history.md"
    history.write_bytes(b"")
    watch = AiderHistoryWatch.before_run(history)
    steps: list[StreamStep] = []
    shuffle = random.Random(24)
    # The file up to each reply's header, appended in pieces of any size (a poll may catch a
    # line half written).
    replies = [i for i in range(len(data)) if data.startswith(b"LLM RESPONSE", i)]
    cuts = [*replies[1:], len(data)]
    written = 0
    for answered, cut in enumerate(cuts, start=1):
        while written < cut:
            size = min(shuffle.randint(1, 3000), cut - written)
            with open(history, "ab") as handle:
                handle.write(data[written : written + size])
            written += size
            steps += watch.poll()
        failed = [s for s in steps if isinstance(s, ToolStep) and s.error]
        # The model has not answered yet, and its last reply's failure is already a step.
        assert len(failed) == min(answered, 3)

    steps += watch.finish()

    assert kinds(steps) == [("model", False), ("edit", True)] * 3 + [
        ("model", False),
        ("edit", False),
    ]


def test_only_what_the_run_appends_is_read(tmp_path: Path) -> None:
    history = tmp_path / "history.md"
    history.write_bytes(STALE_EDIT.read_bytes())  # an earlier run's exchanges
    watch = AiderHistoryWatch.before_run(history)

    assert watch.poll() + watch.finish() == []
