"""Read a gate's output into items: lint findings and failing tests (issue 29, item 3).

``FORMATS`` is the table a gate's ``format`` names (``docs/configuration.md``, Gates). Each
reader takes the output text and a ``Paths`` (to make file names relative to the worktree) and
returns the items it found, or None when the text is not in its format at all (the tool
crashed, or printed a usage error): then the gate is judged on its exit code alone.

Linters are read from their machine formats (ruff ``--output-format json``, mypy's
``file:line: error: message [code]`` lines or ``-O json``, eslint ``-f json``, golangci-lint's
JSON, cargo's ``--message-format json``); test runners from what they print anyway (pytest's
short test summary, ``go test -json``, ``cargo test``'s ``---- name stdout ----`` sections).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from semspec.workflow.gates.items import Paths as Paths  # re-exported: readers take one
from semspec.workflow.gates.items import make_item as _item
from semspec.workflow.gates.junit import JUNIT, Report
from semspec.workflow.gates.types import GateItem

Reader = Callable[[str, Paths], "list[GateItem] | None"]


def _json_document(text: str, opening: str) -> Any:
    """The first JSON value starting with ``opening`` in ``text`` (tools may print around it)."""
    start = text.find(opening)
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return value


def _json_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


def read_ruff_json(text: str, paths: Paths) -> list[GateItem] | None:
    """``ruff check --output-format json``: one array of violations."""
    data = _json_document(text, "[")
    if not isinstance(data, list):
        return None
    items = []
    for entry in data:
        if not isinstance(entry, dict):
            continue
        location = entry.get("location") or {}
        items.append(
            _item(
                paths.relative(str(entry.get("filename") or "")),
                location.get("row") if isinstance(location, dict) else 0,
                str(entry.get("code") or "syntax-error"),
                str(entry.get("message") or ""),
            )
        )
    return items


_MYPY_LINE = re.compile(
    r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)?(?:\d+:\d+:)? error: (?P<message>.*?)"
    r"(?:  \[(?P<code>[a-z0-9-]+)\])?$",
    re.MULTILINE,
)
_MYPY_SUMMARY = re.compile(r"^(Found \d+ errors? in|Success: no issues found)", re.MULTILINE)


def read_mypy(text: str, paths: Paths) -> list[GateItem] | None:
    """mypy's ``file:line: error: message  [code]`` lines, or its ``-O json`` lines."""
    items = []
    for entry in _json_lines(text):
        if entry.get("severity") == "error" and "file" in entry:
            items.append(
                _item(
                    paths.relative(str(entry["file"])),
                    entry.get("line"),
                    str(entry.get("code") or "error"),
                    str(entry.get("message") or ""),
                )
            )
    for match in _MYPY_LINE.finditer(text):
        items.append(
            _item(
                paths.relative(match["file"]),
                int(match["line"]),
                match["code"] or "error",
                match["message"],
            )
        )
    if not items and not _MYPY_SUMMARY.search(text):
        return None
    return items


def read_eslint_json(text: str, paths: Paths) -> list[GateItem] | None:
    """``eslint -f json``: an array of files, each with its messages."""
    data = _json_document(text, "[")
    if not isinstance(data, list):
        return None
    items = []
    for result in data:
        if not isinstance(result, dict):
            continue
        name = paths.relative(str(result.get("filePath") or ""))
        for message in result.get("messages") or []:
            if isinstance(message, dict):
                items.append(
                    _item(
                        name,
                        message.get("line"),
                        str(message.get("ruleId") or "error"),
                        str(message.get("message") or ""),
                    )
                )
    return items


def read_golangci_json(text: str, paths: Paths) -> list[GateItem] | None:
    """golangci-lint's JSON (``--out-format json``; v2: ``--output.json.path stdout``)."""
    data = _json_document(text, "{")
    if not isinstance(data, dict) or "Issues" not in data:
        return None
    items = []
    for issue in data.get("Issues") or []:
        if not isinstance(issue, dict):
            continue
        position = issue.get("Pos") or {}
        if not isinstance(position, dict):
            position = {}
        items.append(
            _item(
                paths.relative(str(position.get("Filename") or "")),
                position.get("Line"),
                str(issue.get("FromLinter") or "golangci"),
                str(issue.get("Text") or ""),
            )
        )
    return items


def read_cargo_json(text: str, paths: Paths) -> list[GateItem] | None:
    """``cargo clippy --message-format json`` (or ``cargo build``): compiler messages."""
    items = []
    seen_cargo = False
    for entry in _json_lines(text):
        if "reason" not in entry:
            continue
        seen_cargo = True
        message = entry.get("message")
        if entry["reason"] != "compiler-message" or not isinstance(message, dict):
            continue
        if message.get("level") not in ("warning", "error"):
            continue
        spans = [s for s in message.get("spans") or [] if isinstance(s, dict)]
        primary = next((s for s in spans if s.get("is_primary")), None)
        if primary is None:
            continue  # "aborting due to N previous errors" and other summaries
        code = message.get("code")
        rule = str(code.get("code")) if isinstance(code, dict) and code.get("code") else "error"
        items.append(
            _item(
                paths.relative(str(primary.get("file_name") or "")),
                primary.get("line_start"),
                rule,
                str(message.get("message") or ""),
            )
        )
    return items if seen_cargo else None


