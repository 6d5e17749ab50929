"""Bad input through the real CLI: one clear ``error:`` line naming the culprit, exit code 2.

These are refused before anything is started, so no services are needed; each test also
checks that what the user had stored (config, task and script files) is left as it was.
(Bad input that needs a running task, such as a hanging gate, is in ``test_cli_e2e.py``.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.stack import Stack, check_gate, make_sample_repo, sample_config, write_script

APPROVE_SCRIPT = [
    {"developer": {"write": {"calc.py": "x = 1\n"}}, "reviewer": {"verdict": "approve"}}
]


@pytest.fixture
def sample(tmp_path: Path) -> Stack:
    """A sample repository (no services running) and a runner for the CLI."""
    return Stack(make_sample_repo(tmp_path / "repo", sample_config([check_gate()])), tmp_path)


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error:", "hint:"))]


def test_a_task_file_that_does_not_exist_is_named_in_the_error(sample: Stack) -> None:
    missing = sample.root / "no-such-task.yaml"
    done = sample.cli("task", "submit", "-f", str(missing))
    assert done.returncode == 2
    assert _error_lines(done.stderr)[0] == f"error: -f: task file {missing} not found"
    assert not missing.exists()


def test_an_empty_title_is_refused_with_a_hint(sample: Stack) -> None:
    script = write_script(sample.root / "s.yaml", APPROVE_SCRIPT)
    done = sample.cli("task", "submit", "   ", "--file", "calc.py", "--script", str(script))
    assert done.returncode == 2
    lines = _error_lines(done.stderr)
    assert lines[0] == "error: title: must not be empty"
    assert lines[1].startswith("hint: ")


def test_an_unknown_gate_preset_names_the_config_file_and_field(sample: Stack) -> None:
    config_file = sample.repo / ".semspec" / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["gates"]["preset"] = "cobol"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))
    before = config_file.read_bytes()
    script = write_script(sample.root / "s.yaml", APPROVE_SCRIPT)
    done = sample.cli("task", "submit", "t", "--file", "calc.py", "--script", str(script))
    assert done.returncode == 2
    error = _error_lines(done.stderr)[0]
    assert error.startswith(f"error: {config_file}")
    assert "gates.preset" in error
    assert config_file.read_bytes() == before


def test_a_malformed_script_names_the_script_and_the_field(sample: Stack) -> None:
    script = write_script(
        sample.root / "bad.yaml", [{"developer": {"wirte": {"calc.py": "x = 1\n"}}}]
    )
    before = script.read_bytes()
    done = sample.cli("task", "submit", "t", "--file", "calc.py", "--script", str(script))
    assert done.returncode == 2
    error = _error_lines(done.stderr)[0]
    assert error.startswith(f"error: {script}: iterations.0.developer.wirte")
    assert script.read_bytes() == before


def test_a_task_file_outside_the_repository_is_refused(sample: Stack) -> None:
    script = write_script(sample.root / "s.yaml", APPROVE_SCRIPT)
    done = sample.cli("task", "submit", "t", "--file", "../s.yaml", "--script", str(script))
    assert done.returncode == 2
    assert _error_lines(done.stderr)[0].startswith("error: --file: ../s.yaml is outside")
