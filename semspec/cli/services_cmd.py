"""``semspec up|down|status``: the embedded service stack."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

import typer

from semspec.cli.context import cli_context
from semspec.cli.output import print_json, print_table

if TYPE_CHECKING:
    from semspec.core.config.models import SandboxMode
    from semspec.services.supervisor import ServiceStatus


def _show(
    ctx: typer.Context,
    statuses: list[ServiceStatus],
    as_json: bool,
    jetstream: dict[str, Any] | None = None,
) -> None:
    """The services as a table (or JSON); ``jetstream`` goes with the nats row in JSON, and
    in its own table after the services in text."""
    cli = cli_context(ctx)
    statuses = _with_console_url(ctx, statuses)
    if as_json:
        found = [asdict(s) for s in statuses]
        for row in found:
            if row["name"] == "nats" and jetstream is not None:
                row["jetstream"] = jetstream
        print_json(cli.console, found)
        return
    rows = [(s.name, s.state, s.address, s.version, s.pid or "", s.identity) for s in statuses]
    columns = ["service", "state", "address", "version", "pid", "identity"]
    print_table(cli.console, None, columns, rows)
    for status in statuses:
        if status.extra and status.extra.get("reason"):
            line = f"{status.name} {status.state}: {status.extra['reason']}"
            cli.console.print(line, markup=False, soft_wrap=True)
    for status in statuses:
        if status.extra and status.extra.get("ui_url"):
            cli.console.print(f"Temporal Web UI: {status.extra['ui_url']}", markup=False)
    for status in statuses:
        if status.name == "console" and status.extra and status.extra.get("url"):
            cli.console.print(f"semspec console: {status.extra['url']}", markup=False)
    for status in statuses:
        if status.state == "stale" and status.extra:
            who = f"{status.name} {status.identity or status.pid}"
            fix = (
                "restart it"
                if status.extra.get("started") == "separately"
                else "run `semspec up` to restart it"
            )
            cli.console.print(f"{who} uses {status.extra['stale']}: {fix}", markup=False)
    separate = [s for s in statuses if s.extra and s.extra.get("started") == "separately"]
    if separate:
        names = ", ".join(f"{s.name} {s.identity}" for s in separate)
        cli.console.print(
            f"started outside `semspec up` (`semspec down` leaves them running): {names}",
            markup=False,
        )
    if jetstream is not None:
        _show_jetstream(ctx, jetstream)


def _with_console_url(ctx: typer.Context, statuses: list[ServiceStatus]) -> list[ServiceStatus]:
    """The console's row with the URL that logs a browser in (it carries the stack's secret,
    kept in the run folder), while the console serves."""
    serving = ("started", "already running", "up", "restarted")
    if not any(s.name == "console" and s.state in serving and s.pid for s in statuses):
        return statuses
    from semspec.console.auth import login_url
    from semspec.core.run_folder import run_dir_of

    cli = cli_context(ctx)
    run_dir = run_dir_of(cli.config, cli.repo)
    shown = []
    for s in statuses:
        url = login_url(s.address, run_dir) if s.name == "console" and s.state in serving else None
        shown.append(replace(s, extra={**(s.extra or {}), "url": url}) if url else s)
    return shown


def _sandbox(mode: SandboxMode) -> tuple[dict[str, str], str]:
    """The fence gates and command agents get (``gates.sandbox``): the worker's ``extra``
    fields and a line for the table."""
    from semspec.core.sandbox import sandbox_for

    sandbox = sandbox_for(mode)
    if sandbox.bwrap is not None and sandbox.slirp4netns is not None:
        line = (
            f"gates and command agents run under bubblewrap ({sandbox.bwrap}), with network "
            f"through slirp4netns ({sandbox.slirp4netns}), off this machine's loopback"
        )
        return {"sandbox": "bwrap", "sandbox_network": "slirp4netns"}, line
    if sandbox.bwrap is not None:
        line = (
            f"gates and command agents run under bubblewrap ({sandbox.bwrap}); network: true "
            f"gates and command agents will fail: {sandbox.network_reason}"
        )
        return {"sandbox": "bwrap", "sandbox_network_reason": sandbox.network_reason}, line
    effect = "gates will fail until it works" if mode == "bwrap" else "they run unfenced"
    if mode != "none":
        effect += "; network: true gates and command agents will fail"
    return (
        {"sandbox": "none", "sandbox_reason": sandbox.reason},
        f"gates and command agents have no sandbox: {sandbox.reason}; {effect}",
    )


def _show_fenced(
    ctx: typer.Context,
    statuses: list[ServiceStatus],
    as_json: bool,
    jetstream: dict[str, Any] | None = None,
) -> None:
    """The services, with the sandbox gates get on the worker's row and in one line after."""
    cli = cli_context(ctx)
    sandbox, note = _sandbox(cli.config.gates.sandbox)
    shown = [
        replace(s, extra={**(s.extra or {}), **sandbox}) if s.name == "worker" else s
        for s in statuses
    ]
    _show(ctx, shown, as_json, jetstream)
    if not as_json:
        cli.console.print(note, markup=False, soft_wrap=True)


