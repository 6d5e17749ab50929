"""How long the CLI takes to answer, beside the floors it cannot go below.

Measured as subprocesses, as a user runs them, in ``ROUNDS`` interleaved rounds (every command
once per round, so all see the same machine load); the figures are medians:

* ``help_s``: ``semspec --help`` (target at most 0.15 s). Baselines: ``floor_s``, ``python -c
  pass`` (the interpreter's own start), and ``typer_help_s``, a two-command typer app printing
  its help the same way (typer and rich alone).
* ``task_list_s`` and ``escalations_list_s`` against a stack ``semspec up`` started in a fresh
  repository (target at most 0.35 s for the slower one, ``list_s``). Baseline
  ``temporal_list_s``: a script that imports Temporal's client, connects to the same server and
  lists the task workflows, the floor of any command that asks Temporal anything; and
  ``typer_list_s``, the same list as a command of a bare typer app that prints it as a rich
  table, the floor of such a command in a typer CLI (typer >= 0.16 builds a pydantic validator
  for each parameter when a command runs, so a command imports pydantic where help does not).
* ``task_list_2_tasks_s`` and ``escalations_list_1_s``: the same lists once the stack holds one
  approved and one escalated task; each row costs a status query or a result fetch besides.

Every service started here is stopped here (``semspec down`` stops what ``up`` started, by PID);
the repository lives in a temporary folder. The last line printed is one JSON object. ``--quick``
(one round, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import yaml

from semspec.core.run_folder import load_records

ROUNDS = 10
WARM = True
HELP_TARGET_S = 0.15
LIST_TARGET_S = 0.35
SIGNATURE = pygit2.Signature("semspec bench", "bench@semspec.invalid", 1_700_000_000, 0)

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BROKEN = "def add(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}
CHECK = "import calc; assert calc.add(2, 3) == 5"

TYPER_APP = """
import typer
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
@app.command()
def first(flag: bool = typer.Option(False, help="A flag.")) -> None:
    '''The first command.'''
@app.command()
def second(name: str = typer.Argument(..., help="A name.")) -> None:
    '''The second command.'''
app()
"""

# os._exit as the CLI does: Temporal's native threads can abort a normal interpreter exit.
TEMPORAL_LIST = """
import asyncio, os, sys
from temporalio.client import Client
async def main():
    client = await Client.connect(sys.argv[1])
    async for _ in client.list_workflows("WorkflowType = 'TaskWorkflow'"):
        pass
asyncio.run(main())
sys.stdout.flush()
os._exit(0)
"""

TYPER_LIST = """
import os, sys
import typer
app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
@app.command()
def other() -> None:
    '''A second command, so that `list` is a subcommand as in the CLI.'''
@app.command("list")
def list_cmd(address: str = typer.Argument(...), state: str | None = typer.Option(None)) -> None:
    '''List the task workflows as a table.'''
    import asyncio
    from rich.console import Console
    from rich.table import Table
    from temporalio.client import Client
    async def main():
        client = await Client.connect(address)
        return [wf async for wf in client.list_workflows("WorkflowType = 'TaskWorkflow'")]
    rows = asyncio.run(main())
    table = Table()
    for column in ("task", "state"):
        table.add_column(column)
    for wf in rows:
        table.add_row(wf.id, wf.status.name)
    Console().print(table)
    sys.stdout.flush()
    os._exit(0)
app()
"""


def environment(home: Path) -> dict[str, str]:
    """What every subprocess gets: a path, a home, a fixed width and quiet logs."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "COLUMNS": "100",
        "SEMSPEC_LOG_FORMAT": "json",
        "SEMSPEC_LOG_LEVEL": "WARNING",
    }


def semspec_argv() -> list[str]:
    """The ``semspec`` console script of this interpreter, else ``python -m semspec``."""
    script = Path(sys.executable).parent / "semspec"
    return [str(script)] if script.exists() else [sys.executable, "-m", "semspec"]


