"""Connect to NATS and Temporal, embedded (addresses from ``.semspec/run/``) or external."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.run_folder import load_records, run_dir_of


@dataclass(frozen=True)
class Endpoints:
    """Where the services are, whichever way they run."""

    nats_url: str
    temporal_address: str
    namespace: str
    task_queue: str
    ui_url: str | None = None


def resolve_endpoints(config: SemspecConfig, repo: Path) -> Endpoints:
    """External endpoints from the config, else the ones recorded by ``semspec up``."""
    records = load_records(run_dir_of(config, repo))
    nats_url = config.services.nats.url
    if nats_url is None:
        rec = records.get("nats")
        if rec is None:
            raise ServiceError(
                "not running", service="nats", hint="start the services with `semspec up`"
            )
        nats_url = rec.address
    temporal = config.services.temporal.address
    ui_url = None
    if temporal is None:
        rec = records.get("temporal")
        if rec is None:
            raise ServiceError(
                "not running", service="temporal", hint="start the services with `semspec up`"
            )
        temporal = rec.address
        ui_url = rec.extra.get("ui_url")
    return Endpoints(
        nats_url=nats_url,
        temporal_address=temporal,
        namespace=config.services.temporal.namespace,
        task_queue=config.services.temporal.task_queue,
        ui_url=ui_url,
    )


def nats_options(config: SemspecConfig) -> dict[str, Any]:
    """Keyword arguments for ``nats.connect`` carrying the configured credentials."""
    cfg = config.services.nats
    opts: dict[str, Any] = {}
    if cfg.token is not None:
        opts["token"] = cfg.token.get_secret_value()
    if cfg.user is not None:
        opts["user"] = cfg.user
        if cfg.password is not None:
            opts["password"] = cfg.password.get_secret_value()
    if cfg.creds_file is not None:
        opts["user_credentials"] = cfg.creds_file
    return opts


async def temporal_client(config: SemspecConfig, address: str | None = None) -> Any:
    """A Temporal client for the configured (or given) address, with TLS or API key if set."""
    from temporalio.client import Client
    from temporalio.service import TLSConfig

    cfg = config.services.temporal
    target = address or cfg.address
    if target is None:
        raise ServiceError("no address", service="temporal", hint="run `semspec up`")
    tls: TLSConfig | bool = False
    if cfg.tls_cert and cfg.tls_key:
        tls = TLSConfig(
            client_cert=Path(cfg.tls_cert).read_bytes(),
            client_private_key=Path(cfg.tls_key).read_bytes(),
        )
    api_key = cfg.api_key.get_secret_value() if cfg.api_key else None
    if api_key and tls is False:
        tls = True
    return await Client.connect(target, namespace=cfg.namespace, tls=tls, api_key=api_key)
