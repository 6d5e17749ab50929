"""Run async command bodies against the configured Temporal and NATS endpoints."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.client import Client

from semspec.cli.context import CliContext
from semspec.core.errors import ServiceError
from semspec.services.connect import Endpoints, resolve_endpoints, temporal_client

T = TypeVar("T")


async def connect(cli: CliContext) -> tuple[Client, Endpoints]:
    """A Temporal client plus the endpoints, with a clear error when nothing answers."""
    endpoints = resolve_endpoints(cli.config, cli.repo)
    try:
        client = await asyncio.wait_for(
            temporal_client(cli.config, endpoints.temporal_address), timeout=10
        )
    except Exception as exc:
        raise ServiceError(
            f"cannot connect ({type(exc).__name__})",
            service="temporal",
            address=endpoints.temporal_address,
            hint="start the services with `semspec up`, then check `semspec status`",
        ) from None
    return client, endpoints


def run_with_client(cli: CliContext, body: Callable[[Client, Endpoints], Awaitable[T]]) -> T:
    """Connect, run ``body``, and return its value."""

    async def main() -> T:
        client, endpoints = await connect(cli)
        return await body(client, endpoints)

    return asyncio.run(main())


def jsonable(value: Any) -> Any:
    """Dataclasses (nested) as plain JSON-ready values."""
    from dataclasses import asdict, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
