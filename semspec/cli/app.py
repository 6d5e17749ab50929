"""The ``semspec`` command line: a root app that adds one sub-app per area."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

# typer 0.29 carries its own copy of click: its usage errors are these classes, not click's.
from typer._click import exceptions as click_errors

from semspec import __version__
from semspec.cli import (
    config_cmd,
    demo_cmd,
    escalations_cmd,
    gc_cmd,
    graph_cmd,
    index_cmd,
    init_cmd,
    land_cmd,
    mcp_cmd,
    models_cmd,
    monitor_cmd,
    plan_cmd,
    review_cmd,
    services_cmd,
    sources_cmd,
    task_cmd,
    ui_cmd,
    usage_cmd,
    worker_cmd,
)
from semspec.cli.context import CliContext, find_repo
from semspec.cli.help_text import reflow_help
from semspec.cli.terminal_text import TerminalConsole
from semspec.core.errors import InputError, SemspecError

LOG_ON_FIRST_USE = ("task", "escalations")
"""Command groups whose logging is set up when their first logger is taken (structlog's import
costs ~30 ms): listing tasks or escalations logs nothing, so it never imports structlog. Their
code takes loggers only through ``semspec.core.logging.get_logger``, which applies the setup."""

# Building this app imports only typer, rich and the command modules: each command imports what
# it needs (Temporal, NATS, the graph, the LLM clients) when it runs, so `--help` and the quick
# commands answer at once. tests/cli/test_cli_imports.py keeps it so.
app = typer.Typer(
    name="semspec",
    help="Durable orchestration of LLM coding agents: developer → gates → reviewer.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"semspec {__version__}")
        raise typer.Exit()


SERVICE_COMMANDS = ("worker", "up", "ui", "mcp")
"""Long-running commands whose info log is their running account; they log info by default."""


def _default_level(command: str | None, verbose: int) -> str:
    """Warnings and errors only for a command people run and read (its output is on stdout),
    unless ``-v``; services log info; ``-vv`` logs debug."""
    if verbose >= 2:
        return "DEBUG"
    if verbose == 1 or command in SERVICE_COMMANDS:
        return "INFO"
    return "WARNING"


def _check_repo(repo: Path) -> None:
    """``InputError`` unless ``repo`` is a directory this user can reach."""
    try:
        if repo.is_dir():
            return
        what = "is a file, not a directory" if repo.exists() else "no such directory"
    except OSError as exc:  # a name too long, a folder on the way this user may not enter
        what = exc.strerror or type(exc).__name__
    raise InputError(
        f"--repo {repo}: {what}",
        hint="pass the path of an existing repository (--repo or SEMSPEC_REPO), or leave "
        "it out to use the nearest one to the current directory",
    )


@app.callback()
def root(
    ctx: typer.Context,
    repo: Path | None = typer.Option(
        None, "--repo", envvar="SEMSPEC_REPO", help="Target repository (default: nearest to cwd)."
    ),
    log_format: str = typer.Option(
        "auto",
        "--log-format",
        envvar="SEMSPEC_LOG_FORMAT",
        help="Log format on stderr: auto (console on a TTY, JSON otherwise), console, json.",
    ),
    verbose: int = typer.Option(
        0,
        "-v",
        "--verbose",
        count=True,
        help="Log info on stderr (-vv: debug); without it a command logs only warnings and "
        "errors (SEMSPEC_LOG_LEVEL sets the level outright).",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Set up logging and the target repository for every command."""
    from semspec.core.logging import (
        configure_logging,
        configure_logging_on_first_use,
        forget_logging_setup,
        get_logger,
    )

    if log_format not in ("auto", "console", "json"):
        raise typer.BadParameter("expected auto, console or json", param_hint="--log-format")
    level = os.environ.get("SEMSPEC_LOG_LEVEL") or _default_level(ctx.invoked_subcommand, verbose)
    debug = level.upper() in ("DEBUG", "NOTSET")
    if ctx.invoked_subcommand in LOG_ON_FIRST_USE and not debug:
        configure_logging_on_first_use(log_format, level)  # type: ignore[arg-type]
        ctx.call_on_close(forget_logging_setup)  # in-process runs (tests) must not inherit it
    else:
        configure_logging(log_format, level)  # type: ignore[arg-type]
    if repo is not None:
        _check_repo(repo)
    target = repo.resolve() if repo is not None else find_repo(Path.cwd())
    ctx.obj = CliContext(target)
    if debug:
        get_logger("cli").debug("command", command=ctx.invoked_subcommand, repo=str(target))


app.add_typer(config_cmd.app, name="config")
init_cmd.register(app)
services_cmd.register(app)
worker_cmd.register(app)
ui_cmd.register(app)
land_cmd.register(task_cmd.app)
land_cmd.register_plan(plan_cmd.app)
gc_cmd.register(app)
app.add_typer(task_cmd.app, name="task")
app.add_typer(plan_cmd.app, name="plan")
app.add_typer(escalations_cmd.app, name="escalations")
models_cmd.register(app)
usage_cmd.register(app)
app.add_typer(monitor_cmd.app, name="monitor")
app.add_typer(index_cmd.app, name="index")
app.add_typer(sources_cmd.app, name="sources")
app.add_typer(review_cmd.app, name="review")
app.add_typer(graph_cmd.app, name="graph")
mcp_cmd.register(app)
demo_cmd.register(app)
# Last: every command is registered (semspec/cli/help_text.py says why).
reflow_help(app)


def _usage_hint(exc: click_errors.UsageError) -> str:
    """Where to read the usage of the command that refused the arguments."""
    path = exc.ctx.command_path if exc.ctx is not None else "semspec"
    return f"run `{path} --help` for its usage"


def _print_error(message: str, hint: str | None) -> None:
    """One ``error:`` line and, when there is one, one ``hint:`` line on stderr."""
    err = TerminalConsole(stderr=True)
    err.print(f"error: {' '.join(message.split())}", markup=False, soft_wrap=True)
    if hint:
        err.print(f"hint: {' '.join(hint.split())}", markup=False, soft_wrap=True)


def main() -> None:
    """Console-script entry point: run the app, turning every error into one clear line.

    Usage errors (a typo in a command or option, a missing argument, a bad value) and our own
    errors are printed as ``error:`` and ``hint:`` lines, the same form as bad input in files
    (docs/cli.md); usage errors exit 2, ours with the error's exit code.
    """
    code = 0
    try:
        result = app(standalone_mode=False, prog_name="semspec")
        code = result if isinstance(result, int) else 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except click_errors.NoArgsIsHelpError:
        code = 2  # typer already printed the group's help
    except click_errors.UsageError as exc:
        _print_error(exc.format_message(), _usage_hint(exc))
        code = exc.exit_code
    except click_errors.ClickException as exc:  # e.g. a file option that cannot be opened
        _print_error(exc.format_message(), "check the value and run the command again")
        code = exc.exit_code
    except typer.Abort:
        code = 130
    except SemspecError as exc:
        _print_error(exc.message, exc.hint)
        code = exc.exit_code
    except KeyboardInterrupt:
        code = 130
    # Exit without interpreter teardown: the Temporal client's native threads can outlive the
    # event loop and abort a normal shutdown after the command already did its work.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
