"""Untrusted text on the terminal and in the files a person hands to the CLI (issue 25, items 7
and 8): everything runs through the real CLI in subprocesses.

- A gate prints terminal control sequences (OSC 52 writes the clipboard, CSI 2J clears the
  screen, OSC 8 hides a link's target): `escalations show`, `task status`, `task logs` and
  `task list` print its output without them, and still print the text around them.
- A gate command holding a NUL byte or an escape character is refused by `config validate`
  with an `error:` line naming the field.
- A task or plan file nested a few thousand levels deep is one `error:` line, not a
  RecursionError traceback.
- A title with a line break (or a control character) is refused, on the command line and in
  task and plan files; no task is started.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.repos import make_repo
from tests.support.scenario_tasks import EXIT_ESCALATED, new_id, submit
from tests.support.stack import Stack, cli_env, running_stack, sample_config

# printf makes the control characters, so the command itself is plain text.
HOSTILE_GATE = {
    "name": "check",
    "command": (
        r"printf 'gate-start \033]52;c;UFdORUQ=\007\033[2J\033[1;1H"
        r"\033]8;;https://evil.example/\033\\click-here\033]8;;\033\\ \233" + "31m"
        r"\007\010\r gate-end\n'; exit 1"
    ),
    "timeout": 60,
}
CONTROL_CHARS = [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + [
    chr(c) for c in range(0x7F, 0xA0)
]


def controls_in(text: str) -> list[str]:
    """The control characters in ``text`` a terminal would act on (tab and newline are fine)."""
    return sorted({repr(c) for c in text if c in CONTROL_CHARS})


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    # No retries: the first failing gate escalates at once.
    config = sample_config([HOSTILE_GATE], loop={"max_retries": 0})
    with running_stack(tmp_path_factory.mktemp("untrusted") / "stack", config) as running:
        yield running


@pytest.fixture(scope="module")
def escalated_task(stack: Stack) -> Iterator[str]:
    """A task whose gate printed control sequences, waiting on a human."""
    task_id = new_id("hostile-output")
    developer = {"summary": "done \x1b]52;c;REVW\x07", "write": {"calc.py": "X = 1\n"}}
    code, status = submit(stack, stack.repo, task_id, ["calc.py"], [{"developer": developer}])
    assert code == EXIT_ESCALATED, status
    yield task_id
    stack.cli("escalations", "resolve", task_id, "--action", "abort")


@pytest.mark.parametrize(
    "command",
    [
        ("escalations", "show"),
        ("task", "status"),
        ("task", "logs"),
    ],
    ids=lambda c: " ".join(c),
)
def test_gate_output_reaches_the_terminal_without_control_sequences(
    stack: Stack, escalated_task: str, command: tuple[str, str]
) -> None:
    done = stack.cli(*command, escalated_task)
    assert done.returncode in (0, EXIT_ESCALATED), done.stderr
    assert "gate-start" in done.stdout and "gate-end" in done.stdout, done.stdout
    assert "click-here" in done.stdout
    assert controls_in(done.stdout + done.stderr) == [], done.stdout


def test_task_list_prints_no_control_sequences(stack: Stack, escalated_task: str) -> None:
    done = stack.cli("task", "list")
    assert done.returncode == 0, done.stderr
    assert escalated_task in done.stdout.replace("\n", "") or escalated_task[:10] in done.stdout
    assert controls_in(done.stdout + done.stderr) == []


def test_the_json_form_keeps_the_output_escaped_not_stripped(
    stack: Stack, escalated_task: str
) -> None:
    """Scripts reading --json still get every byte the gate printed, JSON-escaped."""
    done = stack.cli("task", "status", escalated_task, "--json")
    assert controls_in(done.stdout) == []
    assert "\\u001b]52;c;UFdORUQ=" in done.stdout


@pytest.mark.parametrize(
    ("section", "bad"),
    [
        ({"additional": [{"name": "nul", "command": "echo a\0b"}]}, "a NUL byte"),
        (
            {"preset": "python", "overrides": {"test": {"command": "pytest \x1b]52;c;eA==\x07"}}},
            "the control character '\\x1b'",
        ),
    ],
    ids=["nul-in-additional", "escape-in-override"],
)
def test_config_validate_refuses_control_characters_in_gate_commands(
    tmp_path: Path, section: dict[str, object], bad: str
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {".semspec/config.yaml": yaml.safe_dump({"gates": section})})
    done = _cli(repo, "config", "validate")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "command: contains " + bad in done.stderr
    assert done.stderr.startswith("error: ") and "\nhint: " in done.stderr
    assert "Traceback" not in done.stderr


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("kind", ["task", "plan"])
def test_deeply_nested_yaml_is_one_error_line(tmp_path: Path, kind: str) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"calc.py": "X = 1\n"})
    spec = tmp_path / f"{kind}.yaml"
    if kind == "task":
        spec.write_text(f"title: deep\nfiles: {_deep(5000)}\n", encoding="utf-8")
        done = _cli(repo, "task", "submit", "-f", str(spec))
    else:
        spec.write_text(f"title: deep\ntasks:\n  - id: a\n    files: {_deep(5000)}\n")
        done = _cli(repo, "plan", "submit", str(spec))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.stderr.startswith(f"error: {spec}:"), done.stderr[-2000:]
    assert "nested deeper than" in done.stderr


@pytest.mark.parametrize(
    "title", ["fix add\nrm -rf ~ (see below)", "fix add\x1b]52;c;eA==\x07", "fix\u2028add"]
)
def test_a_title_on_the_command_line_is_one_line(stack: Stack, title: str) -> None:
    task_id = new_id("two-lines")
    done = stack.cli("task", "submit", title, "--id", task_id, "--file", "calc.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: title: must be one line of text"), done.stderr
    assert "put the rest in the description" in done.stderr
    assert stack.cli("task", "status", task_id).returncode != 0  # never started


def test_titles_in_task_and_plan_files_are_one_line(stack: Stack, tmp_path: Path) -> None:
    task_file = tmp_path / "task.yaml"
    task_file.write_text(yaml.safe_dump({"title": "a\nb", "files": ["calc.py"]}))
    done = stack.cli("task", "submit", "-f", str(task_file))
    assert done.returncode == 2 and "error: title: must be one line" in done.stderr, done.stderr
    plan = {"title": "plan\nsecond line", "tasks": [{"id": "p1", "title": "x", "files": []}]}
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan))
    done = stack.cli("plan", "submit", str(plan_file))
    assert done.returncode == 2 and "error: title: must be one line" in done.stderr, done.stderr
    plan = {"title": "plan", "tasks": [{"id": "p1", "title": "x\ny", "files": ["calc.py"]}]}
    plan_file.write_text(yaml.safe_dump(plan))
    done = stack.cli("plan", "submit", str(plan_file))
    assert done.returncode == 2, done.stderr
    assert "error: tasks.p1.title: must be one line" in done.stderr, done.stderr


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI on ``repo`` with no stack behind it."""
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env=cli_env(), timeout=60, check=False
    )


def test_sop_text_printed_as_it_is_loses_its_control_sequences(tmp_path: Path) -> None:
    """`sources show` writes the SOP's text unwrapped; the SOP is a file anyone with commit
    access (or an agent's change) wrote."""
    repo = tmp_path / "repo"
    sop = (
        "---\ncategory: testing\napplies_to: '**/*.py'\nseverity: error\n---\n"
        "# Tests \x1b]52;c;UFdORUQ=\x07first\n\nEvery change \x1b[2Jkeeps its tests.\n"
    )
    make_repo(repo, {".semspec/sources/docs/sops/tests.md": sop})
    assert _cli(repo, "sources", "sync").returncode == 0
    done = _cli(repo, "sources", "show", "tests")
    assert done.returncode == 0, done.stderr
    assert "Every change keeps its tests." in done.stdout, done.stdout
    assert controls_in(done.stdout + done.stderr) == []