def run(argv: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    """Run ``argv``; its stdout, or an error with its stderr when it fails."""
    done = subprocess.run(
        list(argv), capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def timed(argv: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds ``argv`` takes from start to exit (it must succeed)."""
    started = time.perf_counter()
    run(argv, env, cwd)
    return time.perf_counter() - started


def sample_repo(root: Path) -> Path:
    """A git repository with calc.py, one gate and embedded services on free ports."""
    repo = root / "repo"
    config = {
        "project": {"name": "bench", "base_branch": "main"},
        "gates": {
            "preset": "none",
            "additional": [{"name": "check", "command": f'{sys.executable} -c "{CHECK}"'}],
        },
        "loop": {"max_retries": 1},
        "services": {"nats": {"port": 0}, "temporal": {"port": 0, "ui_port": 0}},
    }
    files = {
        "calc.py": "def add(a, b):\n    return a + b\n",
        ".semspec/config.yaml": yaml.safe_dump(config, sort_keys=False),
        ".semspec/.gitignore": "run/\ngraph/\n",
    }
    git = pygit2.init_repository(str(repo), initial_head="main")
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    git.index.add_all()
    git.index.write()
    tree = git.index.write_tree()
    git.create_commit("refs/heads/main", SIGNATURE, SIGNATURE, "initial", tree, [])
    return repo


@dataclass(frozen=True)
class BenchStack:
    """A stack ``semspec up`` started in a fresh sample repository, and how to reach it."""

    root: Path
    repo: Path
    env: dict[str, str]
    cli: list[str]
    address: str
    """The Temporal server's address."""


@contextmanager
def bench_stack(prefix: str) -> Iterator[BenchStack]:
    """``semspec up`` in a sample repository of a temporary folder; ``semspec down`` after."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        repo = sample_repo(root)
        env = {**environment(root), "SEMSPEC_REPO": str(repo)}
        cli = semspec_argv()
        run([*cli, "up", "--json"], env, root, timeout=180)
        try:
            address = load_records(repo / ".semspec" / "run")["temporal"].address
            yield BenchStack(root, repo, env, cli, address)
        finally:
            run([*cli, "down"], env, root, timeout=120)


def submit(cli: list[str], root: Path, env: dict[str, str], task_id: str, steps: Any) -> None:
    """Submit a scripted task on calc.py and wait until it is approved or escalated."""
    script = root / f"{task_id}.yaml"
    script.write_text(yaml.safe_dump({"iterations": steps}), encoding="utf-8")
    argv = [*cli, "task", "submit", task_id, "--id", task_id, "--file", "calc.py"]
    argv += ["--criterion", "sub(a, b) returns a - b", "--script", str(script), "--wait"]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=root, timeout=300, check=False
    )
    if done.returncode not in (0, 3):  # approved, escalated
        output = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"task {task_id} exited {done.returncode}:\n{output}")


def interleaved(
    commands: dict[str, list[str]], env: dict[str, str], cwd: Path, rounds: int, warm: bool
) -> dict[str, Any]:
    """Median, min and max seconds of each command over ``rounds`` interleaved rounds (every
    command once per round, so all see the same machine load)."""
    for argv in commands.values() if warm else ():  # warm the file cache and the bytecode once
        run(argv, env, cwd)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            times[name].append(timed(argv, env, cwd))
    return {
        name: {"median": statistics.median(ts), "min": min(ts), "max": max(ts)}
        for name, ts in times.items()
    }


def with_tasks(cli: list[str], root: Path, env: dict[str, str]) -> dict[str, Any]:
    """Submit one task that is approved and one that escalates; time both lists again."""
    approve = [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}]
    submit(cli, root, env, "approved", approve)
    broken = [{"developer": {"write": {"calc.py": BROKEN + "#" * n + "\n"}}} for n in (1, 2)]
    submit(cli, root, env, "escalated", broken)
    rows = json.loads(run([*cli, "task", "list", "--json"], env, root))
    pending = json.loads(run([*cli, "escalations", "list", "--json"], env, root))
    if len(rows) != 2 or len(pending) != 1:
        raise RuntimeError(f"expected 2 tasks and 1 escalation, got {rows} and {pending}")
    commands = {
        "task_list_2_tasks": [*cli, "task", "list"],
        "escalations_list_1": [*cli, "escalations", "list"],
    }
    return interleaved(commands, env, root, ROUNDS, WARM)


def main() -> None:
    load_before = os.getloadavg()[0]
    with bench_stack("semspec-cli-latency-") as stack:
        cli, address = stack.cli, stack.address
        commands = {
            "floor": [sys.executable, "-c", "pass"],
            "typer_help": [sys.executable, "-c", TYPER_APP, "--help"],
            "help": [*cli, "--help"],
            "temporal_list": [sys.executable, "-c", TEMPORAL_LIST, address],
            "typer_list": [sys.executable, "-c", TYPER_LIST, "list", address],
            "task_list": [*cli, "task", "list"],
            "escalations_list": [*cli, "escalations", "list"],
        }
        figures = interleaved(commands, stack.env, stack.root, ROUNDS, WARM)
        figures.update(with_tasks(cli, stack.root, stack.env))
    med = {name: round(f["median"], 3) for name, f in figures.items()}
    targets = {"help": HELP_TARGET_S, "task_list": LIST_TARGET_S, "escalations_list": LIST_TARGET_S}
    print(f"median of {ROUNDS} interleaved rounds, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load_before:.2f} -> "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'command':<20}{'median s':>10}{'min s':>8}{'max s':>8}{'- floor':>9}{'target':>8}")
    for name, f in figures.items():
        target = f"{targets[name]:.2f}" if name in targets else ""
        over = f["median"] - figures["floor"]["median"]
        print(
            f"{name:<20}{f['median']:>10.3f}{f['min']:>8.3f}{f['max']:>8.3f}{over:>9.3f}{target:>8}"
        )
    summary = {
        "help_s": med["help"],
        "list_s": max(med["task_list"], med["escalations_list"]),
        "floor_s": med["floor"],
        "task_list_s": med["task_list"],
        "escalations_list_s": med["escalations_list"],
        "typer_help_s": med["typer_help"],
        "temporal_list_s": med["temporal_list"],
        "typer_list_s": med["typer_list"],
        "task_list_2_tasks_s": med["task_list_2_tasks"],
        "escalations_list_1_s": med["escalations_list_1"],
        "help_target_s": HELP_TARGET_S,
        "list_target_s": LIST_TARGET_S,
        "rounds": ROUNDS,
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, no warm-up")
    if parser.parse_args().quick:
        ROUNDS, WARM = 1, False
    main()
