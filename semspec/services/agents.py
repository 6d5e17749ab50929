"""Python services started by ``semspec up``: the Temporal worker and the risk monitor.

Each announces itself once it serves (``services.presence``: one ready file per process, named by
its PID), which is its health check. More workers or monitors started by hand on the same stack
announce themselves the same way, so ``semspec status`` lists every one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from semspec import __version__
from semspec.core.config.models import SemspecConfig
from semspec.core.run_folder import ServiceRecord
from semspec.services.presence import Presence, present, read_presence, ready_dir, ready_file
from semspec.services.specs import LaunchPlan

# Records written before the ready file moved to ``extra`` kept it in the address.
_LEGACY_PREFIX = "pid-file "


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

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        # ``--repo`` belongs to the root command, so it goes before the subcommand.
        argv = [sys.executable, "-m", "semspec", "--repo", str(repo), self.command]
        return LaunchPlan(argv, self.describe(config), {}, {"ready_dir": str(ready_dir(run_dir))})

    def presence(self, record: ServiceRecord) -> Presence | None:
        """What the process ``up`` started announced, or None before it serves."""
        folder = record.extra.get("ready_dir")
        if folder is None:
            return None
        found = read_presence(ready_file(Path(folder).parent, self.name, record.pid))
        return found if found is not None and found.pid == record.pid else None

    def healthy(self, record: ServiceRecord) -> bool:
        if "ready_dir" in record.extra:
            return self.presence(record) is not None
        # A stack started by an earlier version: one ready file holding the PID.
        path = Path(record.extra.get("ready_file") or record.address.removeprefix(_LEGACY_PREFIX))
        try:
            return path.read_text(encoding="utf-8").strip() == str(record.pid)
        except OSError:
            return False

    def instances(self, run_dir: Path) -> list[Presence]:
        """Every live process serving as this service, whoever started it."""
        return present(run_dir, self.name)

    def check_external(self, config: SemspecConfig) -> bool:
        return False

    def version(self) -> str:
        return f"semspec {__version__}"


class WorkerSpec(_PythonServiceSpec):
    """The Temporal worker that runs task and plan workflows and their activities."""

    name = "worker"
    command = "worker"
    # Task activities read and write the graph through the server `up` starts.
    depends_on: tuple[str, ...] = ("nats", "temporal", "graph")

    def describe(self, config: SemspecConfig) -> str:
        return f"task queue {config.services.temporal.task_queue}"


class MonitorSpec(_PythonServiceSpec):
    """The risk monitor processor."""

    name = "monitor"
    command = "monitor"

    def describe(self, config: SemspecConfig) -> str:
        return "agent.monitor.* -> user.signal.*"
