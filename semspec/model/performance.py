"""Model performance history per role, behind a small Protocol.

``JsonPerformanceHistory`` keeps running totals per (model, role) in
``.semspec/run/performance.json``; the graph store can implement the same Protocol later.
Totals rather than raw outcomes keep the file small however many tasks run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from semspec.core.errors import ConfigError
from semspec.model.profiles import Role


@dataclass(frozen=True)
class TaskOutcome:
    """How one task went for a model in a role."""

    approved: bool
    iterations: int
    tokens: int
    latency_s: float


@dataclass(frozen=True)
class PerformanceStats:
    """Running totals of a model in a role; the derived figures are None without data."""

    tasks: int = 0
    approved: int = 0
    iterations: int = 0
    approved_tokens: int = 0
    latency_s: float = 0.0

    @property
    def approval_rate(self) -> float:
        """Approvals over tasks with a uniform prior (Laplace): 0.5 for a model never tried."""
        return (self.approved + 1) / (self.tasks + 2)

    @property
    def mean_iterations(self) -> float | None:
        """Developer iterations per task."""
        return self.iterations / self.tasks if self.tasks else None

    @property
    def tokens_per_approval(self) -> float | None:
        """Tokens spent on approved tasks per approved task."""
        return self.approved_tokens / self.approved if self.approved else None

    @property
    def mean_latency_s(self) -> float | None:
        """Seconds per task."""
        return self.latency_s / self.tasks if self.tasks else None

    def add(self, outcome: TaskOutcome) -> PerformanceStats:
        """These totals with ``outcome`` included."""
        return PerformanceStats(
            tasks=self.tasks + 1,
            approved=self.approved + int(outcome.approved),
            iterations=self.iterations + outcome.iterations,
            approved_tokens=self.approved_tokens + (outcome.tokens if outcome.approved else 0),
            latency_s=self.latency_s + outcome.latency_s,
        )


class PerformanceHistory(Protocol):
    """Where outcomes are recorded and per-role statistics are read."""

    def record(self, model: str, role: Role, outcome: TaskOutcome) -> None:
        """Add one task's outcome for ``model`` in ``role``."""
        ...

    def stats(self, model: str, role: Role) -> PerformanceStats:
        """Totals of ``model`` in ``role`` (all zero when nothing was recorded)."""
        ...


class JsonPerformanceHistory:
    """Performance totals in one JSON file, written atomically; safe across threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    @classmethod
    def for_repo(cls, repo: Path, run_dir: str = ".semspec/run") -> JsonPerformanceHistory:
        """The history file of the repository at ``repo``."""
        return cls(repo / run_dir / "performance.json")

    def _load(self) -> dict[str, dict[str, dict[str, float]]]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(
                f"cannot read performance history: {exc}",
                path=str(self.path),
                hint="delete the file to start the history afresh",
            ) from exc
        if not isinstance(data, dict):
            raise ConfigError(
                "top level is not a mapping", path=str(self.path), expected="{model: {role: {...}}}"
            )
        return data

    def _save(self, data: dict[str, dict[str, dict[str, float]]]) -> None:
        # Write to a sibling and rename so a crash never leaves a half-written history.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".performance-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        # The thread lock covers this process; flock covers other workers on the same repository.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path.with_suffix(".lock"), "a") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def record(self, model: str, role: Role, outcome: TaskOutcome) -> None:
        """Add one outcome to the totals of ``model`` in ``role`` and save the file."""
        with self._exclusive():
            data = self._load()
            current = self._parse(data, model, role)
            data.setdefault(model, {})[role] = asdict(current.add(outcome))
            self._save(data)

    def stats(self, model: str, role: Role) -> PerformanceStats:
        """Totals of ``model`` in ``role`` from the file (zero when absent)."""
        with self._lock:
            return self._parse(self._load(), model, role)

    def _parse(
        self, data: dict[str, dict[str, dict[str, float]]], model: str, role: Role
    ) -> PerformanceStats:
        raw = data.get(model, {}).get(role)
        if raw is None:
            return PerformanceStats()
        try:
            return PerformanceStats(
                tasks=int(raw["tasks"]),
                approved=int(raw["approved"]),
                iterations=int(raw["iterations"]),
                approved_tokens=int(raw["approved_tokens"]),
                latency_s=float(raw["latency_s"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"malformed totals: {exc}",
                path=str(self.path),
                field=f"{model}.{role}",
                expected="tasks, approved, iterations, approved_tokens, latency_s",
                hint="delete the entry (or the file) to start it afresh",
            ) from exc


class MemoryPerformanceHistory:
    """Performance totals held in memory (workers without a repository, tests)."""

    def __init__(self) -> None:
        self._totals: dict[tuple[str, str], PerformanceStats] = {}
        self._lock = threading.Lock()

    def record(self, model: str, role: Role, outcome: TaskOutcome) -> None:
        """Add one outcome to the totals of ``model`` in ``role``."""
        with self._lock:
            key = (model, role)
            self._totals[key] = self._totals.get(key, PerformanceStats()).add(outcome)

    def stats(self, model: str, role: Role) -> PerformanceStats:
        """Totals of ``model`` in ``role`` (zero when absent)."""
        with self._lock:
            return self._totals.get((model, role), PerformanceStats())
