"""Plain dataclasses of the gate layer: what to run, what one run gave, and the whole report.

They cross the Temporal activity boundary, so they hold only str, int, float, bool, lists and
nested dataclasses; the helpers are methods and properties, which serialization ignores.
"""

from __future__ import annotations

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
        share = max(0, max_chars // len(failures))
        blocks = [_failure_block(r, share) for r in failures]
        return "\n\n".join(blocks)[:max_chars]

    def summary_text(self) -> str:
        """A short account for the reviewer: one line per gate, optional failures as warnings."""
        if not self.results:
            return "No gates are configured."
        lines = []
        for result in self.results:
            prefix = "WARNING: " if not result.required and not result.passed else ""
            lines.append(f"- {prefix}{result.headline()}")
        return "\n".join(lines)


def _failure_block(result: GateResult, budget: int) -> str:
    """Header, command, and as much of the output's end as ``budget`` allows."""
    header = f"{result.headline()}\n$ {result.command}\n"
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
