"""Start, check and stop the embedded service stack.

``up`` is idempotent: a recorded service whose PID still runs our command line is left alone.
``down`` stops only recorded processes that are still ours. Data under the run directory
survives both.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.logging import get_logger
from semspec.core.run_folder import (
    ServiceRecord,
    cmdline_of,
    is_ours,
    load_records,
    run_dir_of,
    save_records,
)
from semspec.services import process
from semspec.services.git_exclude import exclude_from_git
from semspec.services.specs import NatsSpec, ServiceSpec, TemporalSpec

HEALTH_TIMEOUT_S = 60.0


@dataclass
class ServiceStatus:
    """What ``status`` reports for one service."""

    name: str
    # up, down, unhealthy, started, already running, external, unreachable,
    # stopped, not running, not ours
    state: str
    address: str
    version: str = ""
    pid: int | None = None
    extra: dict[str, str] | None = None
    # Workers and monitors: the identity the process announced (Temporal's for a worker).
    identity: str = ""


def default_specs() -> list[ServiceSpec]:
    """The services ``up`` manages, in start order; later services may depend on earlier."""
    from semspec.services.agents import MonitorSpec, WorkerSpec
    from semspec.services.graph_server import GraphSpec

    return [NatsSpec(), TemporalSpec(), GraphSpec(), WorkerSpec(), MonitorSpec()]


class Supervisor:
    """Starts and stops the services of one repository."""

    def __init__(
        self,
        config: SemspecConfig,
        repo: Path,
        specs: Sequence[ServiceSpec] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.repo = repo
        self.run_dir = run_dir_of(config, repo)
        self.specs = list(specs) if specs is not None else default_specs()
        self._progress = on_progress or (lambda _msg: None)
        self._log_start: dict[str, int] = {}

    def up(self) -> list[ServiceStatus]:
        """Start every embedded service not already running and wait until each is healthy.

        A service starts once the services it ``depends_on`` are healthy (all earlier ones
        when it does not say), so independent services come up side by side.
        """
        self.run_dir.mkdir(parents=True, exist_ok=True)
        # Task worktrees go under the run directory; keep them out of the user's `git status`.
        exclude_from_git(self.repo, self.run_dir)
        records = load_records(self.run_dir)
        statuses: dict[str, ServiceStatus] = {}
        starting: dict[str, tuple[ServiceSpec, ServiceRecord]] = {}
        for spec in self.specs:
            external = spec.external_address(self.config)
            if external is not None:
                statuses[spec.name] = ServiceStatus(spec.name, "external", external)
                continue
            current = records.get(spec.name)
            if current is not None and is_ours(current.pid, current.argv):
                self._progress(f"{spec.name}: already running (pid {current.pid})")
                statuses[spec.name] = self._status(spec, current, "already running")
                continue
            needs: tuple[str, ...] | None = getattr(spec, "depends_on", None)
            statuses.update(self._await(starting, needs))
            records.pop(spec.name, None)
            starting[spec.name] = (spec, self._start(spec, records))
        statuses.update(self._await(starting, None))
        return [statuses[spec.name] for spec in self.specs]

    def _start(self, spec: ServiceSpec, records: dict[str, ServiceRecord]) -> ServiceRecord:
        """Launch one service and record it at once, so `down` can stop it whatever follows."""
        taken = {port for rec in records.values() for port in rec.ports.values()}
        launch = spec.plan(self.config, self.repo, self.run_dir, taken)
        log = self.run_dir / "logs" / f"{spec.name}.log"
        # Logs are appended to; a start-up failure is explained from this start's part only.
        self._log_start[str(log)] = _log_size(log)
        self._progress(f"{spec.name}: starting")
        pid = process.start_detached(launch.argv, log, self.repo, dict(os.environ))
        record = ServiceRecord(
            spec.name, pid, launch.argv, launch.address, launch.ports, launch.extra, str(log)
        )
        records[spec.name] = record
        save_records(self.run_dir, records)
        get_logger("services").debug(
            "service started", service=spec.name, pid=pid, address=launch.address
        )
        return record

    def _await(
        self, starting: dict[str, tuple[ServiceSpec, ServiceRecord]], names: tuple[str, ...] | None
    ) -> dict[str, ServiceStatus]:
        """Wait until the named services being started (all when ``names`` is None) are healthy."""
        done = {}
        for name in [n for n in starting if names is None or n in names]:
            spec, record = starting.pop(name)
            self._wait_healthy(spec, record)
            done[name] = self._status(spec, record, "started")
        return done

    def _wait_healthy(self, spec: ServiceSpec, record: ServiceRecord) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if not is_ours(record.pid, record.argv):
                explain = getattr(spec, "startup_hint", None)
                raise ServiceError(
                    f"exited during start-up{_log_reason(record.log, self._log_start)}",
                    service=spec.name,
                    address=record.address,
                    hint=explain(record) if explain else f"see its log: {record.log}",
                )
            if spec.healthy(record):
                self._progress(f"{spec.name}: healthy at {record.address}")
                return
            time.sleep(0.1)
        raise ServiceError(
            f"not healthy after {HEALTH_TIMEOUT_S:.0f}s",
            service=spec.name,
            address=record.address,
            hint=f"see its log: {record.log}",
        )

    def status(self) -> list[ServiceStatus]:
        """State of every service: embedded ones by PID and health, external ones by probe."""
        records = load_records(self.run_dir)
        results = []
        for spec in self.specs:
            external = spec.external_address(self.config)
            if external is not None:
                state = "external" if spec.check_external(self.config) else "unreachable"
                results.append(ServiceStatus(spec.name, state, external))
                continue
            record = records.get(spec.name)
            if record is None or not is_ours(record.pid, record.argv):
                results.append(ServiceStatus(spec.name, "down", record.address if record else ""))
            else:
                state = "up" if spec.healthy(record) else "unhealthy"
                results.append(self._status(spec, record, state))
            results += self._others(spec, record)
        return results

    def _others(self, spec: ServiceSpec, record: ServiceRecord | None) -> list[ServiceStatus]:
        """Live processes serving as ``spec`` that ``up`` did not start (e.g. more workers)."""
        instances = getattr(spec, "instances", None)
        describe = getattr(spec, "describe", None)
        if instances is None:
            return []
        return [
            ServiceStatus(
                spec.name,
                "up",
                describe(self.config) if describe is not None else "",
                spec.version(),
                found.pid,
                {"started": "separately"},
                found.identity,
            )
            for found in instances(self.run_dir)
            if record is None or found.pid != record.pid
        ]

    def down(self) -> list[ServiceStatus]:
        """Stop what ``up`` started, in reverse order; never a process we did not start."""
        records = load_records(self.run_dir)
        results = []
        for spec in reversed(self.specs):
            record = records.pop(spec.name, None)
            if record is None:
                continue
            log = get_logger("services")
            if process.stop(record.pid, record.argv):
                state = "stopped"
                log.debug("service stopped", service=spec.name, pid=record.pid)
            elif cmdline_of(record.pid) is None:
                state = "not running"
                log.debug("service already gone", service=spec.name, pid=record.pid)
            else:
                # The PID was reused by a program we did not start: never signal it.
                state = "not ours"
                log.warning(
                    "pid runs another program; left alone", service=spec.name, pid=record.pid
                )
            results.append(ServiceStatus(spec.name, state, record.address, pid=record.pid))
            save_records(self.run_dir, records)
        return results

    def _status(self, spec: ServiceSpec, record: ServiceRecord, state: str) -> ServiceStatus:
        presence = getattr(spec, "presence", None)
        announced = presence(record) if presence is not None else None
        return ServiceStatus(
            spec.name,
            state,
            record.address,
            spec.version(),
            record.pid,
            dict(record.extra),
            announced.identity if announced is not None else "",
        )


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size if log.is_file() else 0
    except OSError:
        return 0


def _log_reason(log: str, starts: dict[str, int], limit: int = 300) -> str:
    """``: <why>`` from what this start wrote to ``log``: its first line saying ``error:`` or
    ``fatal`` (a backtrace may follow), else its last line; bounded. Nothing when unreadable."""
    if not log or not Path(log).is_file():
        return ""
    try:
        with open(log, "rb") as handle:
            end = handle.seek(0, os.SEEK_END)
            handle.seek(max(starts.get(log, 0), end - 8192))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line.lower() or "fatal" in line.lower()]
    chosen = errors[:1] or lines[-1:]
    return f": {chosen[0][:limit]}" if chosen else ""
