"""Token estimator and checkpoint-branch benchmarks, each side by side with its baseline.

1. A ~1 MB synthetic diff re-counted across 20 iterations with a few lines changed each time:
   the cached ``TokenEstimator`` against plain tiktoken (the same offline cl100k encoding, no
   cache) on the same texts. Tokens per second of each, median over rounds, and the ratio.
2. A checkpoint branch of the changed paths: semspec's snapshot (pygit2 reads the base tree
   and hashes the files; new blobs, trees and the commit go into one pack; pygit2 creates the
   branch) against the ``git`` CLI doing the same in subprocesses (``add`` the paths,
   ``write-tree``, ``commit-tree``, ``branch``), median of N each, in a 300-file and a 30-file
   repository; both sides are given the paths the loop knows changed, and both must produce
   the same tree. Every timed run starts after ``os.sync()``, so neither side pays for the
   other's pending write-back.

The last line is one JSON object with ``estimator_ratio`` and ``git_ratio`` plus raw figures.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2

from semspec.model.tokens import load_offline
from semspec.workflow.context.estimator import TokenEstimator
from semspec.workflow.git.snapshot import snapshot_branch

ITERATIONS = 20
ESTIMATOR_ROUNDS = 3
GIT_ROUNDS = 41
REPO_SIZES = (300, 30)
"""Files in the benchmark repository; the first size gives ``git_ratio``."""
SIGNATURE = pygit2.Signature("bench", "bench@semspec.invalid", 1_700_000_000, 0)


def diff_texts(target_bytes: int = 1_000_000, seed: int = 11) -> list[str]:
    """ITERATIONS versions of one large diff, each with three lines changed from the last."""
    rnd = random.Random(seed)
    words = ["def", "return", "self.items", "for x in y:", "if ok:", "raise Error(", "0x1F", "…"]
    lines: list[str] = []
    size = 0
    while size < target_bytes:
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


def make_repo(path: Path, files: int) -> None:
    repo = pygit2.init_repository(str(path), initial_head="main")
    for number in range(files):
        target = path / f"pkg{number % 10}" / f"module_{number}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"VALUE_{number} = {number}\n" * 40, encoding="utf-8")
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    repo.create_commit("refs/heads/main", SIGNATURE, SIGNATURE, "initial", tree, [])


def touch(path: Path, round_number: int, files: int) -> list[str]:
    """Change three files; return their repo-relative paths."""
    changed = []
    for offset in range(3):
        rel = f"pkg0/module_{(round_number * 3 + offset) * 10 % files}.py"
        (path / rel).write_text(f"changed = {round_number}\n", encoding="utf-8")
        changed.append(rel)
    return changed


def checkpoint_pygit2(path: Path, name: str, changed: list[str]) -> None:
    """semspec's checkpoint: a snapshot commit of the changed paths, then the branch."""
    snapshot_branch(path, path, "HEAD", "HEAD", changed, name, name)


def checkpoint_cli(path: Path, name: str, changed: list[str]) -> None:
    """The same with git plumbing: stage the changed paths, write the tree, commit, branch."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=path, capture_output=True, text=True, check=True, env=GIT_ENV
        )
        return done.stdout.strip()

    git("add", "--", *changed)
    tree = git("write-tree")
    commit = git("commit-tree", tree, "-p", "HEAD", "-m", name)
    git("branch", name, commit)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@semspec.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@semspec.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
    "PATH": "/usr/bin:/bin",
}


def bench_git(files: int) -> tuple[float, float]:
    """Median milliseconds of a pygit2 and a git CLI checkpoint in a repository of ``files``."""
    with tempfile.TemporaryDirectory() as tmp:
        pygit2_repo, cli_repo = Path(tmp) / "pygit2", Path(tmp) / "cli"
        make_repo(pygit2_repo, files)
        shutil.copytree(pygit2_repo, cli_repo)
        pygit2_times, cli_times = [], []
        changed: set[str] = set()  # what the loop's diff against the base would name
        for number in range(GIT_ROUNDS):
            name = f"semspec/checkpoint/bench/{number}"
            changed.update(touch(pygit2_repo, number, files))
            touch(cli_repo, number, files)
            paths = sorted(changed)
            # Each side starts with nothing left to write back, so neither pays for the
            # other's pending file system work (git itself syncs refs it writes).
            os.sync()
            start = time.perf_counter()
            checkpoint_pygit2(pygit2_repo, name, paths)
            pygit2_times.append(time.perf_counter() - start)
            os.sync()
            start = time.perf_counter()
            checkpoint_cli(cli_repo, name, paths)
            cli_times.append(time.perf_counter() - start)
        trees = [
            pygit2.Repository(str(path)).branches.local[name].peel(pygit2.Commit).tree_id
            for path in (pygit2_repo, cli_repo)
        ]
        assert trees[0] == trees[1], "pygit2 and git CLI checkpoints hold different trees"
    pygit2_ms = statistics.median(pygit2_times) * 1000
    cli_ms = statistics.median(cli_times) * 1000
    print(f"checkpoint branch ({files} files, 3 changed), median of {GIT_ROUNDS}")
    print(f"  pygit2   {pygit2_ms:>8.2f} ms")
    print(f"  git CLI  {cli_ms:>8.2f} ms")
    print(f"  ratio    {cli_ms / pygit2_ms:>8.1f}x")
    return pygit2_ms, cli_ms


def main() -> None:
    figures = bench_estimator()
    for position, files in enumerate(REPO_SIZES):
        pygit2_ms, cli_ms = bench_git(files)
        suffix = "" if position == 0 else f"_{files}_files"
        figures[f"git_ratio{suffix}"] = cli_ms / pygit2_ms
        figures[f"git_pygit2_ms{suffix}"] = pygit2_ms
        figures[f"git_cli_ms{suffix}"] = cli_ms
    print(json.dumps({key: round(value, 3) for key, value in figures.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
