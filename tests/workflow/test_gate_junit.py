"""A pytest gate's failing tests are read from pytest's JUnit XML report, on real pytest runs
over a copy of the ``six`` library (issue 29, item 3).

pytest's own short summary is the oracle: the ids the report gives are exactly the node ids
pytest prints for its failures (a parametrized id holding ``::`` and ``[``, a class's method,
a fixture's setup error). The report is written outside the worktree, also under the fence
with the log folder hidden, and it is what the items come from: with the summary turned off
(``-rN``) the same items are read.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from semspec.core.sandbox import UNFENCED, Sandbox, choose_sandbox
from semspec.workflow.gates import GateFencing, GateSpec, run_gate
from semspec.workflow.gates.baseline import read_items
from semspec.workflow.gates.items import Paths
from semspec.workflow.gates.parsers import read_pytest

SIX = Path("/usr/lib/google-cloud-sdk/platform/gsutil/third_party/six")
ADDED_TESTS = """

@pytest.mark.parametrize("value", ["a::b", "c[d]"])
def test_added_parametrized_failure(value):
    assert six.ensure_str(value) == "nope"


class TestAddedClass:
    def test_added_method_failure(self):
        assert six.PY3 is False, "six says this is Python 3"


@pytest.fixture
def broken_fixture():
    raise RuntimeError("setup broke")


def test_added_setup_error(broken_fixture):
    pass
"""
EXPECTED_ADDED = {
    "test_six.py::test_added_parametrized_failure[a::b]": "failed",
    "test_six.py::test_added_parametrized_failure[c[d]]": "failed",
    "test_six.py::TestAddedClass::test_added_method_failure": "failed",
    "test_six.py::test_added_setup_error": "error",
}

pytestmark = pytest.mark.skipif(
    not (SIX / "six.py").is_file() or not (SIX / "test_six.py").is_file(),
    reason="the six library's source and tests are not installed here",
)


def six_copy(folder: Path) -> Path:
    """A worktree holding six, its tests and the failing ones added above."""
    folder.mkdir(parents=True)
    (folder / "six.py").write_text((SIX / "six.py").read_text(encoding="utf-8"))
    tests = (SIX / "test_six.py").read_text(encoding="utf-8") + ADDED_TESTS
    (folder / "test_six.py").write_text(tests, encoding="utf-8")
    return folder


def pytest_spec(*options: str) -> GateSpec:
    command = " ".join([shlex.quote(sys.executable), "-m", "pytest", "-q", *options])
    return GateSpec("test", command, timeout_s=300, format="pytest")


def sandboxes() -> list[object]:
    bwrap = choose_sandbox("auto")
    fenced = pytest.param(bwrap, id="bwrap")
    if bwrap.in_use != "bwrap":
        fenced = pytest.param(bwrap, id="bwrap", marks=pytest.mark.skip(reason=bwrap.reason))
    return [pytest.param(UNFENCED, id="unfenced"), fenced]


@pytest.mark.parametrize("sandbox", sandboxes())
async def test_failing_tests_come_from_the_junit_report_with_pytests_own_node_ids(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    worktree = six_copy(tmp_path / "worktree")
    run_dir = tmp_path / "run"  # hidden from a fenced gate; the report folder is bound back
    log_dir = run_dir / "logs" / "task" / "iteration-1"
    spec = pytest_spec("-p", "no:cacheprovider")
    fencing = GateFencing(sandbox=sandbox, hidden=(run_dir,))
    result = await run_gate(spec, worktree, log_dir, 64 * 1024, fencing=fencing)

    assert not result.passed and result.exit_code == 1, result.output[-2000:]
    report = Path(result.report_path)
    assert report.parent == log_dir and report.name == "test.junit.xml"
    assert not list(worktree.rglob("*.xml")) and not list(log_dir.glob(".report-*"))
    items = read_items(result, spec, worktree)
    assert items is not None
    summary = read_pytest(result.output, Paths(worktree, worktree))
    assert summary is not None
    # pytest's own summary names the same failures by the same ids, with the same kind.
    assert sorted((i.test, i.rule) for i in items) == sorted((i.test, i.rule) for i in summary)
    by_id = {i.test: i for i in items}
    assert {t: by_id[t].rule for t in EXPECTED_ADDED} == EXPECTED_ADDED
    method = by_id["test_six.py::TestAddedClass::test_added_method_failure"]
    assert method.path == "test_six.py" and method.line > 0
    assert "six says this is Python 3" in method.message
    assert "setup broke" in by_id["test_six.py::test_added_setup_error"].message


async def test_the_items_are_read_from_the_report_when_pytest_prints_no_summary(
    tmp_path: Path,
) -> None:
    worktree = six_copy(tmp_path / "worktree")
    spec = pytest_spec("-p", "no:cacheprovider", "-rN")
    result = await run_gate(spec, worktree, tmp_path / "logs", 64 * 1024)
    assert "short test summary info" not in result.output
    items = read_items(result, spec, worktree)
    assert items is not None
    assert EXPECTED_ADDED.items() <= {i.test: i.rule for i in items}.items()
