"""Python services started by ``semspec up``: the Temporal worker and the risk monitor.

Each writes ``<run_dir>/<name>.ready`` holding its PID once it serves, which is its health check.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from semspec import __version__
from semspec.config.models import SemspecConfig
from semspec.services.specs import LaunchPlan
from semspec.services.state import ServiceRecord

# Records written before the ready file moved to ``extra`` kept it in the address.
_LEGACY_PREFIX = "pid-file "


def ready_file(run_dir: Path, name: str) -> Path:
    """The file a Python service writes when it is serving."""
    return run_dir / f"{name}.ready"


def mark_ready(run_dir: Path, name: str) -> None:
    """Record that this process serves as ``name``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = ready_file(run_dir, name)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(str(os.getpid()), encoding="utf-8")
    os.replace(tmp, path)


class _PythonServiceSpec:
    name = ""
    command = ""
    # Both connect to NATS and Temporal at start; neither needs the other.
    depends_on: tuple[str, ...] = ("nats", "temporal")

    def external_address(self, config: SemspecConfig) -> str | None:
        return None

    def describe(self, config: SemspecConfig) -> str:
        """What the service serves, shown in the address column of ``semspec status``."""
        return self.name

    def plan(self, config: SemspecConfig, repo: Path, run_dir: Path, taken: set[int]) -> LaunchPlan:
        ready = ready_file(run_dir, self.name)
        # A ready file left by an earlier run must not make the new process look healthy.
        ready.unlink(missing_ok=True)
        # ``--repo`` belongs to the root command, so it goes before the subcommand.
        argv = [sys.executable, "-m", "semspec", "--repo", str(repo), self.command]
        return LaunchPlan(argv, self.describe(config), {}, {"ready_file": str(ready)})

    def healthy(self, record: ServiceRecord) -> bool:
        path = Path(record.extra.get("ready_file") or record.address.removeprefix(_LEGACY_PREFIX))
        try:
            return path.read_text(encoding="utf-8").strip() == str(record.pid)
        except OSError:
            return False

    def check_external(self, config: SemspecConfig) -> bool:
        return False

    def version(self) -> str:
        return f"semspec {__version__}"


class WorkerSpec(_PythonServiceSpec):
    """The Temporal worker that runs task and plan workflows and their activities."""

    name = "worker"
    command = "worker"

    def describe(self, config: SemspecConfig) -> str:
        return f"task queue {config.services.temporal.task_queue}"


class MonitorSpec(_PythonServiceSpec):
    """The risk monitor processor."""

    name = "monitor"
    command = "monitor"

    def describe(self, config: SemspecConfig) -> str:
        return "agent.monitor.* -> user.signal.*"
