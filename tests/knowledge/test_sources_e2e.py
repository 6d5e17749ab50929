"""SOPs on a real stack through the CLI: ``sources sync`` loads an SOP for ``**/*.py``, a task on
``calc.py`` runs with scripted agents and is approved, and ``review context TASK_ID`` shows each
of the SOP's requirements once, in the window the config gives the reviewer."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.support.stack import Stack, check_gate, running_stack, sample_config, write_script

REQUIREMENTS = [
    "Every public function has a docstring of one sentence.",
    "Arithmetic helpers never print; they return their result.",
]
SOP = (
    '---\nid: python-helpers\ncategory: sop\napplies_to: "**/*.py"\nseverity: error\n---\n\n'
    "# Python helpers\n\nSmall functions that do one thing.\n\n## Requirements\n\n"
    + "".join(f"- {r}\n" for r in REQUIREMENTS)
    + "\n## Why\n\nA reviewer reads the helper and its docstring, nothing else.\n"
)
GOOD = 'def add(a, b):\n    """Sum."""\n    return a + b\n'
WINDOW = 40_000


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    reviewer = {"provider": "scripted", "model": "scripted", "context_window": WINDOW}
    config = sample_config([check_gate()], models={"reviewer": reviewer})
    extra = {".semspec/sources/docs/sops/python-helpers.md": SOP}
    with running_stack(tmp_path_factory.mktemp("sources-e2e"), config, extra) as running:
        yield running


def test_a_task_on_a_file_an_sop_matches_is_approved_and_its_context_lists_each_requirement_once(
    stack: Stack,
) -> None:
    synced = stack.cli_json("sources", "sync")
    assert synced["added"] == [".semspec/sources/docs/sops/python-helpers.md"], synced
    task_id = f"sop-{uuid.uuid4().hex[:8]}"
    script = write_script(
        stack.root / "scripts" / f"{task_id}.yaml",
        [
            {
                "developer": {"write": {"calc.py": GOOD}},
                "reviewer": {"verdict": "approve", "summary": "follows python-helpers"},
            }
        ],
    )
    done = stack.cli(
        "task", "submit", "Document add", "--id", task_id, "--file", "calc.py",
        "--criterion", "add has a docstring", "--script", str(script), "--wait", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(done.stdout)["outcome"] == "approved"

    context = stack.cli_json("review", "context", task_id)
    for requirement in REQUIREMENTS:
        assert context["text"].count(requirement) == 1, context["text"]
    assert "### SOP python-helpers: Python helpers (error)" in context["text"]
    assert "A reviewer reads the helper" in context["text"]
    assert context["sections"][0]["items"] == ["python-helpers"]
    # The window the config gives the reviewer, less its reserved parts and the 15% margin.
    reserved = 2_000 + 6_000 + 1_000 + int(WINDOW * 0.15 + 0.5)
    assert context["budget_tokens"] <= WINDOW - reserved


def test_review_context_of_a_file_that_does_not_exist_is_a_clear_error(stack: Stack) -> None:
    done = stack.cli("review", "context", "--file", "nope.py")
    assert done.returncode == 2
    assert "error: --file nope.py does not exist in the repository" in done.stderr
    assert "hint:" in done.stderr
