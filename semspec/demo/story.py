"""What the demo shows: a tiny calculator project, its SOPs, and two scripted tasks on it.

Task 1 (``sub``) adds an undocumented ``sub`` and, unasked, edits README.md: the risk monitor
flags scope creep, and the reviewer, given the synced SOP and the flag, asks for changes citing
both. The developer documents ``sub`` and restores the README (the stray edit is reported once,
so the monitor's ladder does not climb to a pause). A long second review then fills the loop's
context: the task checkpoints, continues in a fresh run, and is approved.

Task 2 (``mul``) submits the same broken change twice, which escalates with ``no_new_evidence``;
after a human's retry its third attempt is approved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from semspec.demo.sample_sops import CALC_SOP_ID

CALC_HEAD = '"""A tiny calculator: the sample project of `semspec demo`."""\n'

ADD = '''

def add(a: float, b: float) -> float:
    """Return the sum of a and b."""
    return a + b
'''

TEST_ADD = """

def test_add() -> None:
    assert add(2, 3) == 5
"""

README = "# calc\n\nThe sample project of `semspec demo`.\n"
README_EDITED = README + "\n`sub(a, b)` subtracts b from a.\n"
"""An edit the task did not ask for: README.md is not one of its files."""

SAMPLE_FILES: dict[str, str] = {
    "README.md": README,
    "pyproject.toml": (
        '[project]\nname = "semspec-demo-calc"\nversion = "0.1.0"\n\n'
        '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
    ),
    ".gitignore": "__pycache__/\n.pytest_cache/\n.semspec/run/\n.semspec/graph/\n",
    "calc.py": CALC_HEAD + ADD,
    "tests/test_calc.py": "from calc import add\n" + TEST_ADD,
}
"""The sample project as committed on ``main``: one function and its pytest test."""


def _calc(*functions: str) -> str:
    return CALC_HEAD + ADD + "".join(functions)


def _tests(name: str, *tests: str) -> str:
    return f"from calc import add, {name}\n" + TEST_ADD + "".join(tests)


SUB_UNDOCUMENTED = "\n\ndef sub(a: float, b: float) -> float:\n    return a - b\n"
SUB_DONE = (
    '\n\ndef sub(a: float, b: float) -> float:\n    """Return a minus b."""\n    return a - b\n'
)
TEST_SUB = "\n\ndef test_sub() -> None:\n    assert sub(5, 3) == 2\n"
TEST_SUB_NEGATIVE = "\n\ndef test_sub_below_zero() -> None:\n    assert sub(3, 5) == -2\n"

MUL_BROKEN = "\n\ndef mul(a: float, b: float) -> float:\n    return a + b\n"
MUL_DONE = (
    '\n\ndef mul(a: float, b: float) -> float:\n    """Return a times b."""\n    return a * b\n'
)
TEST_MUL = "\n\ndef test_mul() -> None:\n    assert mul(3, 4) == 12\n"

SUB_DOC_CRITERION = "sub has a docstring saying what it returns"
MUL_GUIDANCE = "mul must multiply: return a * b, not a + b"
"""What the demo answers task 2's escalation with (``--action retry --guidance ...``)."""

DEVELOPER_WINDOW = 24_000
"""The sample's ``models.developer.context_window``: the budget check still fits (it needs 8K
of working memory), and one long review fills it past the 75% that triggers a checkpoint."""
LONG_REVIEW_TOKENS = 18_000
"""Tokens the second review of task 1 reports: 75% of the window on their own, so the loop
checkpoints whatever the task text adds; with the ~2K it adds here, red (75-85%)."""


def _step(summary: str, calc: str, tests: str, **extra: str) -> dict[str, Any]:
    return {"summary": summary, "write": {"calc.py": calc, "tests/test_calc.py": tests, **extra}}


@dataclass(frozen=True)
class DemoTask:
    """One task of the demo: what is submitted and the script its agents replay."""

    key: str
    title: str
    criteria: tuple[str, ...]
    files: tuple[str, ...]
    iterations: tuple[dict[str, Any], ...]
    shows: tuple[str, ...]
    """Names of the demo steps (``semspec.demo.steps.STEPS``) this task is there to show."""

    def script(self) -> dict[str, Any]:
        """The scripted-agent script (``semspec/agents/scripted.py`` format) as plain data."""
        return {"reviewer_name": "demo-reviewer", "iterations": list(self.iterations)}


TASK_FILES = ("calc.py", "tests/test_calc.py")
STRAY_FILE = "README.md"
"""The file task 1 edits outside its scope (a test file would be allowed by ``scope.allow``)."""

SUB_TASK = DemoTask(
    key="sub",
    title="Add sub(a, b)",
    criteria=("sub(a, b) returns a - b", SUB_DOC_CRITERION),
    files=TASK_FILES,
    iterations=(
        {
            "developer": _step(
                "add sub and mention it in the README",
                _calc(SUB_UNDOCUMENTED),
                _tests("sub", TEST_SUB),
                **{STRAY_FILE: README_EDITED},
            ),
            "reviewer": {
                "verdict": "request_changes",
                "summary": "sub works, but it breaks an SOP and edits a file outside the task",
                "findings": [
                    {
                        "message": f"sub has no docstring (SOP {CALC_SOP_ID})",
                        "file": "calc.py",
                        "sop_id": CALC_SOP_ID,
                        "criterion": SUB_DOC_CRITERION,
                    },
                    {
                        "message": f"{STRAY_FILE} is not part of this task (flagged as scope "
                        "creep); restore it",
                        "file": STRAY_FILE,
                    },
                ],
            },
        },
        {
            "developer": _step(
                "document sub, restore the README",
                _calc(SUB_DONE),
                _tests("sub", TEST_SUB),
                **{STRAY_FILE: README},
            ),
            "reviewer": {
                "verdict": "request_changes",
                "summary": "a long review of every case: test_sub checks one sign only",
                "findings": [
                    {
                        "message": "add a test where sub's result is below zero",
                        "severity": "warning",
                        "file": "tests/test_calc.py",
                    }
                ],
                "tokens": LONG_REVIEW_TOKENS,
            },
        },
        {
            "developer": _step(
                "test sub below zero",
                _calc(SUB_DONE),
                _tests("sub", TEST_SUB, TEST_SUB_NEGATIVE),
            ),
            "reviewer": {"verdict": "approve", "summary": "criteria, SOP and scope all met"},
        },
    ),
    shows=("sops", "risk_signal", "checkpoint"),
)

MUL_TASK = DemoTask(
    key="mul",
    title="Add mul(a, b)",
    criteria=("mul(a, b) returns a * b",),
    files=TASK_FILES,
    iterations=(
        # The same wrong change twice: the second attempt brings no new evidence.
        {"developer": _step("add mul", _calc(MUL_BROKEN), _tests("mul", TEST_MUL))},
        {"developer": _step("add mul again", _calc(MUL_BROKEN), _tests("mul", TEST_MUL))},
        {
            "developer": _step(
                "multiply, as the human said", _calc(MUL_DONE), _tests("mul", TEST_MUL)
            ),
            "reviewer": {"verdict": "approve", "summary": "mul multiplies"},
        },
    ),
    shows=("escalation",),
)

DEMO_TASKS = (SUB_TASK, MUL_TASK)
