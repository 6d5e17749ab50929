"""``semspec task land`` and ``semspec task export``: bring approved work onto the base branch.

``land`` starts a land on the stack's worker, signed with the owner's key (it runs gates; see
docs/landing.md), and waits for it. ``export`` needs no stack: it writes the task's commits as
``git format-patch`` files for people who review by hand.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json
from semspec.cli.runtime import jsonable, run_with_client
from semspec.core.errors import GitError, InputError

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.services.connect import Endpoints
    from semspec.workflow.land.landing import LandResult

EXIT_LAND_FAILED = 3
"""A conflict or a failing gate on the combined result: the work is there, not landed."""
EXIT_REFUSED = 1


def register(task_app: typer.Typer) -> None:
    """Add ``land`` and ``export`` to ``semspec task``."""
    task_app.command("land")(land_cmd)
    task_app.command("export")(export_cmd)


def land_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Id of an approved task."),
    merge: bool = typer.Option(
        False, "--merge", help="Land with a merge commit instead of rebasing on the base."
    ),
    push: str = typer.Option("", "--push", metavar="REMOTE", help="Push the base branch after."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Land an approved task on the base branch, gated on the result before the base moves.

    Fast-forward when the base has not moved, else rebase (or --merge) and run the required
    gates on the combined result. Exit 0 when landed, 3 on a conflict or a failing gate, 1
    when refused (a dirty checkout).
    """
    from semspec.client.land_client import land, land_input
    from semspec.core.owner_key import load_owner_key
    from semspec.workflow.land.landing import ALREADY_LANDED, LANDED, REFUSED

    cli = cli_context(ctx)
    owner = load_owner_key(cli.config, cli.repo)

    async def body(client: Client, endpoints: Endpoints) -> int:
        strategy = "merge" if merge else "rebase"
        inp = await land_input(
            client, cli.config, cli.repo, task_id, strategy=strategy, push_remote=push
        )
        result = await land(client, endpoints.task_queue, inp, owner)
        if as_json:
            print_json(cli.console, {"task_id": task_id, **jsonable(result)})
        else:
            _tell(cli.console, task_id, inp.base_branch, result)
        if result.outcome in (LANDED, ALREADY_LANDED):
            return 0
        return EXIT_REFUSED if result.outcome == REFUSED else EXIT_LAND_FAILED

    raise typer.Exit(run_with_client(cli, body))


def _tell(console: Any, task_id: str, base: str, result: LandResult) -> None:
    # The console's Land button says the same (client/land_text.py).
    from semspec.client.land_text import result_lines

    for line in result_lines(task_id, base, result):
        console.print(line, markup=False)


