"""The pre-execution context budget, checked against hand-worked examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.config.models import ContextConfig
from semspec.core.errors import InputError
from semspec.model.profiles import ContextProfile
from semspec.workflow.context.budget import BudgetLine, compute_budget

DEFAULTS = ContextConfig()


def profile(window: int, max_file_tokens: int | None = None) -> ContextProfile:
    return ContextProfile(
        context_window=window,
        effective_context=window,
        sweet_spot=window,
        system_prompt_overhead=2_000,
        recommended_max_file_tokens=max_file_tokens or window,
    )


def test_adr_004_32k_example_fits_with_every_line_of_the_arithmetic() -> None:
    # 32,000 - 2,000 - 1,000 - 1,500 - 1,000 - 6,400 (20%) = 20,100 working memory;
    # 40% of it = 8,040 file tokens allowed; three files of 2,500 = 7,500 fit.
    files = {"a.py": 2_500, "b.py": 2_500, "c.py": 2_500}
    report = compute_budget(profile(32_000), 2_000, 1_000, 1_500, 1_000, files, DEFAULTS)
    assert report.available_working_memory == 20_100
    assert report.file_token_limit == 8_040
    assert report.file_tokens_total == 7_500
    assert report.verdict == "fits"
    assert report.reasons == []
    assert report.lines[:7] == [
        BudgetLine("", "context window", 32_000),
        BudgetLine("-", "system prompt", 2_000),
        BudgetLine("-", "plan context", 1_000),
        BudgetLine("-", "task context", 1_500),
        BudgetLine("-", "estimated output", 1_000),
        BudgetLine("-", "safety margin (20% of window)", 6_400),
        BudgetLine("=", "available working memory", 20_100),
    ]


def test_adr_004_example_with_one_more_large_file_is_over_the_file_share() -> None:
    files = {"a.py": 2_500, "b.py": 2_500, "c.py": 2_500, "d.py": 600}
    report = compute_budget(profile(32_000), 2_000, 1_000, 1_500, 1_000, files, DEFAULTS)
    assert report.verdict == "too_large"
    assert [r.code for r in report.reasons] == ["file_tokens_over_limit"]
    assert report.oversized_file is None


def test_exactly_8k_of_working_memory_fits() -> None:
    # 20,000 - 2,000 - 1,000 - 1,000 - 4,000 (20%) = 12,000; output chosen to land on 8,000.
    report = compute_budget(profile(20_000), 2_000, 1_000, 1_000, 4_000, {}, DEFAULTS)
    assert report.available_working_memory == 8_000
    assert report.verdict == "fits"


def test_one_token_below_8k_of_working_memory_is_too_large() -> None:
    report = compute_budget(profile(20_000), 2_000, 1_000, 1_000, 4_001, {}, DEFAULTS)
    assert report.available_working_memory == 7_999
    assert report.verdict == "too_large"
    assert [r.code for r in report.reasons] == ["working_memory_below_minimum"]


def test_more_than_four_files_is_too_large_even_when_tokens_fit() -> None:
    files = {f"f{n}.py": 100 for n in range(5)}
    report = compute_budget(profile(32_000), 2_000, 0, 0, 1_000, files, DEFAULTS)
    assert [r.code for r in report.reasons] == ["too_many_files"]


def test_profile_recommended_max_file_tokens_caps_the_file_limit() -> None:
    report = compute_budget(
        profile(32_000, max_file_tokens=5_000), 2_000, 0, 0, 1_000, {}, DEFAULTS
    )
    # 40% of (32,000 - 2,000 - 1,000 - 6,400) = 9,040, capped at 5,000.
    assert report.file_token_limit == 5_000


def test_a_single_file_over_the_limit_is_named_with_its_tokens() -> None:
    files = {"small.py": 500, "huge.py": 9_000, "big.py": 8_500}
    report = compute_budget(profile(32_000), 2_000, 1_000, 1_500, 1_000, files, DEFAULTS)
    assert report.oversized_file is not None
    assert (report.oversized_file.path, report.oversized_file.tokens) == ("huge.py", 9_000)
    assert report.oversized_file.limit == 8_040


def test_config_changes_the_thresholds() -> None:
    config = ContextConfig(safety_margin=0.10, min_working_memory=30_000, max_file_share=0.5)
    report = compute_budget(profile(32_000), 2_000, 0, 0, 0, {"a.py": 13_000}, config)
    assert report.available_working_memory == 26_800
    assert report.file_token_limit == 13_400
    assert [r.code for r in report.reasons] == ["working_memory_below_minimum"]


def test_negative_token_counts_are_rejected_by_name() -> None:
    with pytest.raises(InputError, match="plan_tokens"):
        compute_budget(profile(32_000), 0, -1, 0, 0, {}, DEFAULTS)


def test_budget_command_counts_the_files_and_prints_json(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("hello world\n" * 100, encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["--repo", str(tmp_path), "budget", "--file", str(tmp_path / "a.py"), "--json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["model"] == "scripted"
    assert data["approximate"] is False
    assert data["file_tokens_total"] == 300  # "hello", " world", "\n" per line
    assert data["verdict"] == "fits"
    labels = [line["label"] for line in data["lines"]]
    assert "available working memory" in labels


def test_budget_command_prints_the_arithmetic_and_a_split_for_a_large_task(
    tmp_path: Path,
) -> None:
    paths = []
    for number in range(6):
        path = tmp_path / f"m{number}.py"
        path.write_text(f"value_{number} = 1\n" * 300, encoding="utf-8")
        paths.append(path)
    args = ["--repo", str(tmp_path), "budget"]
    for path in paths:
        args += ["--file", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # too large: scripts can tell
    assert "= available working memory" in result.stdout
    assert "verdict: too_large" in result.stdout
    assert "suggested subtasks:" in result.stdout


def test_budget_command_names_a_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "budget", "--file", "nope.py"])
    assert isinstance(result.exception, InputError)
    assert "--file nope.py" in str(result.exception)
