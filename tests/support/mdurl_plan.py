"""A plan of two tasks on the mdurl project (``mdurl_project.py``) where the second depends on
the first, for the plan scenarios: the first adds ``format_without_hash``, the second adds a
test of it, which passes only on top of the first."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support.mdurl_project import ADDED_TEST, FORMAT_PY, TEST_SUITE, with_new_function
from tests.support.scenario_tasks import APPROVE, new_id
from tests.support.stack import Stack, write_script

SUITE = "tests/test_mdurl.py"
EXTENDED_SUITE = TEST_SUITE + "\n\n" + ADDED_TEST
"""The project's test suite with the second task's test added."""


@dataclass(frozen=True)
class DependentPlan:
    """The plan file and its ids."""

    plan_id: str
    first: str
    """Adds ``format_without_hash`` to ``FORMAT_PY``."""
    second: str
    """Writes ``EXTENDED_SUITE`` to ``SUITE``; depends on ``first``."""
    path: Path
    """The plan's YAML."""


def dependent_plan(stack: Stack, folder: str) -> DependentPlan:
    """Write the two tasks' scripts and the plan under ``stack.root / folder``. The YAML lists
    the dependent task first, so the order a run follows comes from ``depends_on``."""
    first, second = new_id("add-function"), new_id("test-function")
    scripts = stack.root / folder
    write_script(
        scripts / "first.yaml",
        [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}],
    )
    write_script(
        scripts / "second.yaml",
        [{"developer": {"write": {SUITE: EXTENDED_SUITE}}, "reviewer": APPROVE}],
    )
    plan_id = new_id("plan")
    plan = {
        "id": plan_id,
        "title": "format without the fragment, then its test",
        "tasks": [
            {
                "id": second,
                "title": "Test format_without_hash",
                "files": [SUITE],
                "criteria": ["a test covers format_without_hash"],
                "script": "second.yaml",
                "depends_on": [first],
            },
            {
                "id": first,
                "title": "Add format_without_hash",
                "files": [FORMAT_PY],
                "criteria": ["format_without_hash(url) drops the fragment"],
                "script": "first.yaml",
            },
        ],
    }
    path = scripts / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return DependentPlan(plan_id, first, second, path)
