"""``semspec index`` at two sizes: full index, re-index after one changed file, peak memory.

Two trees are built from packages installed in this environment (copied, committed to a fresh
git repository): small = rdflib, large = rdflib + temporalio + openai. Each is indexed by the
previous algorithm (the commit before the index record, exported with ``git archive``; it reads
and hashes every file on every run) and by the current one, side by side in this one process.
Every index runs as its own ``semspec index --json`` subprocess, so peak memory is that
process's own ``ru_maxrss`` (its parse processes' peaks, summed, are reported apart). Then one
line of one mid-sized file is changed and each algorithm re-indexes.

Usage: ``python bench/index_scale.py [--workers N|auto] [--sizes small,large]`` (``--quick``:
markupsafe alone, what a test runs). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
PACKAGES = {
    "small": ("rdflib",),
    "large": ("rdflib", "temporalio", "openai"),
    "tiny": ("markupsafe",),  # --quick
}
RECORD_FILE = "semspec/knowledge/code_index/index_record.py"

# Runs `semspec` from the given source root and prints the process's own peak memory (and its
# children's) to stderr as the last line, after the command's own output.
DRIVER = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from semspec.cli.app import app
try:
    app(["--repo", sys.argv[2], "index", "--json"])
except SystemExit:
    pass
sys.stdout.flush()
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_kb": own}), file=sys.stderr)
"""

IMPORTS = """
import resource, sys
sys.path.insert(0, sys.argv[1])
import pyoxigraph, rdflib, tree_sitter
from semspec.cli.app import main
from semspec.knowledge.code_index import index_repository
from semspec.graph.store import embedded_store
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def baseline_source(into: Path) -> tuple[str, Path]:
    """The commit before the index record, exported under ``into``. ``--follow``: the record
    was added under ``semspec/processors/`` and moved since, which is not its adding."""
    added = subprocess.run(
        ["git", "log", "--follow", "--format=%H", "--diff-filter=A", "--", RECORD_FILE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    rev = f"{added}^" if added else "HEAD"
    archive = subprocess.run(
        ["git", "archive", rev, "semspec"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    return commit, into


def build_tree(root: Path, packages: tuple[str, ...]) -> tuple[int, int]:
    """Copy ``packages`` (without caches) into a new git repository; (files, lines) of Python."""
    root.mkdir(parents=True)
    for name in packages:
        shutil.copytree(
            SITE / "site-packages" / name, root / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "t")
    sources = [p for p in root.rglob("*.py") if ".git" not in p.parts]
    lines = sum(p.read_bytes().count(b"\n") for p in sources)
    return len(sources), lines


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, env=_env())


def _env() -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "TMPDIR")
    return {k: os.environ[k] for k in keep if k in os.environ} | {"SEMSPEC_LOG_LEVEL": "warning"}


def run_index(source: Path, repo: Path) -> dict[str, float | str | None]:
    """One ``semspec index --json`` in a subprocess: wall time, peaks, its own timings."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(source), str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    watcher = DescendantPeaks(proc.pid)
    watcher.start()
    out, err = proc.communicate()
    watcher.stop.set()
    watcher.join()
    wall = time.perf_counter() - started
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if done.returncode != 0:
        raise SystemExit(f"index failed in {repo}:\n{done.stderr[-2000:]}")
    peaks = json.loads(done.stderr.strip().splitlines()[-1])
    report = json.loads(done.stdout)
    timings = report.get("timings", {})
    return {
        "wall_s": round(wall, 3),
        "index_s": timings.get("total_s"),
        "peak_mb": round(peaks["peak_kb"] / 1024, 1),
        "descendants_peak_mb": round(sum(watcher.peaks_kb.values()) / 1024, 1),
        "indexed": len(report["indexed"]),
        "baseline": report.get("baseline", "graph"),
        "workers": report.get("workers"),
    }


