"""Connect to NATS and Temporal, embedded (addresses and NATS credentials from ``.semspec/run/``)
or external (addresses and credentials from the config)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ConfigError, ServiceError
from semspec.core.run_folder import ServiceRecord, load_records, run_dir_of
from semspec.services.nats_auth import AUTH_FILE, read_auth

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from temporalio.client import Client
    from temporalio.service import TLSConfig

CONNECT_TIMEOUT_S = 10.0
"""How long a client waits for Temporal to answer before saying it is not there."""


@dataclass(frozen=True)
class Endpoints:
    """Where the services are, whichever way they run."""

    nats_url: str
    """The NATS server URL, or the nodes of a cluster separated by commas (``connect_nats``
    takes either)."""
    temporal_address: str
    namespace: str
    task_queue: str
    ui_url: str | None = None
    # The embedded NATS's credentials file, for a repository that joins this stack.
    nats_auth_file: str | None = None
    nats_external: bool = False
    """Whether NATS is the configured ``services.nats.url`` (else ``semspec up``'s server)."""

    def addresses(self) -> dict[str, str]:
        """Service name -> address, as a worker or monitor announces what it uses."""
        return {"nats": self.nats_url, "temporal": self.temporal_address}


def resolve_endpoints(config: SemspecConfig, repo: Path) -> Endpoints:
    """External endpoints from the config, else the ones recorded by ``semspec up``."""
    run_dir = run_dir_of(config, repo)
    records = load_records(run_dir)

    def recorded(service: str) -> ServiceRecord:
        found = records.get(service)
        if found is None:
            raise ServiceError(
                "not running", service=service, hint="start the services with `semspec up`"
            )
        return found

    nats_url = nats_url_of(config, repo)
    temporal = config.services.temporal.address
    ui_url = None
    if temporal is None:
        record = recorded("temporal")
        temporal, ui_url = record.address, record.extra.get("ui_url")
    return Endpoints(
        nats_url=nats_url,
        temporal_address=temporal,
        namespace=config.services.temporal.namespace,
        task_queue=config.services.temporal.task_queue,
        ui_url=ui_url,
        nats_auth_file=None if config.services.nats.url else str(run_dir / AUTH_FILE),
        nats_external=config.services.nats.url is not None,
    )


def nats_url_of(config: SemspecConfig, repo: Path) -> str:
    """The configured NATS servers (comma-separated), else the one ``semspec up`` started."""
    servers = config.services.nats.servers
    if servers:
        return ",".join(servers)
    found = load_records(run_dir_of(config, repo)).get("nats")
    if found is None:
        raise ServiceError(
            "not running", service="nats", hint="start the services with `semspec up`"
        )
    return found.address


def nats_options(config: SemspecConfig, repo: Path) -> dict[str, Any]:
    """Keyword arguments for ``nats.connect`` carrying the credentials: the stack's own (from its
    run folder) for the embedded server, the configured ones for an external server."""
    cfg = config.services.nats
    if cfg.url is None:
        return _auth_options(run_dir_of(config, repo) / AUTH_FILE, None)
    opts: dict[str, Any] = {}
    if cfg.token is not None:
        opts["token"] = cfg.token.get_secret_value()
    if cfg.user is not None:
        opts["user"] = cfg.user
        if cfg.password is not None:
            opts["password"] = cfg.password.get_secret_value()
    if cfg.creds_file is not None:
        opts["user_credentials"] = cfg.creds_file
    if cfg.auth_file is not None:
        path = Path(cfg.auth_file)
        opts |= _auth_options(path if path.is_absolute() else repo / path, "auth_file")
    return opts


def _auth_options(path: Path, key: str | None) -> dict[str, Any]:
    """``user`` and ``password`` from a ``nats.auth.json``. A stack started before NATS had
    credentials has no such file and needs none; a configured file must be there."""
    auth = read_auth(path)
    if auth is not None:
        return auth.options()
    if key is None:
        return {}
    raise ConfigError(
        f"cannot read {path}",
        field=f"services.nats.{key}",
        hint="point it at the nats.auth.json of the stack's run folder (readable by you)",
    )


async def stack_nats(config: SemspecConfig, repo: Path, name: str = "semspec-cli") -> NatsClient:
    """A NATS connection to the stack of ``repo`` with its credentials, for a command: one
    bounded connect, then one clear error (``semspec.core.nats_connect``)."""
    from semspec.core.nats_connect import connect_nats

    endpoints = resolve_endpoints(config, repo)
    return await connect_nats(
        endpoints.nats_url, nats_options(config, repo), name, external=endpoints.nats_external
    )


async def connect_temporal(
    address: str,
    namespace: str = "default",
    *,
    tls: TLSConfig | bool = False,
    api_key: str | None = None,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> Client:
    """A Temporal client for ``address``, or a ``ServiceError`` naming it when nothing answers
    within ``timeout_s``. The one place semspec connects to Temporal."""
    import asyncio

    from temporalio.client import Client

    connecting = Client.connect(address, namespace=namespace, tls=tls, api_key=api_key)
    try:
        return await asyncio.wait_for(connecting, timeout_s)
    except Exception as exc:
        raise ServiceError(
            f"cannot connect ({type(exc).__name__})",
            service="temporal",
            address=address,
            hint="start the services with `semspec up`, then check `semspec status`",
        ) from None


async def temporal_client(
    config: SemspecConfig, address: str | None = None, *, timeout_s: float = CONNECT_TIMEOUT_S
) -> Client:
    """A Temporal client for the configured (or given) address, with TLS or API key if set."""
    from temporalio.service import TLSConfig

    cfg = config.services.temporal
    target = address or cfg.address
    if target is None:
        raise ServiceError("no address", service="temporal", hint="run `semspec up`")
    tls: TLSConfig | bool = False
    if cfg.tls_cert and cfg.tls_key:
        tls = TLSConfig(
            client_cert=_read_tls(cfg.tls_cert, "tls_cert"),
            client_private_key=_read_tls(cfg.tls_key, "tls_key"),
        )
    api_key = cfg.api_key.get_secret_value() if cfg.api_key else None
    if api_key and tls is False:
        tls = True
    return await connect_temporal(
        target, cfg.namespace, tls=tls, api_key=api_key, timeout_s=timeout_s
    )


def _read_tls(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"cannot read {path}: {exc.strerror}",
            field=f"services.temporal.{key}",
            hint="point it at a readable PEM file",
        ) from None