def export_cmd(
    ctx: typer.Context,
    task_id: str = typer.Argument(..., help="Task id."),
    out: Path = typer.Option(Path("patches"), "-o", "--output", help="Folder for the patches."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Write the task's commits since the base branch as patch files (git format-patch)."""
    cli = cli_context(ctx)
    base = cli.config.project.base_branch
    files = export_patches(cli.repo, task_id, base, out)
    # Already landed, or approved with no change: say so rather than print nothing.
    empty = f"no commits on semspec/task/{task_id} since {base}: nothing to export"
    if as_json:
        found: dict[str, Any] = {"task_id": task_id, "patches": [str(f) for f in files]}
        print_json(cli.console, found if files else found | {"reason": empty})
    elif not files:
        cli.console.print(empty, markup=False, soft_wrap=True)
    else:
        for path in files:
            cli.console.print(str(path), markup=False)


def export_patches(repo: Path, task_id: str, base_branch: str, out: Path) -> list[Path]:
    """``git format-patch BASE..semspec/task/ID`` into ``out``; the written files in order."""
    import pygit2

    from semspec.workflow.git.names import task_branch
    from semspec.workflow.git.repository import open_repository

    branch = task_branch(task_id)
    found = open_repository(repo)
    for name in (branch, base_branch):
        if found.branches.local.get(name) is None:
            raise InputError(
                f"no branch {name!r} in {repo}",
                hint="only a task that committed work has patches to export",
            )
    if not pygit2.reference_is_valid_name(f"refs/heads/{base_branch}"):
        raise InputError(f"{base_branch!r} is not a branch name")
    if not _commits_since(found, base_branch, branch):
        return []  # nothing to write: no empty folder either
    out = out.absolute()
    out.mkdir(parents=True, exist_ok=True)
    argv = ["git", "-C", str(repo), "format-patch", "--output-directory", str(out)]
    argv.append(f"refs/heads/{base_branch}..refs/heads/{branch}")
    from semspec.core.sandbox import child_env  # the config models load only for an export

    done = subprocess.run(argv, capture_output=True, text=True, env=child_env(), check=False)
    if done.returncode != 0:
        raise GitError(f"git format-patch failed: {done.stderr.strip()}", repo=str(repo))
    return [Path(line) for line in done.stdout.splitlines() if line.strip()]


def _commits_since(repo: Any, base_branch: str, branch: str) -> bool:
    """Whether ``branch`` has a commit that ``base_branch`` does not (``BASE..BRANCH``)."""
    import pygit2

    tip = repo.branches.local[branch].target
    walker = repo.walk(tip, pygit2.enums.SortMode.NONE)
    walker.hide(repo.branches.local[base_branch].target)
    return next(iter(walker), None) is not None


def register_plan(plan_app: typer.Typer) -> None:
    """Add ``land`` to ``semspec plan``."""
    plan_app.command("land")(plan_land_cmd)


def plan_land_cmd(
    ctx: typer.Context,
    plan_id: str = typer.Argument(..., help="Plan id."),
    merge: bool = typer.Option(False, "--merge", help="Land with merge commits."),
    push: str = typer.Option("", "--push", metavar="REMOTE", help="Push the base branch after."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Land a plan's approved tasks, each after the tasks it depends on.

    Stops at the first task that does not land (exit codes as for ``task land``); tasks not
    approved are skipped with their state.
    """
    from semspec.client.land_client import land, land_input
    from semspec.client.plan_client import plan_status
    from semspec.core.owner_key import load_owner_key
    from semspec.workflow.land.landing import ALREADY_LANDED, LANDED, REFUSED

    cli = cli_context(ctx)
    owner = load_owner_key(cli.config, cli.repo)

    async def body(client: Client, endpoints: Endpoints) -> int:
        status = await plan_status(client, plan_id)
        rows: list[dict[str, Any]] = []
        code = 0
        for task in dependency_order(status.tasks):
            if task.state != "approved":
                rows.append({"task_id": task.task_id, "outcome": "skipped", "state": task.state})
                continue
            inp = await land_input(
                client,
                cli.config,
                cli.repo,
                task.task_id,
                strategy="merge" if merge else "rebase",
                push_remote=push,
            )
            result = await land(client, endpoints.task_queue, inp, owner)
            rows.append({"task_id": task.task_id, **jsonable(result)})
            if not as_json:
                _tell(cli.console, task.task_id, inp.base_branch, result)
            if result.outcome not in (LANDED, ALREADY_LANDED):
                code = EXIT_REFUSED if result.outcome == REFUSED else EXIT_LAND_FAILED
                break
        if as_json:
            print_json(cli.console, {"plan_id": plan_id, "tasks": rows})
        else:
            for row in rows:
                if row["outcome"] == "skipped":
                    cli.console.print(f"skipped {row['task_id']}: {row['state']}", markup=False)
        return code

    raise typer.Exit(run_with_client(cli, body))


def dependency_order(tasks: list[Any]) -> list[Any]:
    """The plan's tasks, each after those it depends on, otherwise in the plan's order."""
    ordered: list[Any] = []
    placed: set[str] = set()
    known = {task.task_id for task in tasks}
    pending = list(tasks)
    while pending:
        ready = [t for t in pending if all(d in placed or d not in known for d in t.depends_on)]
        if not ready:  # a cycle cannot pass plan validation; keep the rest in order anyway
            ready = pending[:1]
        for task in ready:
            ordered.append(task)
            placed.add(task.task_id)
        pending = [t for t in pending if t.task_id not in placed]
    return ordered
