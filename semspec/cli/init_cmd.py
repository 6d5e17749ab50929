"""``semspec init [PATH]``: write a commented config with a detected gate preset."""

from __future__ import annotations

from pathlib import Path

import typer

from semspec.cli.context import CliContext, cli_context
from semspec.core.errors import InputError
from semspec.core.path_refusal import os_refusal

_MARKERS = {
    "python": ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt"),
    "go": ("go.mod",),
    "node": ("package.json",),
    "rust": ("Cargo.toml",),
}

TEMPLATE = """\
# semspec configuration. Every key is optional; `semspec config show` prints the effective
# values and `semspec config validate` checks this file. Environment variables override keys:
# SEMSPEC_LOOP__MAX_RETRIES=5 sets loop.max_retries.

project:
  name: {name}
  base_branch: {branch}        # task branches start here

gates:
  preset: {preset}             # python | go | node | rust | none (configs/gates/<preset>.yaml)
  overrides: {{}}               # e.g. {{test: {{command: "pytest -q tests/unit", timeout: 300}}}}
  additional: []               # e.g. [{{name: docs, command: "make docs", required: false}}]

loop:
  max_retries: 3               # developer retries before escalating to a human
  max_iterations: 12
  # max_cost_usd: 5.00         # US$ a task may spend on models, then it asks you (docs/costs.md)

risk:                          # risk monitor thresholds; level = first response of the ladder
  retry_count: {{threshold: 3, level: escalate}}
  context_utilization: {{threshold: 0.70, level: pause}}
  scope_creep: {{level: warn}}
  conflicting_changes: {{threshold: 2, level: halt}}
  # steps: {{repeated_failure: {{threshold: 3}}}}   # stuck agents (docs/risk-monitor.md)

context:
  safety_margin: 0.20
  min_working_memory: 8000
  max_task_files: 4

models:
  developer: {{provider: scripted, model: scripted}}
  reviewer: {{provider: scripted, model: scripted}}

services:                      # leave nats.url / temporal.address unset for the embedded stack
  nats: {{}}                    # url, token, user, password, creds_file
  temporal: {{}}                # address, namespace, tls_cert, tls_key, api_key

graph:
  mode: embedded               # or sparql with query_url and update_url
"""


def detect_preset(repo: Path) -> str:
    """The gate preset matching the repository's build files, or ``none``."""
    for preset, markers in _MARKERS.items():
        if any((repo / marker).exists() for marker in markers):
            return preset
    return "none"


def _current_branch(repo: Path) -> str:
    head = repo / ".git" / "HEAD"
    try:
        ref = head.read_text(encoding="utf-8").strip()
    except OSError:
        return "main"
    return ref.removeprefix("ref: refs/heads/") if ref.startswith("ref: ") else "main"


def init_repo(repo: Path, force: bool = False) -> tuple[Path, str]:
    """Write ``.semspec/config.yaml`` and the SOP folder; return the path and preset.

    ``repo`` must be an existing directory inside a git repository: tasks run on git branches
    and worktrees.
    """
    import pygit2

    from semspec.core.config import config_path
    from semspec.services.git_exclude import exclude_from_git

    refusal = os_refusal(repo)
    if refusal is not None:
        raise InputError(f"{repo}: {refusal}", hint="pass the path of an existing repository")
    if not repo.is_dir():
        raise InputError(f"{repo} is not a directory", hint="pass an existing repository path")
    if pygit2.discover_repository(str(repo)) is None:
        raise InputError(
            f"{repo} is not in a git repository",
            hint=f"semspec works on git branches: run `git init {repo}` and commit, or pass "
            "the path of a git repository",
        )
    path = config_path(repo)
    if path.exists() and not force:
        raise InputError(
            f"{path} already exists", hint="pass --force to overwrite it, or edit it by hand"
        )
    preset = detect_preset(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    (repo / ".semspec" / "sources" / "docs" / "sops").mkdir(parents=True, exist_ok=True)
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in repo.resolve().name) or "project"
    path.write_text(
        TEMPLATE.format(name=name, branch=_current_branch(repo), preset=preset), encoding="utf-8"
    )
    gitignore = repo / ".semspec" / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("run/\ngraph/\n", encoding="utf-8")
    # The .gitignore above is the user's to keep or drop; info/exclude hides the run directory
    # (task worktrees) in this clone whatever they decide, without editing a tracked file.
    exclude_from_git(repo, repo / ".semspec" / "run")
    return path, preset


def register(app: typer.Typer) -> None:
    """Add ``init`` to the root app."""

    @app.command("init")
    def init(
        ctx: typer.Context,
        path: Path | None = typer.Argument(
            None, help="Repository to initialise (default: --repo, else the nearest to cwd)."
        ),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing config."),
    ) -> None:
        """Write a commented .semspec/config.yaml with a gate preset detected from the repo."""
        obj = ctx.find_root().obj
        console = obj.console if isinstance(obj, CliContext) else None
        target = path.resolve() if path is not None else cli_context(ctx).repo
        written, preset = init_repo(target, force)
        message = (
            f"wrote {written} (gate preset: {preset}); add SOPs under .semspec/sources/docs/sops/"
        )
        if preset == "none":
            # Without gates every task passes them: say so before the first task does.
            message += (
                "\nno build file found (pyproject.toml, setup.py, go.mod, package.json, "
                "Cargo.toml), so no gates run: set gates.preset (e.g. python) or add "
                "gates.additional in the config"
            )
        if console is not None:
            console.print(message, markup=False, soft_wrap=True)
        else:
            typer.echo(message)
