"""The basic commands through the real entry point: init, config show/validate, version, logs.

Most tests use typer's ``CliRunner`` on ``semspec.cli.app.app``; the ones about what a user
sees on errors run ``python -m semspec`` as a subprocess, where ``main()`` turns semspec errors
into ``error:``/``hint:`` lines and an exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest
import yaml
from typer.testing import CliRunner, Result

from semspec import __version__
from semspec.cli.app import app
from semspec.core.config import load_config
from semspec.core.config.models import LoopConfig
from semspec.core.errors import InputError
from tests.support.repos import make_repo


def semspec(*args: str, **env: str) -> Result:
    """The CLI in process, with no SEMSPEC_* variables but the ones given."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    return CliRunner().invoke(app, list(args), env={**unset, "COLUMNS": "200", **env})


def semspec_process(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m semspec ARGS`` as a user would run it."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    return subprocess.run(
        [sys.executable, "-m", "semspec", *args],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=60,
        check=False,
    )


def write_config(repo: Path, data: Any) -> Path:
    path = repo / ".semspec" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_version_prints_the_package_version() -> None:
    result = semspec("--version")
    assert (result.exit_code, result.stdout) == (0, f"semspec {__version__}\n")


def test_python_dash_m_semspec_runs_the_same_cli() -> None:
    done = semspec_process("--version")
    assert (done.returncode, done.stdout) == (0, f"semspec {__version__}\n")


def test_init_writes_a_config_that_validates_with_the_detected_preset(git_repo: Path) -> None:
    result = semspec("init", str(git_repo))
    assert result.exit_code == 0, result.stderr
    path = git_repo / ".semspec" / "config.yaml"
    assert f"wrote {path} (gate preset: none)" in result.stdout
    # A repository without a build file gets no gates; init says so and what to set.
    assert "no gates run: set gates.preset (e.g. python)" in result.stdout
    config = load_config(git_repo, environ={})
    assert (config.project.name, config.project.base_branch) == ("repo", "main")
    assert (git_repo / ".semspec" / "sources" / "docs" / "sops").is_dir()
    assert semspec("--repo", str(git_repo), "config", "validate").exit_code == 0


def test_the_commented_budget_and_step_rule_of_init_take_effect_once_uncommented(
    git_repo: Path,
) -> None:
    assert semspec("init", str(git_repo)).exit_code == 0
    path = git_repo / ".semspec" / "config.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("  # max_cost_usd:", "  max_cost_usd:").replace("  # steps:", "  steps:"),
        encoding="utf-8",
    )

    config = load_config(git_repo, environ={})

    assert config.loop.max_cost_usd == 5.0
    assert config.risk.steps.repeated_failure.threshold == 3


@pytest.mark.parametrize(
    ("marker", "preset"),
    [
        ("pyproject.toml", "python"),
        ("go.mod", "go"),
        ("package.json", "node"),
        ("Cargo.toml", "rust"),
    ],
)
def test_init_picks_the_gate_preset_from_the_build_file(
    git_repo: Path, marker: str, preset: str
) -> None:
    (git_repo / marker).write_text("", encoding="utf-8")
    assert semspec("init", str(git_repo)).exit_code == 0
    assert load_config(git_repo, environ={}).gates.preset == preset


