"""A pytest gate's JUnit report is written by the code under test: whatever it leaves at the
report's path is read in bounded work or not at all, never through a link, never waited on,
with no entity expanded, and the gate's items then come from pytest's printed summary.

Each gate here is a real command that writes something hostile where pytest was asked to
write its report (``PYTEST_ADDOPTS``) and prints a pytest summary with one failing test.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from semspec.workflow.gates import GateSpec, run_gate
from semspec.workflow.gates.baseline import read_items
from semspec.workflow.gates.items import Paths
from semspec.workflow.gates.junit import MAX_REPORT_BYTES, read_junit

SUMMARY = (
    "=========================== short test summary info ============================\n"
    "FAILED test_x.py::test_from_the_summary - boom\n"
    "1 failed in 0.01s\n"
)
VALID = (
    '<testsuites><testsuite><testcase classname="test_x" name="test_from_the_report" '
    'file="test_x.py" line="0"><failure message="REPORT"/></testcase></testsuite></testsuites>'
)
LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">'
        for n in range(1, 10)
    )
    + ']><testsuites><testsuite><testcase classname="test_x" name="t" file="test_x.py">'
    '<failure message="&lol9;"/></testcase></testsuite></testsuites>'
)
ENTITY = (
    '<!DOCTYPE t [<!ENTITY e "EXPANDED">]><testsuites><testsuite><testcase classname="test_x" '
    'name="test_from_the_report" file="test_x.py"><failure message="&e;"/></testcase>'
    "</testsuite></testsuites>"
)
EXTERNAL = (
    '<!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/hostname">]><testsuites><testsuite>'
    '<testcase classname="test_x" name="t" file="test_x.py"><failure message="&e;"/>'
    "</testcase></testsuite></testsuites>"
)

# The gate: find the report path pytest was asked for, leave `kind` there, print a summary.
WRITER = """
import os, shlex, sys
(target,) = [o.split("=", 1)[1] for o in shlex.split(os.environ["PYTEST_ADDOPTS"])
             if o.startswith("--junitxml=")]
kind, arg = sys.argv[1], sys.argv[2]
if kind == "text":
    open(target, "w").write(arg)
elif kind == "sparse":
    with open(target, "wb") as f:
        f.truncate(int(arg))
elif kind == "link":
    os.symlink(arg, target)
elif kind == "fifo":
    os.mkfifo(target)
elif kind == "folder":
    os.mkdir(target)
sys.stdout.write(sys.argv[3])
sys.exit(1)
"""


def hostile_gate(kind: str, arg: str) -> GateSpec:
    argv = [sys.executable, "-c", WRITER, kind, arg, SUMMARY]
    return GateSpec("test", " ".join(map(shlex.quote, argv)), timeout_s=60, format="pytest")


async def items_of(spec: GateSpec, tmp_path: Path) -> tuple[list[str], str]:
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    logs = tmp_path / "logs"
    result = await run_gate(spec, worktree, logs, 64 * 1024)
    assert result.exit_code == 1, result.output
    assert not list(logs.glob(".report-*")), "the report folder is removed"
    items = read_items(result, spec, worktree)
    assert items is not None
    return [i.test for i in items], result.report_path


async def test_a_valid_report_is_what_the_items_come_from(tmp_path: Path) -> None:
    tests, kept = await items_of(hostile_gate("text", VALID), tmp_path)
    assert tests == ["test_x.py::test_from_the_report"] and kept


@pytest.mark.parametrize("xml", [LAUGHS, ENTITY, EXTERNAL], ids=["laughs", "entity", "external"])
async def test_a_report_with_a_document_type_is_refused_and_the_summary_read(
    xml: str, tmp_path: Path
) -> None:
    tests, _ = await items_of(hostile_gate("text", xml), tmp_path)
    assert tests == ["test_x.py::test_from_the_summary"]
    assert read_junit(xml.encode(), Paths(tmp_path, tmp_path)) is None


async def test_a_report_larger_than_the_bound_is_not_read(tmp_path: Path) -> None:
    # Sparse: it claims 4 GiB on disk without taking it; only its size is looked at.
    tests, kept = await items_of(hostile_gate("sparse", str(4 << 30)), tmp_path)
    assert tests == ["test_x.py::test_from_the_summary"] and kept == ""
    assert MAX_REPORT_BYTES < 4 << 30


async def test_a_link_in_place_of_the_report_is_not_followed(tmp_path: Path) -> None:
    # The link names a valid report outside the folder (another task's, say): never read.
    elsewhere = tmp_path / "elsewhere.xml"
    elsewhere.write_text(VALID, encoding="utf-8")
    tests, kept = await items_of(hostile_gate("link", str(elsewhere)), tmp_path)
    assert tests == ["test_x.py::test_from_the_summary"] and kept == ""
    assert elsewhere.read_text(encoding="utf-8") == VALID


@pytest.mark.parametrize("kind", ["fifo", "folder"])
async def test_a_fifo_or_folder_in_place_of_the_report_is_not_waited_on(
    kind: str, tmp_path: Path
) -> None:
    tests, kept = await items_of(hostile_gate(kind, "-"), tmp_path)
    assert tests == ["test_x.py::test_from_the_summary"] and kept == ""


def test_report_text_that_is_not_junit_reads_as_no_report(tmp_path: Path) -> None:
    paths = Paths(tmp_path, tmp_path)
    assert read_junit(b"<html><body>no</body></html>", paths) is None
    assert read_junit(b"\x00\xff not xml", paths) is None
    long_name = "x" * 5000
    xml = f'<testsuite><testcase classname="c" name="{long_name}"><error/></testcase></testsuite>'
    (item,) = read_junit(xml.encode(), paths) or []
    assert len(item.test) <= 1000 and item.rule == "error"
