"""Scenario: a plan of two tasks where the second depends on the first.

``plan submit plan.yaml --wait`` runs the first task to approval, then starts the second from
the first one's approved commit, so the second builds on the first's change and its commit has
the first's commit as parent.
"""

from __future__ import annotations

import json

import pygit2
import yaml

from tests.support.mdurl_project import (
    ADDED_TEST,
    FORMAT_PY,
    TEST_SUITE,
    make_project,
    project_config,
    with_new_function,
)
from tests.support.scenario_tasks import APPROVE, file_at, new_id
from tests.support.stack import Stack, write_script

SUITE = "tests/test_mdurl.py"
EXTENDED_SUITE = TEST_SUITE + "\n\n" + ADDED_TEST


def test_a_dependent_plan_task_starts_from_the_commit_its_dependency_was_approved_with(
    stack: Stack,
) -> None:
    repo = make_project(stack, "plan", project_config(stack, "plan"))
    first, second = new_id("add-function"), new_id("test-function")
    scripts = stack.root / "plan-scripts"
    write_script(
        scripts / "first.yaml",
        [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}],
    )
    # The second task's test imports the first task's function: it passes only on top of it.
    write_script(
        scripts / "second.yaml",
        [{"developer": {"write": {SUITE: EXTENDED_SUITE}}, "reviewer": APPROVE}],
    )
    plan = {
        "id": new_id("plan"),
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
    plan_file = scripts / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")

    done = stack.cli("plan", "submit", str(plan_file), "--wait", "--json", repo=repo, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "approved"
    assert {t["task_id"]: t["state"] for t in result["tasks"]} == {
        first: "approved",
        second: "approved",
    }

    before, after = stack.status(first, repo=repo), stack.status(second, repo=repo)
    assert after["base_commit"] == before["commit_id"]
    git = pygit2.Repository(str(repo))
    commit = git[after["commit_id"]].peel(pygit2.Commit)
    assert [str(p) for p in commit.parent_ids] == [before["commit_id"]]
    assert file_at(repo, after["commit_id"], FORMAT_PY) == with_new_function()
    assert file_at(repo, after["commit_id"], SUITE) == EXTENDED_SUITE
