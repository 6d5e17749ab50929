"""Scenario: gates judge the change, on a real third-party library (issue 29, items 2 and 3).

The repository is a copy of ``six`` (``six.py`` and its ``test_six.py``, as a Google Cloud SDK
install ships them) with the python preset's gates as they ship: ``ruff check --output-format
json .`` finds about a hundred errors in it, and its base commit has one failing test added
(besides any that fail on this machine by themselves). Before the baseline, the lint output
filled every status, log and escalation, and the known failing test failed every task.

- A clean change is approved in one iteration; ``task status`` shows no lint output.
- A change that adds an unused import and breaks ``six.b`` comes back with exactly those two
  items: the new F401 and the failing ``test_b``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scenario_tasks import APPROVE, EXIT_APPROVED, EXIT_ESCALATED, new_id, submit
from tests.support.stack import Stack, cli_env, make_sample_repo, running_stack, sample_config

SIX = Path("/usr/lib/google-cloud-sdk/platform/gsutil/third_party/six")
KNOWN_BROKEN = "\n\ndef test_known_broken_on_base():\n    assert six.PY2 and six.PY3\n"
CLEAN_ADDITION = '\n\ndef ensure_text_list(values):\n    """Each value as text."""\n'
CLEAN_ADDITION += "    return [ensure_text(value) for value in values]\n"

pytestmark = pytest.mark.skipif(
    not (SIX / "six.py").is_file() or not (SIX / "test_six.py").is_file(),
    reason="the six library's source and tests are not installed here",
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    env = cli_env()
    # The stack runs from this venv, with its ruff and pytest on PATH, as after `pip install`.
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    root = tmp_path_factory.mktemp("six-stack")
    with running_stack(root, sample_config([]), env=env) as running:
        yield running


def six_repo(stack: Stack, name: str) -> Path:
    """A git repository holding six, its tests plus one that fails, and the python preset."""
    folder = stack.root / "projects" / name
    config = sample_config([], loop={"max_retries": 0})
    config["gates"] = {"preset": "python", "sandbox": "auto"}
    config["services"] = {
        "nats": stack.nats_section(),
        "temporal": {"address": stack.temporal_address()},
        "run_dir": str(folder / "run"),
    }
    config["security"] = {"owner_key": str(stack.owner_key_path)}
    files = {
        "six.py": (SIX / "six.py").read_text(encoding="utf-8"),
        "test_six.py": (SIX / "test_six.py").read_text(encoding="utf-8") + KNOWN_BROKEN,
        ".gitignore": "__pycache__/\n.pytest_cache/\n.ruff_cache/\nrun/\n",
    }
    return make_sample_repo(folder / "repo", config, files)


def gate(status: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [g for g in status["last_gates"] if g["name"] == name]
    assert isinstance(found, dict)
    return found


def test_a_clean_change_is_approved_in_one_iteration_without_lint_noise(stack: Stack) -> None:
    repo = six_repo(stack, "six-clean")
    six = (repo / "six.py").read_text(encoding="utf-8") + CLEAN_ADDITION
    task_id = new_id("six-clean")
    iterations = [{"developer": {"write": {"six.py": six}}, "reviewer": APPROVE}]
    code, status = submit(stack, repo, task_id, ["six.py"], iterations, criterion="a helper")
    assert code == EXIT_APPROVED, (status["outcome"], status["reason"], status["last_gates"])
    assert status["iteration"] == 1
    lint, test = gate(status, "lint"), gate(status, "test")
    assert lint["passed"] and lint["exit_code"] == 1 and lint["known"] > 50, lint["note"]
    assert test["passed"] and test["exit_code"] == 1 and test["known"] >= 1, test["note"]
    assert "test_six.py::test_known_broken_on_base" in {i["test"] for i in test["known_examples"]}
    shown = stack.cli("task", "status", task_id, repo=repo).stdout
    assert '"code"' not in shown and "F821" not in shown, shown
    assert "already on the base" in shown
    print(shown)
    print(json.dumps({"status_lines": len(shown.splitlines()), "status_bytes": len(shown)}))


def test_a_new_lint_error_and_a_broken_test_come_back_as_exactly_two_items(
    stack: Stack,
) -> None:
    repo = six_repo(stack, "six-broken")
    six = (repo / "six.py").read_text(encoding="utf-8")
    six = six.replace("import operator\n", "import operator\nimport os\n", 1)
    six = six.replace('return s.encode("latin-1")', 'return s.encode("utf-8")', 1)
    task_id = new_id("six-broken")
    iterations = [{"developer": {"write": {"six.py": six}}, "reviewer": APPROVE}]
    code, status = submit(stack, repo, task_id, ["six.py"], iterations, criterion="bytes")
    try:
        assert code == EXIT_ESCALATED, (status["outcome"], status["reason"])
        assert status["commit_id"] is None
        lint, test = gate(status, "lint"), gate(status, "test")
        assert [(i["path"], i["rule"]) for i in lint["items"]] == [("six.py", "F401")]
        assert "os" in lint["items"][0]["message"] and lint["items_more"] == 0
        assert [i["test"] for i in test["items"]] == ["test_six.py::test_b"]
        assert test["items_more"] == 0 and test["known"] >= 1 and not test["passed"]
        shown = stack.cli("escalations", "show", task_id, repo=repo).stdout
        assert "test_six.py::test_b" in shown and "six.py:28: F401" in shown, shown
        assert "test_known_broken_on_base" not in shown and "F821" not in shown, shown
        raw = stack.cli("task", "status", task_id, "--raw", repo=repo).stdout
        assert "last lines of its output" in raw
        status_text = stack.cli("task", "status", task_id, repo=repo).stdout
        print(shown, status_text, sep="\n")
        lines = len(status_text.splitlines())
        print(json.dumps({"escalation_lines": len(shown.splitlines()), "status_lines": lines}))
    finally:
        stack.cli("escalations", "resolve", task_id, "--action", "abort", repo=repo)