_PYTEST_SUMMARY = re.compile(r"^=+ short test summary info =+$", re.MULTILINE)
_PYTEST_FAILED = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<node>\S+)(?: - (?P<message>.*))?$")
_PYTEST_RESULT = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+ in [\d.]+s", re.MULTILINE)


def read_pytest(text: str, paths: Paths) -> list[GateItem] | None:
    """pytest's short test summary (``FAILED tests/x.py::test_y - message``), printed by
    default (``-r fE``)."""
    found = _PYTEST_SUMMARY.search(text)
    if found is None:
        return [] if _PYTEST_RESULT.search(text) else None
    items = []
    for line in text[found.end() :].splitlines():
        match = _PYTEST_FAILED.match(line.strip())
        if match is None:
            continue
        node = match["node"]
        file = node.split("::", 1)[0]
        rule = "failed" if match["kind"] == "FAILED" else "error"
        items.append(_item(paths.relative(file), 0, rule, match["message"] or "", test=node))
    return items


_GO_LOCATION = re.compile(r"^\s*(?P<file>[\w./-]+\.go):(?P<line>\d+): (?P<message>.*)$")


def read_go_test_json(text: str, paths: Paths) -> list[GateItem] | None:
    """``go test -json``: a failing test's ``fail`` action, its message from its output."""
    items = []
    output: dict[tuple[str, str], list[str]] = {}
    failed_packages: list[str] = []
    with_failing_tests: set[str] = set()
    seen = False
    for event in _json_lines(text):
        if "Action" not in event:
            continue
        seen = True
        package, test = str(event.get("Package") or ""), str(event.get("Test") or "")
        if event["Action"] == "output" and test:
            output.setdefault((package, test), []).append(str(event.get("Output") or ""))
        elif event["Action"] == "fail" and test:
            lines = output.get((package, test), [])
            where = next((m for m in map(_GO_LOCATION.match, lines) if m), None)
            path = f"{package}/{where['file']}" if where else package
            line = int(where["line"]) if where else 0
            message = where["message"] if where else "failed"
            items.append(_item(path, line, "failed", message, test=f"{package}.{test}"))
            with_failing_tests.add(package)
        elif event["Action"] == "fail" and package:
            failed_packages.append(package)
    # A package that failed with no failing test did not build or set up: one item for it,
    # so that known failing tests elsewhere cannot let it pass.
    for package in failed_packages:
        if package not in with_failing_tests:
            items.append(_item(package, 0, "failed", "package failed", test=package))
    return items if seen else None


_CARGO_SECTION = re.compile(r"^---- (?P<test>\S+) stdout ----$", re.MULTILINE)
_CARGO_PANIC = re.compile(r"panicked at (?P<file>[^\s:]+):(?P<line>\d+):\d+:\n(?P<message>.*)")
_CARGO_RESULT = re.compile(r"^test result: ", re.MULTILINE)


def read_cargo_test(text: str, paths: Paths) -> list[GateItem] | None:
    """``cargo test``'s text: each failing test's ``---- name stdout ----`` section."""
    if not _CARGO_RESULT.search(text) and not _CARGO_SECTION.search(text):
        return None
    items = []
    sections = list(_CARGO_SECTION.finditer(text))
    for index, section in enumerate(sections):
        end = sections[index + 1].start() if index + 1 < len(sections) else len(text)
        body = text[section.end() : end]
        panic = _CARGO_PANIC.search(body)
        test = section["test"]
        if panic is None:
            items.append(_item("", 0, "failed", "failed", test=test))
            continue
        file = paths.relative(panic["file"])
        items.append(_item(file, int(panic["line"]), "failed", panic["message"], test=test))
    return items


@dataclass(frozen=True)
class Format:
    """One entry of ``FORMATS``: its reader and whether it reads tests or lint findings."""

    read: Reader
    tests: bool
    """Items are failing tests (shown as "already failing" when on the base)."""
    found_codes: frozenset[int] = frozenset({1})
    """Exit codes meaning "ran through and found these items". Only with one of them may a
    gate pass because its items were all on the base: pytest's 2 (interrupted, e.g. by a
    collection error) ran no tests at all, on the base or in the change."""
    report: Report | None = None
    """A report the tool writes when asked (pytest's JUnit XML), read before its output."""


FORMATS: dict[str, Format] = {
    "ruff-json": Format(read_ruff_json, tests=False),
    "mypy": Format(read_mypy, tests=False),
    "eslint-json": Format(read_eslint_json, tests=False),
    "golangci-json": Format(read_golangci_json, tests=False),
    "cargo-json": Format(read_cargo_json, tests=False, found_codes=frozenset({101})),
    "pytest": Format(read_pytest, tests=True, report=JUNIT),
    "go-test-json": Format(read_go_test_json, tests=True),
    "cargo-test": Format(read_cargo_test, tests=True, found_codes=frozenset({101})),
}
"""Every ``format`` a gate may name; ``docs/configuration.md`` lists them."""
