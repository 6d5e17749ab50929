"""The CLI answers ``--help`` without importing the heavy libraries its commands use.

Each command imports Temporal, NATS, the graph stores, git and the LLM clients when it runs;
building the app and printing help import none of them, and the commands that only talk to
Temporal (``task list``, ``escalations list``) import Temporal's client but not the workflow
code, the graph, git or the LLM clients (bench/cli_latency.py measures the time). Checked in
a subprocess, from the modules Python reports importing (``-X importtime``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "anthropic",
    "mcp",
    "nats",
    "openai",
    "oxrdflib",
    "pygit2",
    "pyoxigraph",
    "rdflib",
    "temporalio",
    "tiktoken",
    "tree_sitter",
)
"""Top-level packages that only commands which need them may import."""


def imported(*args: str, cwd: Path) -> set[str]:
    """Modules imported by ``python -X importtime ARGS``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(cwd), "COLUMNS": "100"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = set()
    for line in done.stderr.splitlines():
        # "import time:  self [us] | cumulative | <indent>package.module"
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "typer" in names, "no -X importtime lines read"
    return names


def packages(modules: set[str]) -> set[str]:
    """The top-level packages of ``modules``."""
    return {name.split(".")[0] for name in modules}


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("task", "--help"),
        ("task", "list", "--help"),
        ("escalations", "list", "--help"),
        ("mcp", "--help"),
        ("--version",),
    ],
    ids=" ".join,
)
def test_help_imports_none_of_the_heavy_libraries(args: tuple[str, ...], tmp_path: Path) -> None:
    heavy = packages(imported("-m", "semspec", *args, cwd=tmp_path)) & set(HEAVY)
    assert not heavy, f"semspec {' '.join(args)} imported {sorted(heavy)}"


def test_the_task_client_imports_temporal_but_not_the_workflow_code(tmp_path: Path) -> None:
    # What `task list` and `escalations list` import before they connect.
    code = "import semspec.cli.app, semspec.cli.task_cmd, semspec.client.task_client"
    modules = imported("-c", code, cwd=tmp_path)
    assert "temporalio.client" in modules
    heavy = packages(modules) & (set(HEAVY) - {"temporalio"})
    assert not heavy, f"the task client imported {sorted(heavy)}"
    assert "semspec.workflow.task.workflows" not in modules
