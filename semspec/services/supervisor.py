"""Start, check and stop the embedded service stack.

``up`` is idempotent: a recorded service whose PID still runs our command line is left alone,
unless it uses a service that moved; a service that died comes back on its recorded ports when they
are free, and whatever depends on one whose address changed anyway is restarted. ``down`` stops
only recorded processes that are still ours, and needs nothing but the run folder. Data under the
run directory survives both.
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
    make_private_dir,
    run_dir_of,
    save_records,
    tighten_entries,
)
from semspec.services import process
from semspec.services.git_exclude import exclude_from_git
from semspec.services.presence import Presence, outdated_endpoints
from semspec.services.run_location import remember_run_dir
from semspec.services.specs import NatsSpec, ServiceSpec, TemporalSpec

HEALTH_TIMEOUT_S = 60.0


@dataclass
class ServiceStatus:
    """What ``status`` reports for one service."""

    name: str
    # up, down, unhealthy, started, already running, restarted, stale (uses an address the
    # service no longer has), external, unreachable, stopped, not running, not ours
    state: str
    address: str
    version: str = ""
    pid: int | None = None
    extra: dict[str, str] | None = None
    # Workers and monitors: the identity the process announced (Temporal's for a worker).
    identity: str = ""


SERVICE_ORDER = ("nats", "temporal", "graph", "worker", "monitor", "console")
"""Names of the services ``up`` manages, in start order (``down`` stops them in reverse)."""


def default_specs(config: SemspecConfig | None = None) -> list[ServiceSpec]:
    """The services ``up`` manages, in start order; later services may depend on earlier. The
    console comes last, unless ``console.enabled`` is off."""
    from semspec.services.agents import MonitorSpec, WorkerSpec
    from semspec.services.console_service import ConsoleSpec
    from semspec.services.graph_server import GraphSpec

    specs: list[ServiceSpec] = [
        NatsSpec(),
        TemporalSpec(),
        GraphSpec(),
        WorkerSpec(),
        MonitorSpec(),
    ]
    if config is None or config.console.enabled:
        specs.append(ConsoleSpec())
    return specs


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
        self.specs = list(specs) if specs is not None else default_specs(config)
        self._progress = on_progress or (lambda _msg: None)
        self._log_start: dict[str, int] = {}

    def up(self) -> list[ServiceStatus]:
        """Start every embedded service not already running and wait until each is healthy.

        A service starts once the services it ``depends_on`` are healthy (all earlier ones
        when it does not say), so independent services come up side by side. A running one
        whose dependency came back on another address is restarted.
        """
        if make_private_dir(self.run_dir):
            tighten_entries(self.run_dir)
            self._progress(f"{self.run_dir}: was open to other users; now its owner's only (0700)")
        remember_run_dir(self.repo, self.run_dir)
        # Task worktrees go under the run directory; keep them out of the user's `git status`.
        exclude_from_git(self.repo, self.run_dir)
        records = load_records(self.run_dir)
        statuses: dict[str, ServiceStatus] = {}
        starting: dict[str, tuple[ServiceSpec, ServiceRecord]] = {}
        moved: set[str] = set()
        for spec in self.specs:
            external = spec.external_address(self.config)
            if external is not None:
                statuses[spec.name] = ServiceStatus(spec.name, "external", external)
                continue
            needs: tuple[str, ...] | None = getattr(spec, "depends_on", None)
            current = records.get(spec.name)
            if current is not None and is_ours(current.pid, current.argv):
                statuses.update(self._await(starting, needs))
                why = self._outdated(spec, current, records, moved)
                if why is None:
                    self._progress(f"{spec.name}: already running (pid {current.pid})")
                    statuses[spec.name] = self._status(spec, current, "already running")
                    continue
                self._progress(f"{spec.name}: restarting: it uses {why}")
                process.stop(current.pid, current.argv)
            else:
                statuses.update(self._await(starting, needs))
            previous = records.pop(spec.name, None)
            record = self._start(spec, records, previous.ports if previous else None)
            if previous is not None and previous.address != record.address:
                moved.add(spec.name)
            starting[spec.name] = (spec, record)
        statuses.update(self._await(starting, None))
        if any(spec.name == "nats" for spec in self.specs):
            self._prepare_jetstream()
        return [statuses[spec.name] for spec in self.specs]

    def _prepare_jetstream(self) -> None:
        """Create semspec's streams, bucket and consumer, or bring them to the configured limits
        and replicas (a changed ``services.nats.replicas`` takes effect here)."""
        import asyncio

        from semspec.services.jetstream import prepare_jetstream

        asyncio.run(prepare_jetstream(self.config, self.repo))
        replicas = self.config.services.nats.replicas
        self._progress(f"nats: semspec's streams have {replicas} replica(s)")

    def _outdated(
        self,
        spec: ServiceSpec,
        record: ServiceRecord,
        records: dict[str, ServiceRecord],
        moved: set[str],
    ) -> str | None:
        """Why the running ``record`` must restart (it uses a service that moved), or None."""
        needs: tuple[str, ...] | None = getattr(spec, "depends_on", None)
        gone = sorted(name for name in moved if needs is None or name in needs)
        announced = _presence(spec, record)
        old = outdated_endpoints(announced, self._addresses(records)) if announced else []
        if old:
            return "; ".join(old)
        return f"{', '.join(gone)} from before it moved" if gone else None

    def _addresses(self, records: dict[str, ServiceRecord]) -> dict[str, str]:
        """Where each service is now: its external address, else the recorded one."""
        found = {}
        for spec in self.specs:
            external = spec.external_address(self.config)
            record = records.get(spec.name)
            if external is not None:
                found[spec.name] = external
            elif record is not None:
                found[spec.name] = record.address
        return found

    def _start(
        self,
        spec: ServiceSpec,
        records: dict[str, ServiceRecord],
        keep: dict[str, int] | None = None,
    ) -> ServiceRecord:
        """Launch one service (on the ports in ``keep`` when free) and record it at once, so
        `down` can stop it whatever follows."""
        taken = {port for rec in records.values() for port in rec.ports.values()}
        launch = spec.plan(self.config, self.repo, self.run_dir, taken, keep)
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
        """State of every service: embedded ones by PID and health, external ones by probe; a
        worker or monitor using an address its service no longer has is ``stale``."""
        records = load_records(self.run_dir)
        now = self._addresses(records)
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
                results.append(self._status(spec, record, state, now))
            results += self._others(spec, record, now)
        return results

    def _others(
        self, spec: ServiceSpec, record: ServiceRecord | None, now: dict[str, str]
    ) -> list[ServiceStatus]:
        """Live processes serving as ``spec`` that ``up`` did not start (e.g. more workers)."""
        instances = getattr(spec, "instances", None)
        describe = getattr(spec, "describe", None)
        if instances is None:
            return []
        found: list[Presence] = instances(self.run_dir)
        return [
            _checked(
                ServiceStatus(
                    spec.name,
                    "up",
                    describe(self.config) if describe is not None else "",
                    spec.version(),
                    other.pid,
                    {"started": "separately"},
                    other.identity,
                ),
                other,
                now,
            )
            for other in found
            if record is None or other.pid != record.pid
        ]

    def down(self) -> list[ServiceStatus]:
        """Stop what ``up`` started, in reverse order; never a process we did not start."""
        return stop_recorded(self.run_dir, [spec.name for spec in self.specs], unlisted=False)

    def _status(
        self,
        spec: ServiceSpec,
        record: ServiceRecord,
        state: str,
        now: dict[str, str] | None = None,
    ) -> ServiceStatus:
        announced = _presence(spec, record)
        status = ServiceStatus(
            spec.name,
            state,
            record.address,
            spec.version(),
            record.pid,
            dict(record.extra),
            announced.identity if announced is not None else "",
        )
        return _checked(status, announced, now) if announced and now else status


def stop_recorded(
    run_dir: Path, order: Sequence[str] = SERVICE_ORDER, *, unlisted: bool = True
) -> list[ServiceStatus]:
    """Stop the services ``run_dir/services.json`` records, those named in ``order`` last first
    (then, with ``unlisted``, any other it records); needs no config, so it works when the config
    is broken."""
    records = load_records(run_dir)
    names = [*reversed(order), *(sorted(set(records) - set(order)) if unlisted else [])]
    log = get_logger("services")
    results = []
    for name in names:
        record = records.pop(name, None)
        if record is None:
            continue
        if process.stop(record.pid, record.argv):
            state = "stopped"
            log.debug("service stopped", service=name, pid=record.pid)
        elif cmdline_of(record.pid) is None:
            state = "not running"
            log.debug("service already gone", service=name, pid=record.pid)
        else:
            # The PID was reused by a program we did not start: never signal it.
            state = "not ours"
            log.warning("pid runs another program; left alone", service=name, pid=record.pid)
        results.append(ServiceStatus(name, state, record.address, pid=record.pid))
        save_records(run_dir, records)
    return results


def _presence(spec: ServiceSpec, record: ServiceRecord) -> Presence | None:
    """What the process of ``record`` announced, for specs whose processes announce."""
    presence = getattr(spec, "presence", None)
    found: Presence | None = presence(record) if presence is not None else None
    return found


def _checked(status: ServiceStatus, announced: Presence, now: dict[str, str]) -> ServiceStatus:
    """``status`` marked ``stale`` (with what is outdated) when ``announced`` uses an address
    its service no longer has."""
    old = outdated_endpoints(announced, now)
    if not old:
        return status
    status.state = "stale"
    status.extra = {**(status.extra or {}), "stale": "; ".join(old)}
    return status


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
