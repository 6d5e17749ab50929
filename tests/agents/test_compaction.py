"""Budget policy, deterministic pointer summaries, rehydration and the trace compactor."""

from __future__ import annotations

import json

from semspec.agents.compaction import ContextBudgetPolicy, PointerStore, TraceCompactor
from semspec.agents.compaction.summarize import detect_kind, summarize
from semspec.model.providers.types import ChatMessage

DIFF = "".join(
    f"diff --git a/f{i}.py b/f{i}.py\n--- a/f{i}.py\n+++ b/f{i}.py\n"
    f"@@ -1,2 +1,3 @@\n context\n-old {i}\n+new {i}\n+added {i}\n"
    for i in range(3)
)


def tool(content: str, call_id: str, *, compactable: bool = True) -> ChatMessage:
    return ChatMessage("tool", content, tool_call_id=call_id, name="read", compactable=compactable)


def numbered(n: int, word: str = "payload") -> str:
    return "\n".join(f"{word} line {i} with some words in it" for i in range(1, n + 1))


def test_policy_says_ok_needs_summary_or_reject() -> None:
    policy = ContextBudgetPolicy(window_tokens=10_000, response_reserve=2_000)

    assert policy.decide(6_000, 0, 0).kind == "ok"
    assert policy.decide(9_000, 5_000, 2).kind == "needs_summary"
    rejected = policy.decide(9_000, 0, 0)
    assert rejected.kind == "reject"
    assert rejected.deficit == 1_000


def test_diff_summary_counts_files_hunks_and_lines() -> None:
    kind, lines = summarize(DIFF)

    assert kind == "diff"
    assert lines[0] == "diff: 3 files, 3 hunks, +6 -3"
    assert "  f1.py: 1 hunks, +2 -1" in lines


def test_json_summary_shows_the_top_level_shape() -> None:
    payload = json.dumps({"items": [1, 2, 3], "name": "x", "meta": {"a": 1}})

    kind, lines = summarize(payload)

    assert kind == "json"
    assert lines[:4] == [
        "json: object with 3 keys",
        "  items: array(3)",
        "  name: string(1)",
        "  meta: object(1 keys)",
    ]


def test_same_payload_gives_the_same_pointer_and_summary() -> None:
    first = PointerStore().put(numbered(500), source="read")
    second = PointerStore().put(numbered(500), source="read")

    assert first == second
    assert detect_kind(numbered(3)) == "text"
    assert "rehydrate(pointer_id=" in first.summary
    assert "payload line 500" in first.summary  # the tail is kept
    assert "payload line 250 " not in first.summary


def test_rehydrate_returns_the_original_lines_and_the_next_call() -> None:
    store = PointerStore()
    payload = numbered(450)
    pointer = store.put(payload, source="read")

    first = store.rehydrate(pointer.pointer_id, 1, 200)
    second = store.rehydrate(**first["next_call"]["args"])

    assert first["content"].splitlines() == payload.splitlines()[:200]
    assert (second["start_line"], second["end_line"]) == (201, 400)
    assert second["content"].splitlines() == payload.splitlines()[200:400]


def test_rehydrate_pages_a_single_huge_line_by_offset() -> None:
    store = PointerStore()
    blob = json.dumps({"k": "v" * 30_000})
    pointer = store.put(blob, source="fetch")

    first = store.rehydrate(pointer.pointer_id)
    rest = store.rehydrate(**first["next_call"]["args"])

    assert (
        first["content"] + rest["content"] + store.rehydrate(**rest["next_call"]["args"])["content"]
        == blob
    )


def test_rehydrate_of_an_unknown_pointer_says_which_exist() -> None:
    store = PointerStore()
    known = store.put("x\n" * 10, source="read").pointer_id

    answer = store.rehydrate("ptr-nope")

    assert answer["ok"] is False
    assert known in answer["error"]


def test_compactor_pointerizes_the_oldest_tool_outputs_and_keeps_the_prompt() -> None:
    policy = ContextBudgetPolicy(
        window_tokens=6_000, response_reserve=1_000, min_pointer_tokens=100
    )
    compactor = TraceCompactor(policy)
    system = ChatMessage("system", "system prompt " * 50)
    task = ChatMessage("user", "task with SOP requirements " * 50)
    messages = [system, task, tool(numbered(250, "old"), "1"), tool(numbered(250, "new"), "2")]

    decision = compactor.prepare(messages)

    assert decision.kind == "ok"
    assert messages[0] is system and messages[1] is task
    assert messages[2].content.startswith("[pointer ptr-")
    assert messages[3].content == numbered(250, "new")
    assert len(compactor.compactions) == 1
    assert compactor.tokens_saved > 1_000
    assert decision.total_tokens <= policy.target_tokens


def test_compactor_leaves_opted_out_outputs_alone_and_rejects() -> None:
    policy = ContextBudgetPolicy(
        window_tokens=3_000, response_reserve=1_000, min_pointer_tokens=100
    )
    compactor = TraceCompactor(policy)
    messages = [ChatMessage("system", "s"), tool(numbered(300), "1", compactable=False)]

    decision = compactor.prepare(messages)

    assert decision.kind == "reject"
    assert messages[1].content == numbered(300)
    assert compactor.compactions == []


def test_oversized_tool_output_becomes_a_pointer_on_arrival() -> None:
    compactor = TraceCompactor(ContextBudgetPolicy(32_000, max_tool_output_tokens=500))

    big = compactor.admit_tool_output("c1", "read", numbered(400))
    small = compactor.admit_tool_output("c2", "read", numbered(5))
    pinned = compactor.admit_tool_output("c3", "rehydrate", numbered(400), summarizable=False)

    assert big.content.startswith("[pointer ptr-")
    assert compactor.compactions[0].at_gate
    assert small.content == numbered(5) and small.compactable
    assert pinned.content == numbered(400) and not pinned.compactable