def _jetstream(ctx: typer.Context) -> dict[str, Any]:
    """The replicas and health of the stack's JetStream as ``status --json`` shows them, or
    ``{"error": ...}`` when it does not answer, with ``"connect": "refused"`` (or
    ``"unreachable"``) when no NATS server accepted the connection."""
    import asyncio

    from semspec.core.errors import SemspecError
    from semspec.core.nats_connect import NatsConnectError
    from semspec.services.jetstream import jetstream_health

    cli = cli_context(ctx)
    try:
        health = asyncio.run(jetstream_health(cli.config, cli.repo))
    except NatsConnectError as exc:
        return {"error": exc.message, "connect": "refused" if exc.refused else "unreachable"}
    except SemspecError as exc:
        return {"error": exc.message}
    found: dict[str, Any] = asdict(health)
    found["healthy"] = health.healthy
    found["problems"] = health.problems()
    return found


def _nats_connected(
    statuses: list[ServiceStatus], health: dict[str, Any] | None
) -> list[ServiceStatus]:
    """The nats row as ``status``'s own connection found it: ``up`` with the server's version,
    or ``refused``/``unreachable`` with the reason (a port that answers is not enough)."""
    if health is None:
        return statuses
    marked = []
    for s in statuses:
        if s.name == "nats" and "connect" in health:
            s = replace(
                s, state=health["connect"], extra={**(s.extra or {}), "reason": health["error"]}
            )
        elif s.name == "nats" and "error" not in health:
            state = "up" if s.state == "external" else s.state
            s = replace(s, state=state, version=health["server_version"] or s.version)
        marked.append(s)
    return marked


def _failures(statuses: list[ServiceStatus], health: dict[str, Any] | None) -> list[str]:
    """What makes ``status`` exit 1: services not up, JetStream not answering, streams
    without a leader."""
    found = [
        f"{' '.join(filter(None, (s.name, s.identity)))} {s.state}"
        for s in statuses
        if s.state not in ("up", "external")
    ]
    if health is not None and "error" in health and "connect" not in health:
        found.append(f"JetStream unknown ({health['error']})")
    found += [
        f"stream {s['name']} has no leader"
        for s in (health or {}).get("streams", [])
        if not s.get("leader")
    ]
    return found


def _monitor_roles(
    statuses: list[ServiceStatus], health: dict[str, Any] | None
) -> list[ServiceStatus]:
    """Each running monitor marked ``active`` (it holds the lease, ADR 0005), ``standby``, or
    ``stale``: one that uses an address its service no longer has cannot take over, so it is
    not counted as standing by."""
    if health is None or "error" in health or health.get("active_monitor") is None:
        return statuses
    active = health["active_monitor"]
    marked = []
    for s in statuses:
        if s.name == "monitor" and s.state in ("up", "stale"):
            role = "active" if s.identity == active else "standby" if s.state == "up" else "stale"
            s = replace(s, extra={**(s.extra or {}), "role": role})
        marked.append(s)
    return marked


