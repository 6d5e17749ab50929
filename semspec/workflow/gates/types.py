"""Plain dataclasses of the gate layer: what to run, what one run gave, and the whole report.

They cross the Temporal activity boundary, so they hold only str, int, float, bool, lists and
nested dataclasses; the helpers are methods and properties, which serialization ignores.
Annotations are evaluated here (no ``from __future__ import annotations``): Temporal's workflow
sandbox decodes these from their hints, and could not resolve ``GateItem`` as a string there.
"""

from dataclasses import dataclass, field


@dataclass
class GateSpec:
    """One resolved gate: a shell command from config with its limits."""

    name: str
    command: str
    required: bool = True
    timeout_s: float = 600.0
    working_dir: str = "."
    network: bool = False
    """Whether the gate may use the network when it runs sandboxed."""
    format: str = ""
    """How the gate's output is read into items (``parsers.FORMATS``); empty: not read."""
    baseline: str = "auto"
    """``auto``: items already on the task's base commit do not count; ``off``: all count."""
    args: list[str] = field(default_factory=list)
    """Arguments after the command (``sh -c COMMAND sh ARGS...``): the changed files of a gate
    naming ``{changed_files}`` (``changed_files``); never part of the shell text."""


@dataclass
class GateItem:
    """One thing a gate found: a lint finding or a failing test (``findings``)."""

    path: str
    line: int
    rule: str
    """The linter's rule code, or ``test`` / ``error`` for a test runner's failures."""
    message: str
    test: str = ""
    """A failing test's id (``tests/test_x.py::test_y``); empty for a lint finding."""

    def text(self) -> str:
        """``path:line: rule: message``, or ``test id: failed: message`` for a test."""
        where = f"{self.path}:{self.line}" if self.line else self.path
        if self.test:
            where = f"{self.test} ({where})" if self.line else self.test
        return f"{where}: {self.rule}: {self.message}".rstrip(": ")


@dataclass
class GateResult:
    """The outcome of running one gate, with bounded inline output and the full log's path."""

    name: str
    command: str
    required: bool
    passed: bool
    exit_code: int | None
    duration_ms: float
    timed_out: bool
    output: str
    output_truncated: bool
    output_bytes: int
    log_path: str
    items: list[GateItem] = field(default_factory=list)
    """The findings that count against the change (new ones, with a baseline), at most
    ``findings.MAX_ITEMS``."""
    items_more: int = 0
    """How many more counted findings there were than ``items`` holds."""
    known: int = 0
    """Findings (or failing tests) already on the base commit, not counted."""
    known_examples: list[GateItem] = field(default_factory=list)
    """A few of the ``known`` ones, to show what was set aside."""
    note: str = ""
    """What semspec made of the output (``baseline``): why it passed, why no baseline."""
    report_path: str = ""
    """A report the gate's tool wrote besides its output (pytest's JUnit XML, ``junit``),
    kept beside its log; items are read from it first."""

    @property
    def has_items(self) -> bool:
        """True when the output was read into findings worth showing before the raw text."""
        return bool(self.items) or self.items_more > 0

    def items_text(self, limit: int | None = None) -> str:
        """The counted findings, one per line, with a line for the ones left out."""
        shown = self.items if limit is None else self.items[:limit]
        lines = [f"- {item.text()}" for item in shown]
        rest = self.items_more + len(self.items) - len(shown)
        if rest:
            lines.append(f"- ... and {rest} more (full log: {self.log_path})")
        return "\n".join(lines)

    def headline(self) -> str:
        """One line saying how the gate ended (passed, exit code, timeout, or did not start)."""
        kind = "required" if self.required else "optional"
        if self.passed:
            status = "passed"
        elif self.timed_out:
            status = "timed out"
        elif self.exit_code is None:
            status = "could not start"
        else:
            status = f"failed with exit code {self.exit_code}"
        if self.has_items:
            count = len(self.items) + self.items_more
            status += f": {count} new finding{'s' if count != 1 else ''}"
        return f"gate {self.name!r} ({kind}) {status} in {self.duration_ms / 1000:.1f}s"


@dataclass
class GateReport:
    """Every gate's result in the order they ran."""

    results: list[GateResult] = field(default_factory=list)

    @property
    def required_failures(self) -> list[GateResult]:
        """Failed gates that send the developer back."""
        return [r for r in self.results if r.required and not r.passed]

    @property
    def optional_failures(self) -> list[GateResult]:
        """Failed gates that only warn."""
        return [r for r in self.results if not r.required and not r.passed]

    @property
    def passed(self) -> bool:
        """True when every required gate passed (optional failures do not count)."""
        return not self.required_failures

    def feedback_text(self, max_chars: int = 8_000) -> str:
        """The failed required gates' output for the developer, at most ``max_chars`` long.

        Each failure gets an equal share of the budget; when a gate's output does not fit its
        share, the end of it is kept, since compilers and test runners put the summary last.
        """
        failures = self.required_failures
        if not failures:
            return ""
        # New findings of failed optional gates come along as warnings: the developer is going
        # back anyway, and fixing them now costs less than a reviewer's round.
        warnings = [r for r in self.optional_failures if r.has_items]
        share = max(0, max_chars // (len(failures) + len(warnings)))
        blocks = [_failure_block(r, share) for r in failures]
        blocks += [_warning_block(r, share) for r in warnings]
        return "\n\n".join(blocks)[:max_chars]

    def summary_text(self) -> str:
        """A short account for the reviewer: one line per gate, optional failures as warnings."""
        if not self.results:
            return "No gates are configured."
        lines = []
        for result in self.results:
            prefix = "WARNING: " if not result.required and not result.passed else ""
            lines.append(f"- {prefix}{result.headline()}")
            if result.note:
                lines.append(f"  {result.note}")
            if result.has_items and not result.passed:
                lines.extend(f"  {line}" for line in result.items_text(10).splitlines())
        return "\n".join(lines)


def _failure_block(result: GateResult, budget: int) -> str:
    """Header, command, and as much of the output's end as ``budget`` allows; a gate whose
    output was read into findings gives those instead (the raw log stays a path away)."""
    header = f"{result.headline()}\n$ {result.command}\n"
    if result.has_items:
        note = f"{result.note}\n" if result.note else ""
        for limit in range(len(result.items), 0, -1):
            body = f"{header}{note}{result.items_text(limit)}"
            if len(body) <= budget:
                return body
    footer = f"\n(full log: {result.log_path})"
    room = budget - len(header) - len(footer)
    output = result.output
    if room <= 0:
        return (header + footer)[:budget]
    if len(output) > room:
        marker = "[... earlier output cut ...]\n"
        keep = max(0, room - len(marker))
        output = marker + output[len(output) - keep :] if keep else marker[:room]
    return header + output + footer


def _warning_block(result: GateResult, budget: int) -> str:
    """An optional gate's new findings, as many as ``budget`` allows."""
    header = f"WARNING: {result.headline()}\n$ {result.command}\n"
    for limit in range(len(result.items), 0, -1):
        body = header + result.items_text(limit)
        if len(body) <= budget:
            return body
    return header[:budget]
