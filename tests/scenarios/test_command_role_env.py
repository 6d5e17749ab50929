"""Scenario: a command developer whose role names a variable the worker does not have fails the
task at once, naming it, instead of letting the CLI retry for minutes (issue 24)."""

from __future__ import annotations

import json
import sys

from tests.support.scenario_tasks import new_id, submit
from tests.support.stack import Stack, check_gate, sample_config

UNSET = "SEMSPEC_TEST_AGENT_ENDPOINT_NEVER_SET"


def test_a_task_whose_command_role_names_an_unset_variable_fails_naming_it(stack: Stack) -> None:
    marker = stack.root / f"{new_id('ran')}.txt"
    developer = {
        "provider": "command",
        "model": "gpt-4.1",
        "command": f"{sys.executable} -c \"open('{marker}', 'w').write('ran')\"",
        "env_pass": [UNSET],
        "timeout_s": 60,
    }
    config = sample_config([check_gate()])
    # The reviewer is never reached; its server need not exist.
    reviewer = {"provider": "openai", "model": "fake-model", "base_url": "http://127.0.0.1:9/v1"}
    config["models"] = {"developer": developer, "reviewer": reviewer}
    repo = stack.sibling_repo(new_id("unset-env"), config)
    task_id = new_id("unset")

    code, status = submit(stack, repo, task_id, ["calc.py"], criterion="sub(3, 1) returns 2")

    assert status["outcome"] == "failed", json.dumps(status)[-3000:]
    assert UNSET in (status["reason"] or "") and "models.developer.env_pass" in status["reason"]
    assert code != 0 and not marker.exists()
