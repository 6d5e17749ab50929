"""False positives of the secret scan on material no one wrote for it, and what it costs.

Scans the lines the last ``--commits`` commits of a git repository added (``git log -p``), and
every line of the text files under ``--tree`` (a virtual environment's site-packages is a large,
varied sample), with the detectors ``semspec/core/secret_scan.py`` uses and, for comparison,
with the detect-secrets detectors it leaves out. No environment secrets are given, so every
finding is a false positive unless the material really holds a key. Prints per-detector counts
with a few examples, then one JSON object on its last line.

Run: ``python bench/secret_scan_noise.py --repo PATH --commits 400 --tree .venv/lib``
(``--quick``: this checkout's last 10 commits and ``bench/``, what a test runs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.high_entropy_strings import (
    Base64HighEntropyString,
    HexHighEntropyString,
)
from detect_secrets.plugins.ip_public import IPPublicDetector
from detect_secrets.plugins.keyword import KeywordDetector

from semspec.core.secret_scan import SecretScan

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".py", ".txt", ".md", ".rst", ".cfg", ".toml", ".ini", ".json", ".yaml", ".yml"}
LEFT_OUT: tuple[BasePlugin, ...] = (
    Base64HighEntropyString(),
    HexHighEntropyString(),
    KeywordDetector(),
    BasicAuthDetector(),
    IPPublicDetector(),
)


def added_lines(repo: Path, commits: int) -> Iterator[tuple[str, int, str]]:
    """``(path, 0, line)`` for each line the last ``commits`` non-merge commits added."""
    log = subprocess.run(
        ["git", "-C", str(repo), "log", f"-{commits}", "--no-merges", "-p", "--no-color"],
        capture_output=True,
        text=True,
        errors="replace",
        check=True,
    ).stdout
    path = ""
    for line in log.splitlines():
        if line.startswith("+++ "):
            path = line[6:]
        elif line.startswith("+"):
            yield path, 0, line[1:]


def tree_lines(root: Path) -> Iterator[tuple[str, int, str]]:
    """``(path, number, line)`` for each line of the text files under ``root``."""
    for path in sorted(root.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or not path.is_file() or path.is_symlink():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            yield str(path), number, line


def measure(name: str, lines: list[tuple[str, int, str]]) -> dict[str, object]:
    scan = SecretScan.of({})
    started = time.perf_counter()
    findings = scan.findings(lines)
    seconds = time.perf_counter() - started
    kinds = Counter(f.kind for f in findings)
    left_out: Counter[str] = Counter()
    for path, number, line in lines:
        for detector in LEFT_OUT:
            if detector.analyze_line(filename=path, line=line, line_number=number):
                left_out[str(detector.secret_type)] += 1
    print(f"{name}: {len(lines)} lines, {len(findings)} findings in {seconds:.2f} s")
    for finding in findings[:10]:
        print(f"  {finding.where()} ({finding.kind})")
    print(f"  left-out detectors would flag: {dict(left_out)}")
    return {
        "lines": len(lines),
        "findings": len(findings),
        "by_kind": dict(kinds),
        "left_out": dict(left_out),
        "lines_per_s": round(len(lines) / seconds) if seconds else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="a git repository (its added lines)")
    parser.add_argument("--commits", type=int, default=400)
    parser.add_argument("--tree", type=Path, help="a folder of text files (all their lines)")
    parser.add_argument(
        "--quick", action="store_true", help="this checkout's last 10 commits and its bench/"
    )
    args = parser.parse_args()
    if args.quick:
        args.repo, args.commits, args.tree = ROOT, 10, ROOT / "bench"
    result: dict[str, object] = {}
    if args.repo:
        lines = list(added_lines(args.repo, args.commits))
        result["repo"] = {"commits": args.commits, **measure(str(args.repo), lines)}
    if args.tree:
        result["tree"] = measure(str(args.tree), list(tree_lines(args.tree)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
