"""pytest's JUnit XML report, read into failing tests (issue 29, item 3).

pytest's short test summary is text meant for people: a message may hold any character, and a
plugin or ``-r`` option can change or drop it. So a gate whose ``format`` is ``pytest`` asks
pytest for a JUnit XML report too (``PYTEST_ADDOPTS``, so the command stays the user's), into
a folder of its own outside the worktree, bound writable into the gate's fence. The report's
``xunit1`` form carries each test's file and line beside its ``classname`` and ``name``, from
which the test's node id (``tests/test_x.py::TestC::test_y[p]``) is rebuilt exactly; the
findings cite it. When there is no report (not pytest, or pytest without its junitxml plugin)
or it cannot be read, the short summary is read as before.

The report is written by the code under test, so it is hostile input: only a regular file of
at most ``MAX_REPORT_BYTES``, opened without following links or waiting on a FIFO, is read,
and it is parsed by ``defusedxml`` with document types refused, so no entity is ever expanded
(a billion-laughs file fails to parse in constant work and the summary is read instead).
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as safe_xml
from defusedxml import DefusedXmlException

from semspec.workflow.gates.items import Paths, make_item
from semspec.workflow.gates.types import GateItem

MAX_REPORT_BYTES = 16 * 1024 * 1024
"""Largest report read; a larger one is left for the summary (a real one is a few KB per
hundred tests)."""
MAX_TEST_ID_CHARS = 1000
"""A rebuilt node id longer than this is cut (ids go into prompts and the fingerprint)."""
_MAX_CLASS_PARTS = 64


@dataclass(frozen=True)
class Report:
    """A report a tool writes when asked: its file name, the variables that ask for it, and
    its reader."""

    file_name: str
    env: Callable[[Mapping[str, str], Path], dict[str, str]]
    """The gate's environment with the variables that make the tool write ``file_name`` in
    the given folder."""
    read: Callable[[bytes, Paths], list[GateItem] | None]
    """The failing tests in the report, or None when it is not one."""


def pytest_report_env(env: Mapping[str, str], folder: Path) -> dict[str, str]:
    """``env`` with ``PYTEST_ADDOPTS`` asking for an ``xunit1`` JUnit report in ``folder``
    (after any options the gate's environment already had)."""
    target = shlex.quote(str(folder / "junit.xml"))
    ours = f"--junitxml={target} -o junit_family=xunit1"
    before = env.get("PYTEST_ADDOPTS", "").strip()
    return {**env, "PYTEST_ADDOPTS": f"{before} {ours}".strip()}


def read_report_file(path: Path) -> bytes | None:
    """The bytes of the report at ``path``: a regular file of at most ``MAX_REPORT_BYTES``,
    never through a link; None otherwise (absent, too large, a FIFO, a link, a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_REPORT_BYTES:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as report:
        data = report.read(MAX_REPORT_BYTES + 1)
    return None if len(data) > MAX_REPORT_BYTES else data


def read_junit(data: bytes, paths: Paths) -> list[GateItem] | None:
    """The failing and erroring tests of a JUnit XML report, each cited by its pytest node id;
    None when ``data`` is not a JUnit report."""
    try:
        root = safe_xml.fromstring(data, forbid_dtd=True)
    except (safe_xml.ParseError, DefusedXmlException, ValueError):
        return None
    if root.tag not in ("testsuites", "testsuite"):
        return None
    items = []
    for case in root.iter("testcase"):
        problem = case.find("failure")
        rule = "failed"
        if problem is None:
            problem, rule = case.find("error"), "error"
        if problem is None:
            continue
        node = node_id(case, paths)
        file = node.split("::", 1)[0] if "::" in node or node.endswith(".py") else ""
        line = _line(case) if file == case.get("file", "") else 0
        items.append(make_item(paths.relative(file), line, rule, _message(problem), test=node))
    return items


def _line(case: Element) -> int:
    # xunit1 gives the 0-based line of the test's definition.
    try:
        return int(case.get("line", "")) + 1
    except ValueError:
        return 0


def _message(problem: Element) -> str:
    message = problem.get("message") or ""
    if not message and problem.text:
        message = problem.text.strip().splitlines()[-1] if problem.text.strip() else ""
    return message


def node_id(case: Element, paths: Paths) -> str:
    """The pytest node id of a ``testcase``: the reverse of pytest's ``mangle_test_address``
    (the node id's file with ``/`` turned into ``.`` and ``.py`` dropped, then its classes,
    make ``classname``; its last part and parameters make ``name``)."""
    file = case.get("file", "").replace("\\", "/")
    classname = case.get("classname", "")
    name = case.get("name", "")
    dotted = file[:-3].replace("/", ".") if file.endswith(".py") else ""
    if dotted and classname == "" and name == dotted:
        node = file  # a module that failed to be collected
    elif dotted and (classname == dotted or classname.startswith(dotted + ".")):
        node = "::".join([file, *_classes(classname[len(dotted) :]), name])
    else:
        # An inherited test: ``file`` is where it was written, the id names the module that
        # collected it. The longest leading part of classname naming a file there is it.
        node = _from_classname(classname, name, paths)
    return node[:MAX_TEST_ID_CHARS]


def _classes(rest: str) -> list[str]:
    return [c for c in rest.split(".") if c]


def _from_classname(classname: str, name: str, paths: Paths) -> str:
    parts = classname.split(".")
    if 0 < len(parts) <= _MAX_CLASS_PARTS and all(p and "/" not in p for p in parts):
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end]) + ".py"
            if any((base / candidate).is_file() for base in (paths.cwd, paths.root)):
                return "::".join([candidate, *parts[end:], name])
    return "::".join(p for p in (classname, name) if p)


JUNIT = Report("junit.xml", pytest_report_env, read_junit)
"""pytest's JUnit XML report, as a gate of ``format: pytest`` asks for it."""
