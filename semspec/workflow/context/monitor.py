"""Runtime context pressure of one agent loop (ADR-004 "Runtime Context Monitoring").

Pure and deterministic: it runs inside workflow code, so no I/O, clocks or randomness.

Pressure levels by utilization (tokens used / window). Each boundary belongs to the level above
it, except 85% which is still red: "critical" means *over* 85%.

    green     u < 50%            normal
    yellow    50% <= u < 65%     log a warning
    orange    65% <= u < 75%     consider a checkpoint
    red       75% <= u <= 85%    checkpoint and evaluate
    critical  u > 85%            force a checkpoint

Comparisons are done in integers (tokens * 10,000 against window * basis points), so 65% of a
window is orange exactly, with no floating-point doubt.
"""

# No ``from __future__ import annotations``: ContextSnapshot crosses the Temporal boundary and
# the workflow sandbox cannot resolve string annotations such as ``Literal[...]``.

from dataclasses import dataclass, field
from typing import Literal

Pressure = Literal["green", "yellow", "orange", "red", "critical"]


_YELLOW_BP, _ORANGE_BP, _RED_BP, _CRITICAL_ABOVE_BP = 5_000, 6_500, 7_500, 8_500


@dataclass
class ContextSnapshot:
    """Context use after an iteration; a plain dataclass so Temporal can carry it."""

    iteration: int
    tokens_used: int
    window: int
    utilization: float
    tokens_per_iteration: float | None
    iterations_remaining: int | None
    pressure: Pressure


def pressure_for(tokens_used: int, window: int) -> Pressure:
    """The pressure level of ``tokens_used`` out of ``window`` (boundaries as documented above)."""
    scaled = tokens_used * 10_000
    if scaled > window * _CRITICAL_ABOVE_BP:
        return "critical"
    if scaled >= window * _RED_BP:
        return "red"
    if scaled >= window * _ORANGE_BP:
        return "orange"
    if scaled >= window * _YELLOW_BP:
        return "yellow"
    return "green"


def should_checkpoint(snapshot: ContextSnapshot) -> bool:
    """Whether the loop must checkpoint now: at red or critical pressure."""
    return snapshot.pressure in ("red", "critical")


@dataclass
class ContextTracker:
    """Collects ``(iteration, tokens_used)`` samples of one loop and summarizes them.

    A plain dataclass so a workflow can keep it in its state and pass it on continue-as-new.
    """

    window: int
    samples: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.window <= 0:
            raise ValueError(f"window must be positive, got {self.window}")

    def observe(self, iteration: int, tokens_used: int) -> ContextSnapshot:
        """Record a sample (a repeated iteration replaces the earlier one) and summarize."""
        if tokens_used < 0:
            raise ValueError(f"tokens_used must be zero or more, got {tokens_used}")
        if self.samples and iteration < self.samples[-1][0]:
            raise ValueError(
                f"iteration {iteration} comes before the last one seen ({self.samples[-1][0]})"
            )
        if self.samples and self.samples[-1][0] == iteration:
            self.samples[-1] = (iteration, tokens_used)
        else:
            self.samples.append((iteration, tokens_used))
        return self.snapshot()

    def snapshot(self) -> ContextSnapshot:
        """The summary of the samples so far (all zero before the first one)."""
        iteration, used = self.samples[-1] if self.samples else (0, 0)
        rate = self._rate()
        remaining = None
        if rate is not None and rate > 0:
            remaining = max(int((self.window - used) // rate), 0)
        return ContextSnapshot(
            iteration=iteration,
            tokens_used=used,
            window=self.window,
            utilization=used / self.window,
            tokens_per_iteration=rate,
            iterations_remaining=remaining,
            pressure=pressure_for(used, self.window),
        )

    def _rate(self) -> float | None:
        # Average growth from the first sample to the last: the loop's tokens per iteration.
        if len(self.samples) < 2:
            return None
        (first_iter, first_used), (last_iter, last_used) = self.samples[0], self.samples[-1]
        return (last_used - first_used) / (last_iter - first_iter)