def _monitor_consumer(ctx: typer.Context) -> dict[str, Any] | None:
    """The monitor consumer's progress (``watchdog.py``): events waiting, the oldest one's age,
    the last ack's, and whether events are not being consumed (``risk.leader.stall_s``); None
    when there is no consumer yet, ``{"error": ...}`` when JetStream does not answer."""
    import asyncio

    from nats.errors import Error as NatsError
    from nats.js.errors import NotFoundError

    from semspec.core.nats_connect import connect_nats
    from semspec.processors.risk_monitor.watchdog import ConsumerProgress, consumer_progress
    from semspec.services.connect import nats_options, nats_url_of
    from semspec.services.jetstream import HEALTH_CONNECT_S, STREAM_INFO_S

    cli = cli_context(ctx)
    config = cli.config

    async def read() -> ConsumerProgress:
        nc = await connect_nats(
            nats_url_of(config, cli.repo),
            nats_options(config, cli.repo),
            "semspec-status",
            first_connect_s=HEALTH_CONNECT_S,
            external=config.services.nats.url is not None,
        )
        try:
            return await consumer_progress(nc.jetstream(timeout=STREAM_INFO_S))
        finally:
            await nc.close()

    try:
        progress = asyncio.run(read())
    except NotFoundError:
        return None
    except (NatsError, TimeoutError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    stall_s = config.risk.leader.stall_s
    return {**asdict(progress), "stall_s": stall_s, "stalled": progress.stalled(stall_s)}


def _stall_line(health: dict[str, Any]) -> str | None:
    """The red line of ``status`` when events are not being consumed, else None."""
    consumer = health.get("monitor_consumer")
    if not consumer or not consumer.get("stalled"):
        return None
    from semspec.processors.risk_monitor.watchdog import ConsumerProgress

    progress = ConsumerProgress(consumer["waiting"], consumer["oldest_s"], consumer["last_ack_s"])
    holder = health.get("active_monitor")
    what = (
        f"a standby takes the lease from {holder}; with none standing by, restart that monitor"
        if holder
        else "no monitor holds the lease: start one (`semspec up` or `semspec monitor`)"
    )
    return (
        f"monitor: events are not being consumed: {progress.describe()}"
        f" (risk.leader.stall_s: {consumer['stall_s']:g}); {what}"
    )


def _not_consumed(ctx: typer.Context, health: dict[str, Any] | None) -> str | None:
    """Read the monitor consumer's progress into ``health`` (``monitor_consumer``) and return
    the red line when events are not being consumed; None when they are, or when JetStream did
    not answer (``health`` says so)."""
    if health is None or "error" in health:
        return None
    health["monitor_consumer"] = _monitor_consumer(ctx)
    return _stall_line(health)


def _up_not_consumed(ctx: typer.Context, statuses: list[ServiceStatus]) -> str | None:
    """``status``'s check of the monitor consumer, after ``up``: the red line, or None.

    A monitor this ``up`` has just started is given the handover bound of ADR 0005
    (``lease_ttl_s + poll_s + ack_wait_s``) to take the lease and work through events that
    waited while none ran, before their age counts against it.
    """
    import time

    if not any(s.name == "nats" and s.state in _SERVING for s in statuses):
        return None
    risk = cli_context(ctx).config.risk
    started = any(s.name == "monitor" and s.state == "started" for s in statuses)
    grace_s = risk.leader.lease_ttl_s + risk.leader.poll_s + risk.ack_wait_s if started else 0.0
    deadline = time.monotonic() + grace_s
    while True:
        stall = _not_consumed(ctx, _jetstream(ctx))
        if stall is None or time.monotonic() >= deadline:
            return stall
        time.sleep(0.5)


_SERVING = ("started", "already running", "external")
"""States of a service ``up`` leaves serving."""


def _monitors_line(statuses: list[ServiceStatus], health: dict[str, Any]) -> str:
    """Which monitor consumes the loop events and how many stand by."""
    roles = [(s.extra or {}).get("role") for s in statuses if s.name == "monitor"]
    standing = f"{roles.count('standby')} standing by"
    active = health.get("active_monitor")
    if active is None:
        return "monitor: unknown which is active (the lease bucket has no leader)"
    if not active:
        return f"monitor: none active (none holds the lease yet), {standing}"
    where = "" if "active" in roles else " (on another machine)"
    return f"monitor: {active} active{where}, {standing}"


def _show_jetstream(ctx: typer.Context, health: dict[str, Any]) -> None:
    """JetStream's replicas and health as text: one row per stream, then what is wrong."""
    console = cli_context(ctx).console
    if "connect" in health:
        return  # the nats row says why
    if "error" in health:
        console.print(f"JetStream: unknown: {health['error']}", markup=False, soft_wrap=True)
        return
    nodes = ", ".join(health["nodes"]) or "none"
    where = f"cluster {health['cluster']}" if health["cluster"] else "a single server"
    console.print(
        f"JetStream on {where} (connected to {health['connected_url']}); nodes seen: {nodes};"
        f" replicas configured: {health['replicas']}",
        markup=False,
        soft_wrap=True,
    )
    rows = []
    for stream in health["streams"]:
        followers = stream["followers"]
        current = [f["node"] for f in followers if f["current"] and not f["offline"]]
        behind = [
            f"{f['node']} (offline, last heard {f['silent_s']:.0f}s ago)"
            if f["offline"]
            else f"{f['node']} (lag {f['lag']})"
            for f in followers
            if f["offline"] or not f["current"]
        ]
        rows.append(
            (
                stream["name"],
                stream["replicas"] or "?",
                stream["leader"] or "NONE",
                ", ".join(current) or "-",
                ", ".join(behind) or "-",
                "?" if stream["messages"] is None else stream["messages"],
            )
        )
    columns = ["stream", "replicas", "leader", "current", "lagging", "messages"]
    print_table(console, None, columns, rows)
    for problem in health["problems"]:
        console.print(f"jetstream: {problem}", markup=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add ``up``, ``down`` and ``status`` to the root app."""

    @app.command("up")
    def up(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Start the embedded services (or check the external ones) and wait until healthy."""
        from semspec.services.supervisor import Supervisor

        cli = cli_context(ctx)
        progress = None if as_json else (lambda msg: cli.err.print(msg, markup=False))
        statuses = Supervisor(cli.config, cli.repo, on_progress=progress).up()
        stall = _up_not_consumed(ctx, statuses)
        _show_fenced(ctx, statuses, as_json)
        if stall is not None:
            # The same red line and exit as `status`: a running monitor process is not a
            # consuming one (issue 26: `up` said healthy while nobody consumed for minutes).
            if not as_json:
                cli.console.print(stall, style="bold red", markup=False, soft_wrap=True)
            out = cli.err if as_json else cli.console
            out.print("not healthy: loop events are not being consumed", markup=False)
            raise typer.Exit(1)

    @app.command("down")
    def down(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Stop what `semspec up` started (by recorded PID); data under .semspec/run stays.

        Works from the run folder alone: with a config that cannot be read, it stops what the
        run folder `semspec up` last used (else the default one) records.
        """
        from semspec.core.errors import ConfigError
        from semspec.core.run_folder import run_dir_of
        from semspec.services.run_location import last_run_dir
        from semspec.services.supervisor import stop_recorded

        cli = cli_context(ctx)
        try:
            run_dir = run_dir_of(cli.config, cli.repo)
        except ConfigError as exc:
            run_dir, found = last_run_dir(cli.repo)
            cli.err.print(
                f"the config cannot be read ({exc}); stopping what {run_dir} records ({found})",
                markup=False,
                soft_wrap=True,
            )
        statuses = stop_recorded(run_dir)
        if not statuses and not as_json:
            cli.console.print("nothing was running")
            return
        _show(ctx, statuses, as_json)

    @app.command("status")
    def status(
        ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Print JSON.")
    ) -> None:
        """Show each service: up/down, address, version; JetStream's streams and leaders.

        Exits 1 (saying why) if any service is not up, JetStream does not answer, a stream
        has no leader, or loop events wait unconsumed for ``risk.leader.stall_s``."""
        from semspec.services.supervisor import Supervisor

        cli = cli_context(ctx)
        statuses = Supervisor(cli.config, cli.repo).status()
        nats = next((s for s in statuses if s.name == "nats"), None)
        health = _jetstream(ctx) if nats is not None and nats.state in ("up", "external") else None
        statuses = _monitor_roles(_nats_connected(statuses, health), health)
        stall = _not_consumed(ctx, health)
        _show_fenced(ctx, statuses, as_json, health)
        if health is not None and "error" not in health and not as_json:
            cli.console.print(_monitors_line(statuses, health), markup=False, soft_wrap=True)
            if stall is not None:
                cli.console.print(stall, style="bold red", markup=False, soft_wrap=True)
        failures = _failures(statuses, health)
        if stall is not None:
            failures.append("loop events are not being consumed")
        if failures:
            # On stderr with --json, so that stdout stays one JSON document.
            out = cli.err if as_json else cli.console
            out.print(f"not healthy: {'; '.join(failures)}", markup=False, soft_wrap=True)
            if any(s.state not in ("up", "external") for s in statuses):
                out.print("hint: semspec up restarts what is down", markup=False)
            raise typer.Exit(1)
