"""Scenario: a plan of two tasks where the second depends on the first.

``plan submit plan.yaml --wait`` runs the first task to approval, then starts the second from
the first one's approved commit, so the second builds on the first's change and its commit has
the first's commit as parent.
"""

from __future__ import annotations

import json

import pygit2

from tests.support.mdurl_plan import EXTENDED_SUITE, SUITE, dependent_plan
from tests.support.mdurl_project import FORMAT_PY, make_project, project_config, with_new_function
from tests.support.scenario_tasks import file_at
from tests.support.stack import Stack


def test_a_dependent_plan_task_starts_from_the_commit_its_dependency_was_approved_with(
    stack: Stack,
) -> None:
    repo = make_project(stack, "plan", project_config(stack, "plan"))
    # The second task's test imports the first task's function: it passes only on top of it.
    plan = dependent_plan(stack, "plan-scripts")
    first, second = plan.first, plan.second
    done = stack.cli("plan", "submit", str(plan.path), "--wait", "--json", repo=repo, timeout=180)
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
