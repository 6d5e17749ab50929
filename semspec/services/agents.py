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

    def external_address(self, config: SemspecConfig) -> str | None:
        return None

    def plan(self, config: SemspecConfig, repo: Path, run_dir: Path, taken: set[int]) -> LaunchPlan:
        ready_file(run_dir, self.name).unlink(missing_ok=True)
        argv = [sys.executable, "-m", "semspec", self.command, "--repo", str(repo)]
        return LaunchPlan(argv, f"pid-file {ready_file(run_dir, self.name)}", {})

    def healthy(self, record: ServiceRecord) -> bool:
        path = Path(record.address.removeprefix("pid-file "))
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


class MonitorSpec(_PythonServiceSpec):
    """The risk monitor processor."""

    name = "monitor"
    command = "monitor"
