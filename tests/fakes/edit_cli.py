"""A stand-in coding-agent CLI that makes one edit in place, as the task's prompt asks.

It reads the prompt on stdin and looks for ``EDIT<<old>>INTO<<new>>`` (a task's criterion in
the scenario tests): it replaces the first ``old`` with ``new`` in the file ``--file`` of the
current folder (the task's worktree) and prints a one-line summary. Unlike a scripted developer,
which writes whole files, it keeps whatever else the file holds, so a test can see on which
tree the task ran. ``HOLD<<path>>`` in the prompt makes it wait, before editing, until ``path``
exists (at most ``--hold-s`` seconds), so a test can look at other tasks while this one runs.
Only the standard library: it runs under whatever environment the agent gets.

Run: ``python edit_cli.py --file PATH [--hold-s SECONDS]`` with the prompt on stdin.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

EDIT = re.compile(r"EDIT<<(.+?)>>INTO<<(.+?)>>")
HOLD = re.compile(r"HOLD<<(.+?)>>")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", required=True)
    parser.add_argument("--hold-s", type=float, default=120.0)
    args = parser.parse_args()
    prompt = sys.stdin.read()
    hold = HOLD.search(prompt)
    if hold is not None:
        deadline = time.monotonic() + args.hold_s
        while not Path(hold.group(1)).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    edit = EDIT.search(prompt)
    if edit is None:
        print("no EDIT<<old>>INTO<<new>> in the prompt", file=sys.stderr)
        return 2
    old, new = edit.group(1), edit.group(2)
    path = Path(args.file)
    text = path.read_text(encoding="utf-8")
    if old not in text:
        print(f"{old!r} is not in {path}", file=sys.stderr)
        return 2
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    print(f"replaced {old!r} with {new!r} in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
