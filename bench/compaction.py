"""Pointerization savings and the budget policy's per-turn cost, measured side by side.

Two oversized tool outputs (an ~88K-token unified diff and a 5 MB JSON document) go through the
trace compactor's payload gate; the tokens before and after are counted with the same encoder.
Then the same scripted conversation is replayed with and without the policy (gate + ledger +
decision before each call), interleaved turn by turn, and the median added time is reported.

Run: ``python bench/compaction.py`` (``--quick``: small payloads, what a test runs). The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from semspec.agents.compaction import ContextBudgetPolicy, TraceCompactor
from semspec.model.providers.types import ChatMessage, ToolCall
from semspec.model.tokens import count_tokens

WORDS = [
    "prince",
    "andrew",
    "natasha",
    "pierre",
    "moscow",
    "battle",
    "army",
    "letter",
    "count",
    "princess",
    "evening",
    "soldiers",
    "general",
    "house",
    "society",
    "dinner",
    "horses",
    "snow",
    "road",
    "field",
    "regiment",
    "emperor",
    "said",
    "looked",
    "smiled",
    "thought",
    "remembered",
    "felt",
    "began",
    "went",
    "came",
    "asked",
    "answered",
]
TURNS = 60
DIFF_TOKENS = 88_000
JSON_BYTES = 5_000_000


def prose_line(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))


def big_diff(target_tokens: int) -> str:
    """A unified diff over many chapters, about ``target_tokens`` long."""
    rng = random.Random(7)
    parts: list[str] = []
    tokens = 0
    chapter = 0
    while tokens < target_tokens:
        chapter += 1
        lines = [f"diff --git a/book/ch{chapter:03d}.txt b/book/ch{chapter:03d}.txt"]
        lines += [f"--- a/book/ch{chapter:03d}.txt", f"+++ b/book/ch{chapter:03d}.txt"]
        for hunk in range(4):
            lines.append(f"@@ -{hunk * 40 + 1},12 +{hunk * 40 + 1},14 @@")
            for _ in range(12):
                marker = rng.choice(" +- ")
                lines.append(marker + prose_line(rng))
        block = "\n".join(lines) + "\n"
        parts.append(block)
        tokens += count_tokens(block)
    return "".join(parts)


def big_json(target_bytes: int) -> str:
    """A JSON tool output (search results with metadata) of about ``target_bytes``."""
    rng = random.Random(11)
    items: list[dict[str, object]] = []
    size = 0
    while size < target_bytes:
        item = {
            "id": len(items),
            "path": f"src/module_{rng.randint(0, 999)}/file_{len(items)}.py",
            "score": round(rng.random(), 4),
            "snippet": prose_line(rng),
            "tags": rng.sample(WORDS, 3),
        }
        items.append(item)
        size += len(json.dumps(item)) + 2
    return json.dumps({"query": "natasha", "total": len(items), "results": items})


def small_output(rng: random.Random) -> str:
    return "\n".join(f"{i:>6}| {prose_line(rng)}" for i in range(1, rng.randint(20, 60)))


def pointer_savings(payload: str) -> tuple[int, int]:
    """Tokens of ``payload`` and of the message that replaces it."""
    compactor = TraceCompactor(ContextBudgetPolicy.for_window(128_000))
    message = compactor.admit_tool_output("call", "read", payload)
    return count_tokens(payload), count_tokens(message.content)


def replay(outputs: list[str]) -> tuple[list[float], list[float]]:
    """Per-turn seconds with the policy and without it, interleaved in one process."""
    policy = ContextBudgetPolicy.for_window(128_000)
    compactor = TraceCompactor(policy)
    with_policy: list[ChatMessage] = [ChatMessage("system", "s" * 2000), ChatMessage("user", "t")]
    without: list[ChatMessage] = list(with_policy)
    timed_with: list[float] = []
    timed_without: list[float] = []
    for turn, output in enumerate(outputs):
        call = ToolCall(f"c{turn}", "read", {"path": f"f{turn}.txt"})
        assistant = ChatMessage("assistant", "", (call,))

        start = time.perf_counter()
        without.append(assistant)
        without.append(ChatMessage("tool", output, tool_call_id=call.id, name="read"))
        timed_without.append(time.perf_counter() - start)

        start = time.perf_counter()
        with_policy.append(assistant)
        with_policy.append(compactor.admit_tool_output(call.id, "read", output))
        compactor.prepare(with_policy)
        timed_with.append(time.perf_counter() - start)
    return timed_with, timed_without


def main() -> None:
    diff, blob = big_diff(DIFF_TOKENS), big_json(JSON_BYTES)
    diff_before, diff_after = pointer_savings(diff)
    json_before, json_after = pointer_savings(blob)
    saved_diff = 1 - diff_after / diff_before
    saved_json = 1 - json_after / json_before
    print(f"diff  : {diff_before:>9,} tokens -> {diff_after:>5,} ({saved_diff:.2%} saved)")
    print(f"json  : {json_before:>9,} tokens -> {json_after:>5,} ({saved_json:.2%} saved)")

    rng = random.Random(3)
    outputs = [small_output(rng) for _ in range(TURNS)]
    outputs[TURNS // 3] = diff
    outputs[2 * TURNS // 3] = blob
    timed_with, timed_without = replay(outputs)
    med_with = statistics.median(timed_with) * 1000
    med_without = statistics.median(timed_without) * 1000
    added = med_with - med_without
    worst = max(timed_with) * 1000
    print(f"turns : {TURNS}, median {med_with:.3f} ms with policy vs {med_without:.4f} ms without")
    print(f"added : {added:.3f} ms per turn (median); slowest turn with policy {worst:.1f} ms")
    ratio = med_with / med_without if med_without else float("inf")
    print(f"ratio : {ratio:.1f}x a bare append (the bare append is a list operation)")
    print(
        json.dumps(
            {
                "tokens_saved": round(min(saved_diff, saved_json), 5),
                "added_ms": round(added, 3),
                "diff_tokens": [diff_before, diff_after],
                "json_tokens": [json_before, json_after],
                "slowest_turn_ms": round(worst, 1),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Both payloads stay over the payload gate (8,000 tokens at this window), so they pointerize.
    parser.add_argument("--quick", action="store_true", help="a 10K-token diff, 64 KB, 6 turns")
    if parser.parse_args().quick:
        DIFF_TOKENS, JSON_BYTES, TURNS = 10_000, 64_000, 6
    main()
