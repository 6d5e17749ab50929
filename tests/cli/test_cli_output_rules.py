"""What the CLI writes when its output is a pipe (a CI log, ``| less``, a script), through the
real entry point: rows never wrapped or boxed, errors as one ``error:`` and one ``hint:`` line
(typer's usage errors too), no log lines below warning unless ``-v``, ``NO_COLOR`` honoured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.repos import make_repo

EXIT_USAGE = 2
_COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7])(?:;[0-9;]*)?m")
"""An SGR sequence that sets a foreground or background colour."""


def semspec(
    *args: str, cwd: Path | None = None, **env_extra: str
) -> subprocess.CompletedProcess[str]:
    """``python -m semspec ARGS``, stdout and stderr pipes, no SEMSPEC_* or COLUMNS set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_") and k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "semspec", *args],
        capture_output=True,
        text=True,
        env={**env, **env_extra},
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    make_repo(path, {"calc.py": "def add(a, b):\n    return a + b\n"})
    return path


def test_a_table_written_to_a_pipe_is_plain_rows_one_line_each(repo: Path) -> None:
    done = semspec("--repo", str(repo), "models", "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not any(ch in done.stdout for ch in "│┃━─┏└")
    header = lines[0].split()
    assert header[:3] == ["id", "provider", "roles"]
    row = next(line for line in lines if line.split()[:1] == ["gpt-4o-mini"])
    # The whole row on one line, the price column included (80 columns would fold it).
    assert row.split()[1:3] == ["openai", "developer,reviewer"]
    assert "$0.15 / $0.075 / $0.6" in row
    assert max(len(line) for line in lines) > 80


def test_a_long_line_written_to_a_pipe_is_not_wrapped(repo: Path) -> None:
    done = semspec("--repo", str(repo), "models", "list")
    note = next(line for line in done.stdout.splitlines() if line.startswith("max file:"))
    assert note.endswith("configured windows applied)")


@pytest.mark.parametrize(
    ("args", "said", "hint"),
    [
        (["budgte"], "error: No such command 'budgte'. Did you mean 'budget'?", "`semspec --help`"),
        (["budget", "--fil", "x"], "error: No such option: --fil", "`semspec budget --help`"),
        (["budget"], "error: Missing option '--file'.", "`semspec budget --help`"),
        (["task", "stauts", "x"], "error: No such command 'stauts'.", "`semspec task --help`"),
        (["--log-format", "xml", "models", "list"], "error: Invalid value", "`semspec --help`"),
        (["budget", "--file", "x", "--role", "dev"], "error: --role: unknown role", "one of"),
    ],
)
def test_every_error_is_one_error_line_and_one_hint_line(
    repo: Path, args: list[str], said: str, hint: str
) -> None:
    done = semspec("--repo", str(repo), *args)
    assert done.returncode == EXIT_USAGE
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(said), lines[0]
    assert lines[1].startswith("hint: ") and hint in lines[1], lines[1]
    assert done.stdout == ""


def test_a_command_logs_nothing_below_warning_unless_verbose(repo: Path) -> None:
    quiet = semspec("--repo", str(repo), "index")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    verbose = semspec("--repo", str(repo), "-v", "index")
    assert verbose.returncode == 0, verbose.stderr
    assert '"level": "info"' in verbose.stderr


def test_no_color_is_honoured_on_a_terminal(repo: Path) -> None:
    # TTY_COMPATIBLE makes rich treat the pipe as a terminal, where it would colour the output.
    coloured = semspec("--repo", str(repo), "models", "list", TTY_COMPATIBLE="1")
    assert _COLOUR.search(coloured.stdout) is not None
    plain = semspec("--repo", str(repo), "models", "list", TTY_COMPATIBLE="1", NO_COLOR="1")
    assert plain.returncode == 0, plain.stderr
    assert _COLOUR.search(plain.stdout) is None


def test_every_data_command_takes_json() -> None:
    for args in (["monitor", "events"], ["task", "cancel"]):
        shown = semspec(*args, "--help")
        assert "--json" in shown.stdout, args
