"""Token estimator benchmark, side by side with its baseline.

A ~1 MB synthetic diff re-counted across 20 iterations with a few lines changed each time: the
cached ``TokenEstimator`` against plain tiktoken (the same offline cl100k encoding, no cache)
on the same texts. Tokens per second of each, median over rounds, and the ratio. (Checkpoint
branches have their own benchmark: ``bench/checkpoint.py``.)

The last line is one JSON object with ``estimator_ratio`` plus raw figures. ``--quick`` (a
20 KB diff, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable

from semspec.model.tokens import load_offline
from semspec.workflow.context.estimator import TokenEstimator

ITERATIONS = 20
ESTIMATOR_ROUNDS = 3
DIFF_BYTES = 1_000_000


def diff_texts(seed: int = 11) -> list[str]:
    """ITERATIONS versions of one large diff, each with three lines changed from the last."""
    rnd = random.Random(seed)
    words = ["def", "return", "self.items", "for x in y:", "if ok:", "raise Error(", "0x1F", "…"]
    lines: list[str] = []
    size = 0
    while size < DIFF_BYTES:
        if len(lines) % 40 == 0:
            line = f"@@ -{len(lines)},7 +{len(lines)},8 @@ def hunk_{len(lines)}():\n"
        else:
            body = " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 9)))
            line = f"{rnd.choice('+- ')}    {body}  # {rnd.randint(0, 99_999)}\n"
        lines.append(line)
        size += len(line)
    texts = []
    for iteration in range(ITERATIONS):
        for _ in range(3):
            lines[rnd.randrange(len(lines))] = f"+    changed_in_iteration_{iteration}()\n"
        texts.append("".join(lines))
    return texts


def tokens_per_second(count: Callable[[str], int], texts: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    tokens = sum(count(text) for text in texts)
    return tokens / (time.perf_counter() - start), tokens


def bench_estimator() -> dict[str, float]:
    texts = diff_texts()
    encoding = load_offline("cl100k_base")
    cached_rates, plain_rates = [], []
    for _ in range(ESTIMATOR_ROUNDS):
        # A fresh private cache each round: the first of the 20 counts is always cold.
        estimator = TokenEstimator("cl100k_base", max_entries=10_000)
        cached, cached_tokens = tokens_per_second(estimator.count, texts)
        plain, plain_tokens = tokens_per_second(lambda t: len(encoding.encode_ordinary(t)), texts)
        assert cached_tokens == plain_tokens, "cached and plain counts differ"
        cached_rates.append(cached)
        plain_rates.append(plain)
    cached_median = statistics.median(cached_rates)
    plain_median = statistics.median(plain_rates)
    print(f"diff: {len(texts[0]):,} chars x {ITERATIONS} iterations, 3 lines changed each")
    print(f"  cached estimator  {cached_median:>14,.0f} tokens/s")
    print(f"  plain tiktoken    {plain_median:>14,.0f} tokens/s")
    print(f"  ratio             {cached_median / plain_median:>14.1f}x")
    return {
        "estimator_ratio": cached_median / plain_median,
        "estimator_cached_tokens_per_s": cached_median,
        "estimator_plain_tokens_per_s": plain_median,
    }


def main() -> None:
    figures = bench_estimator()
    print(json.dumps({key: round(value, 3) for key, value in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 20 KB diff, 3 versions, 1 round")
    if parser.parse_args().quick:
        DIFF_BYTES, ITERATIONS, ESTIMATOR_ROUNDS = 20_000, 3, 1
    main()