class DescendantPeaks(threading.Thread):
    """Samples the peak RSS (``VmHWM``) of every process below ``root`` (the parse pool runs
    under a fork server, so the index process's own rusage does not see it)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.peaks_kb: dict[int, int] = {}

    def run(self) -> None:
        while not self.stop.wait(0.2):
            for pid in _descendants(self.root):
                peak = _vm_hwm_kb(pid)
                if peak:
                    self.peaks_kb[pid] = max(peak, self.peaks_kb.get(pid, 0))


def _descendants(root: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [root]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, parent in parents.items() if parent == current]
        found.extend(children)
        frontier.extend(children)
    return found


def _vm_hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def change_one_file(repo: Path) -> str:
    """Append a line to the file of median size (a typical file, not the largest)."""
    sources = sorted(
        (p for p in repo.rglob("*.py") if ".git" not in p.parts), key=lambda p: p.stat().st_size
    )
    target = sources[len(sources) // 2]
    with target.open("a", encoding="utf-8") as handle:
        handle.write("\nBENCH_CHANGED = 1\n")
    return target.relative_to(repo).as_posix()


def import_floor(source: Path) -> float:
    """Peak memory (MB) of a process that only imports what the index needs."""
    out = subprocess.run(
        [sys.executable, "-c", IMPORTS, str(source)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(),
    ).stdout
    return round(int(out.strip()) / 1024, 1)


def write_workers(repo: Path, workers: str) -> None:
    config = repo / ".semspec" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"index:\n  workers: {workers}\n", encoding="utf-8")


def measure(size: str, work: Path, old: Path, workers: list[str]) -> dict[str, Any]:
    """Full and one-change runs of both algorithms over fresh trees of ``size``, interleaved so
    both see the same background load; the current one fully once per ``workers`` setting."""
    trees = {name: work / f"{size}-{name}" for name in ("previous", "current")}
    for tree in trees.values():
        files, lines = build_tree(tree, PACKAGES[size])
    results: dict[str, Any] = {"files": files, "lines": lines, "full_by_workers": {}}
    results["previous_full"] = run_index(old, trees["previous"])
    for setting in workers:
        shutil.rmtree(trees["current"] / ".semspec", ignore_errors=True)
        write_workers(trees["current"], setting)
        results["full_by_workers"][setting] = run_index(ROOT, trees["current"])
    results["current_full"] = results["full_by_workers"][workers[-1]]
    changed = change_one_file(trees["previous"])
    assert change_one_file(trees["current"]) == changed
    results["previous_one_change"] = run_index(old, trees["previous"])
    results["current_one_change"] = run_index(ROOT, trees["current"])
    results["changed"] = changed
    print(json.dumps({"size": size, **results}), flush=True)
    for tree in trees.values():
        shutil.rmtree(tree)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        default="auto",
        help="index.workers settings for the current full runs, comma-separated (the last one "
        "is the run the summary uses)",
    )
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--quick", action="store_true", help="one tiny tree, one worker setting")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.workers = "tiny", "1"
    with tempfile.TemporaryDirectory(prefix="index-scale-") as tmp:
        work = Path(tmp)
        commit, old = baseline_source(work / "previous-source")
        floor = import_floor(ROOT)
        print(json.dumps({"baseline_commit": commit, "import_floor_mb": floor}), flush=True)
        workers = args.workers.split(",")
        sizes = {size: measure(size, work, old, workers) for size in args.sizes.split(",")}
    summary: dict[str, object] = {"baseline_commit": commit, "import_floor_mb": floor}
    for size, found in sizes.items():
        summary[f"lines_{size}"] = found["lines"]
        summary[f"files_{size}"] = found["files"]
    if {"small", "large"} <= sizes.keys():
        summary |= _targets(sizes["small"], sizes["large"])
    summary["cpus"] = os.cpu_count()
    summary["workers"] = args.workers
    print(json.dumps(summary))


def _targets(small: dict[str, Any], large: dict[str, Any]) -> dict[str, Any]:
    full, incremental = large["current_full"], large["current_one_change"]
    peak_small = max(small["current_full"]["peak_mb"], small["current_one_change"]["peak_mb"])
    peak_large = max(full["peak_mb"], incremental["peak_mb"])
    was_full, was_incremental = large["previous_full"], large["previous_one_change"]
    return {
        "full_s_large": full["index_s"],
        "incremental_s_large": incremental["index_s"],
        "incremental_ratio": round(full["index_s"] / incremental["index_s"], 1),
        "peak_mb_large": peak_large,
        "peak_mb_small": peak_small,
        "memory_growth": round(peak_large / peak_small, 2),
        "parse_processes_peak_mb_large": full["descendants_peak_mb"],
        "full_wall_s_large": full["wall_s"],
        "incremental_wall_s_large": incremental["wall_s"],
        "previous_full_wall_s_large": was_full["wall_s"],
        "previous_incremental_wall_s_large": was_incremental["wall_s"],
        "previous_peak_mb_large": max(was_full["peak_mb"], was_incremental["peak_mb"]),
        "full_wall_ratio_vs_previous": round(was_full["wall_s"] / full["wall_s"], 2),
        "incremental_wall_ratio_vs_previous": round(
            was_incremental["wall_s"] / incremental["wall_s"], 1
        ),
        "full_wall_s_large_by_workers": {
            k: v["wall_s"] for k, v in large["full_by_workers"].items()
        },
    }


if __name__ == "__main__":
    main()
