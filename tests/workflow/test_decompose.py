"""Decomposition of a too-large task into file groups that fit, or a refusal naming the misfit."""

from __future__ import annotations

import itertools

from semspec.core.config.models import ContextConfig
from semspec.model.profiles import ContextProfile
from semspec.workflow.context.budget import compute_budget
from semspec.workflow.context.decompose import (
    Refusal,
    SubtaskLimits,
    limits_from_budget,
    plan_subtasks,
)

LIMITS = SubtaskLimits(max_files=4, max_file_tokens=8_000)


def assert_groups_fit(groups: list[list[str]], tokens: dict[str, int]) -> None:
    assert sorted(path for group in groups for path in group) == sorted(tokens)
    for group in groups:
        assert len(group) <= LIMITS.max_files
        assert sum(tokens[path] for path in group) <= LIMITS.max_file_tokens


def test_six_file_task_splits_into_groups_that_each_fit() -> None:
    tokens = {
        "api.py": 3_000,
        "models.py": 2_500,
        "views.py": 2_000,
        "utils.py": 1_500,
        "cli.py": 2_500,
        "config.py": 1_000,
    }
    imports = {"api.py": {"models.py"}, "views.py": {"models.py"}, "cli.py": {"config.py"}}
    groups = plan_subtasks(tokens, imports, LIMITS)
    assert isinstance(groups, list)
    assert len(groups) == 2
    assert_groups_fit(groups, tokens)
    assert ["api.py", "models.py", "views.py"] in groups


def test_files_that_import_each_other_stay_together() -> None:
    tokens = {"a.py": 3_000, "b.py": 3_000, "c.py": 3_000, "d.py": 3_000}
    groups = plan_subtasks(tokens, {"a.py": {"c.py"}, "b.py": {"d.py"}}, LIMITS)
    assert groups == [["a.py", "c.py"], ["b.py", "d.py"]]


def test_a_component_too_large_for_one_group_is_split_along_its_imports() -> None:
    # A chain a -> b -> c -> d -> e -> f of 2,500 each: at most three (7,500) per group.
    names = ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"]
    tokens = dict.fromkeys(names, 2_500)
    imports = {src: {dst} for src, dst in itertools.pairwise(names)}
    groups = plan_subtasks(tokens, imports, LIMITS)
    assert groups == [["a.py", "b.py", "c.py"], ["d.py", "e.py", "f.py"]]


def test_the_file_count_limit_splits_many_small_files() -> None:
    tokens = {f"f{n}.py": 10 for n in range(9)}
    groups = plan_subtasks(tokens, {}, LIMITS)
    assert isinstance(groups, list)
    assert [len(group) for group in groups] == [4, 4, 1]


def test_a_file_larger_than_a_group_may_hold_is_refused_by_name() -> None:
    tokens = {"small.py": 100, "generated.py": 12_000, "also_big.py": 9_000}
    refusal = plan_subtasks(tokens, {}, LIMITS)
    assert refusal == Refusal(file="generated.py", tokens=12_000, limit=8_000)
    assert isinstance(refusal, Refusal)
    assert "generated.py" in refusal.message and "12,000" in refusal.message


def test_the_same_input_always_gives_the_same_groups() -> None:
    tokens = {f"m{n}.py": 1_000 + 137 * n for n in range(10)}
    imports = {"m1.py": {"m7.py"}, "m3.py": {"m4.py", "m9.py"}}
    first = plan_subtasks(tokens, imports, LIMITS)
    shuffled = dict(reversed(list(tokens.items())))
    assert plan_subtasks(shuffled, imports, LIMITS) == first


def test_limits_come_from_the_budget_report() -> None:
    profile = ContextProfile(
        context_window=32_000,
        effective_context=32_000,
        sweet_spot=32_000,
        system_prompt_overhead=2_000,
        recommended_max_file_tokens=32_000,
    )
    tokens = {f"f{n}.py": 2_500 for n in range(6)}
    report = compute_budget(profile, 2_000, 1_000, 1_500, 1_000, tokens, ContextConfig())
    assert not report.fits
    limits = limits_from_budget(report)
    assert limits == SubtaskLimits(max_files=4, max_file_tokens=8_040)
    groups = plan_subtasks(tokens, {}, limits)
    assert isinstance(groups, list)
    assert [len(group) for group in groups] == [3, 3]
