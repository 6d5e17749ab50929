"""What the demo shows: a tiny calculator project and two scripted tasks on it.

Task 1 (``sub``) first breaks the test, then passes it but misses a criterion and gets
``request_changes``, then is approved. Task 2 (``mul``) submits the same broken change twice,
which escalates with ``no_new_evidence``; after a human's retry its third attempt is approved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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

SAMPLE_FILES: dict[str, str] = {
    "README.md": "# calc\n\nThe sample project of `semspec demo`.\n",
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


def _tests(name: str, test: str) -> str:
    return f"from calc import add, {name}\n" + TEST_ADD + test


SUB_BROKEN = "\n\ndef sub(a: float, b: float) -> float:\n    return a + b\n"
SUB_UNDOCUMENTED = "\n\ndef sub(a: float, b: float) -> float:\n    return a - b\n"
SUB_DONE = (
    '\n\ndef sub(a: float, b: float) -> float:\n    """Return a minus b."""\n    return a - b\n'
)
TEST_SUB = "\n\ndef test_sub() -> None:\n    assert sub(5, 3) == 2\n"

MUL_BROKEN = "\n\ndef mul(a: float, b: float) -> float:\n    return a + b\n"
MUL_DONE = (
    '\n\ndef mul(a: float, b: float) -> float:\n    """Return a times b."""\n    return a * b\n'
)
TEST_MUL = "\n\ndef test_mul() -> None:\n    assert mul(3, 4) == 12\n"

SUB_DOC_CRITERION = "sub has a docstring saying what it returns"
MUL_GUIDANCE = "mul must multiply: return a * b, not a + b"
"""What the demo answers task 2's escalation with (``--action retry --guidance ...``)."""


def _step(summary: str, calc: str, tests: str) -> dict[str, Any]:
    return {"summary": summary, "write": {"calc.py": calc, "tests/test_calc.py": tests}}


@dataclass(frozen=True)
class DemoTask:
    """One task of the demo: what is submitted and the script its agents replay."""

    key: str
    title: str
    criteria: tuple[str, ...]
    files: tuple[str, ...]
    iterations: tuple[dict[str, Any], ...]

    def script(self) -> dict[str, Any]:
        """The scripted-agent script (``agents/scripted.py`` format) as plain data."""
        return {"reviewer_name": "demo-reviewer", "iterations": list(self.iterations)}


TASK_FILES = ("calc.py", "tests/test_calc.py")

SUB_TASK = DemoTask(
    key="sub",
    title="Add sub(a, b)",
    criteria=("sub(a, b) returns a - b", SUB_DOC_CRITERION),
    files=TASK_FILES,
    iterations=(
        {"developer": _step("add sub (wrong sign)", _calc(SUB_BROKEN), _tests("sub", TEST_SUB))},
        {
            "developer": _step("fix the sign", _calc(SUB_UNDOCUMENTED), _tests("sub", TEST_SUB)),
            "reviewer": {
                "verdict": "request_changes",
                "summary": "sub works but a criterion is not met",
                "findings": [
                    {
                        "message": "sub has no docstring",
                        "file": "calc.py",
                        "criterion": SUB_DOC_CRITERION,
                    }
                ],
            },
        },
        {
            "developer": _step("document sub", _calc(SUB_DONE), _tests("sub", TEST_SUB)),
            "reviewer": {"verdict": "approve", "summary": "both criteria met"},
        },
    ),
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
)

DEMO_TASKS = (SUB_TASK, MUL_TASK)
