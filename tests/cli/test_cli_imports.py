"""The CLI answers ``--help`` without importing the heavy libraries its commands use.

Each command imports Temporal, NATS, the graph stores, git and the LLM clients when it runs;
building the app and printing help import none of them, and the commands that only talk to
Temporal (``task list``, ``escalations list``) import Temporal's client but not the workflow
code, the graph, git or the LLM clients; against a real stack with nothing to list they import
neither structlog nor the workflow's messages, and build the config's models before Temporal's
client is imported (bench/cli_latency.py measures the time). Checked in a subprocess, from the
modules Python reports importing (``-X importtime``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.support.stack import Stack, running_stack, sample_config

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


def imported(*args: str, cwd: Path) -> list[str]:
    """Modules imported by ``python -X importtime ARGS``, in the order their imports ended."""
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
    names = []
    for line in done.stderr.splitlines():
        # "import time:  self [us] | cumulative | <indent>package.module"
        if line.startswith("import time:") and line.count("|") == 2:
            names.append(line.rsplit("|", 1)[1].strip())
    assert "typer" in names, "no -X importtime lines read"
    return names


def packages(modules: Iterable[str]) -> set[str]:
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


@pytest.fixture(scope="module")
def empty_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """``semspec up`` in a sample repository that never ran a task."""
    with running_stack(tmp_path_factory.mktemp("cli-imports"), sample_config([])) as stack:
        yield stack


@pytest.mark.parametrize("command", [("task", "list"), ("escalations", "list")], ids=" ".join)
def test_an_empty_list_imports_neither_structlog_nor_the_workflow_messages(
    command: tuple[str, ...], empty_stack: Stack
) -> None:
    modules = imported(
        "-m", "semspec", "--repo", str(empty_stack.repo), *command, cwd=empty_stack.root
    )
    assert "temporalio.client" in modules, "the command did not get as far as Temporal"
    assert "structlog" not in packages(modules)  # nothing was logged
    # The status types (and the event models they pull in) are needed only to show a task.
    assert "semspec.workflow.task.messages" not in modules
    assert "semspec.vocabulary.events" not in modules


def test_a_list_builds_the_config_models_before_it_imports_temporal(empty_stack: Stack) -> None:
    modules = imported(
        "-m", "semspec", "--repo", str(empty_stack.repo), "task", "list", cwd=empty_stack.root
    )
    first_temporal = next(i for i, name in enumerate(modules) if name.startswith("temporalio"))
    assert modules.index("semspec.core.config.models") < first_temporal