def test_init_keeps_the_run_directory_out_of_git_status(git_repo: Path) -> None:
    assert semspec("init", str(git_repo)).exit_code == 0
    worktree_file = git_repo / ".semspec" / "run" / "worktrees" / "t-1" / "calc.py"
    worktree_file.parent.mkdir(parents=True)
    worktree_file.write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    exclude = (git_repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert "/.semspec/run/" in exclude.splitlines()
    untracked = [
        path
        for path, flags in pygit2.Repository(str(git_repo)).status().items()
        if flags & pygit2.GIT_STATUS_WT_NEW
    ]
    assert untracked and not [p for p in untracked if p.startswith(".semspec/run")]


def test_init_leaves_the_users_gitignore_untouched(git_repo: Path) -> None:
    (git_repo / ".gitignore").write_text("*.pyc\n", encoding="utf-8")
    assert semspec("init", str(git_repo)).exit_code == 0
    assert (git_repo / ".gitignore").read_text(encoding="utf-8") == "*.pyc\n"


def test_init_refuses_to_overwrite_a_config_without_force(git_repo: Path) -> None:
    assert semspec("init", str(git_repo)).exit_code == 0
    path = git_repo / ".semspec" / "config.yaml"
    path.write_text("project: {name: mine}\n", encoding="utf-8")
    result = semspec("init", str(git_repo))
    assert isinstance(result.exception, InputError)
    assert str(result.exception) == f"{path} already exists"
    assert path.read_text(encoding="utf-8") == "project: {name: mine}\n"
    assert semspec("init", str(git_repo), "--force").exit_code == 0
    assert load_config(git_repo, environ={}).project.name == "repo"


def test_init_of_a_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    result = semspec("init", str(tmp_path / "absent"))
    assert isinstance(result.exception, InputError)
    assert "is not a directory" in str(result.exception)


def test_config_show_prints_the_effective_yaml_with_env_overrides(tmp_path: Path) -> None:
    write_config(tmp_path, {"loop": {"max_retries": 2}})
    result = semspec("--repo", str(tmp_path), "config", "show", SEMSPEC_LOOP__MAX_ITERATIONS="5")
    assert result.exit_code == 0, result.stderr
    header, body = result.stdout.split("\n", 1)
    assert header == f"# effective config of {tmp_path / '.semspec' / 'config.yaml'}"
    shown = yaml.safe_load(body)
    assert (shown["loop"]["max_retries"], shown["loop"]["max_iterations"]) == (2, 5)
    assert shown["services"]["temporal"]["task_queue"] == "semspec"


def test_config_show_masks_secrets_from_the_file_and_the_environment(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        {"services": {"nats": {"token": "file-token-123"}, "temporal": {"api_key": "tk-abc-987"}}},
    )
    env = {"SEMSPEC_SERVICES__NATS__PASSWORD": "env-pass-456"}
    for extra in ([], ["--json"]):
        result = semspec("--repo", str(tmp_path), "config", "show", *extra, **env)
        assert result.exit_code == 0, result.stderr
        for secret in ("file-token-123", "tk-abc-987", "env-pass-456"):
            assert secret not in result.stdout
    shown = json.loads(result.stdout)
    assert shown["services"]["nats"]["token"] == "**********"
    assert shown["services"]["nats"]["password"] == "**********"
    assert shown["services"]["temporal"]["api_key"] == "**********"


def test_config_validate_lists_every_problem_with_file_line_and_field(tmp_path: Path) -> None:
    path = write_config(tmp_path, "loop:\n  max_retries: x\ngates:\n  preset: cobol\nextra: 1\n")
    result = semspec("--repo", str(tmp_path), "config", "validate")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()[::2]  # each error is followed by its hint
    assert len(lines) == 3
    assert lines[0].startswith(f"error: {path}:2: loop.max_retries: ")
    assert lines[1].startswith(f"error: {path}:4: gates.preset: ")
    assert "expected one of" in lines[1]
    assert (
        lines[2] == f"error: {path}:5: extra: unknown key (expected one of the documented keys"
        " (`semspec config reference`))"
    )


def test_config_validate_json_reports_validity_and_problems(tmp_path: Path) -> None:
    write_config(tmp_path, {"loop": {"max_retries": 1}})
    ok = semspec("--repo", str(tmp_path), "config", "validate", "--json")
    assert (ok.exit_code, json.loads(ok.stdout)) == (0, {"valid": True, "problems": []})
    bad = semspec("--repo", str(tmp_path), "config", "validate", "--json", SEMSPEC_LOOP__X="1")
    assert bad.exit_code == 2
    assert json.loads(bad.stdout) == {
        "valid": False,
        "problems": [
            {
                "path": "environment SEMSPEC_LOOP__X",
                "line": None,
                "field": "loop.x",
                "message": "unknown key",
                "expected": "one of the documented keys (`semspec config reference`)",
                "hint": f"keys of loop: {', '.join(LoopConfig.model_fields)}",
            }
        ],
    }


def test_a_bad_config_gives_an_error_and_a_hint_and_exit_code_2(tmp_path: Path) -> None:
    path = write_config(tmp_path, "services:\n  nats:\n    port: high\n")
    done = semspec_process("--repo", str(tmp_path), "config", "show")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: {path}:3: services.nats.port: Input should be a valid integer, unable to parse "
        "string as an integer (expected an integer)",
        "hint: fix the field, then run `semspec config validate`",
    ]


def test_an_unknown_log_format_is_a_usage_error_naming_the_option() -> None:
    result = semspec("--log-format", "xml", "--version")
    assert result.exit_code == 0  # --version is eager and exits first
    result = semspec("--log-format", "xml", "config", "validate")
    assert result.exit_code == 2
    assert "--log-format" in result.stderr and "expected auto, console or json" in result.stderr


def test_log_format_json_writes_json_lines_to_stderr(tmp_path: Path) -> None:
    result = semspec(
        "--repo",
        str(tmp_path),
        "--log-format",
        "json",
        "config",
        "validate",
        SEMSPEC_LOG_LEVEL="debug",
    )
    assert result.exit_code == 0, result.stderr
    line = json.loads(result.stderr.splitlines()[0])
    assert {k: line[k] for k in ("event", "level", "component", "command", "repo")} == {
        "event": "command",
        "level": "debug",
        "component": "cli",
        "command": "config",
        "repo": str(tmp_path.resolve()),
    }


def test_log_format_console_writes_plain_lines_and_the_env_variable_selects_it(
    tmp_path: Path,
) -> None:
    done = semspec_process(
        "--repo",
        str(tmp_path),
        "config",
        "validate",
        SEMSPEC_LOG_FORMAT="console",
        SEMSPEC_LOG_LEVEL="debug",
    )
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert not first.startswith("{")
    assert "[debug" in first and "command=config" in first and "component=cli" in first


def test_the_log_level_hides_debug_lines_by_default(tmp_path: Path) -> None:
    result = semspec("--repo", str(tmp_path), "--log-format", "json", "config", "validate")
    assert result.exit_code == 0
    assert result.stderr == ""


def test_repo_defaults_to_the_nearest_directory_with_semspec_or_git(git_repo: Path) -> None:
    nested = git_repo / "src" / "deep"
    nested.mkdir(parents=True)
    write_config(git_repo, {"project": {"name": "found-it"}})
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "config", "show", "--json"],
        capture_output=True,
        text=True,
        cwd=nested,
        env={k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["project"]["name"] == "found-it"


def test_status_with_nothing_running_says_not_healthy_and_how_to_start_it(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    for extra in ((), ("--json",)):
        done = semspec_process("--repo", str(tmp_path / "repo"), "status", *extra)
        assert done.returncode == 1
        said = done.stdout if not extra else done.stderr
        lines = said.splitlines()
        assert any(line.startswith("not healthy: ") and "worker down" in line for line in lines)
        assert "hint: semspec up restarts what is down" in lines
