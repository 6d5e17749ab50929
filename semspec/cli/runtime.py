"""Run async command bodies against the configured Temporal and NATS endpoints."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from temporalio.client import Client

    from semspec.cli.context import CliContext
    from semspec.services.connect import Endpoints

T = TypeVar("T")


async def connect(cli: CliContext) -> tuple[Client, Endpoints]:
    """A Temporal client plus the endpoints, with a clear error when nothing answers."""
    from semspec.services.connect import resolve_endpoints, temporal_client

    endpoints = resolve_endpoints(cli.config, cli.repo)
    return await temporal_client(cli.config, endpoints.temporal_address), endpoints


def run_with_client(cli: CliContext, body: Callable[[Client, Endpoints], Awaitable[T]]) -> T:
    """Connect, run ``body``, and return its value.

    The config is loaded before Temporal's client is imported, so a command that imports the
    task client inside ``body`` builds the config's pydantic models first: pydantic reads each
    model's source for its field docstrings and looks through every loaded module once to find
    it (``inspect.getmodule``), and Temporal loads some 350 of them (~15 ms more).
    """
    import asyncio

    async def main() -> T:
        client, endpoints = await connect(cli)
        return await body(client, endpoints)

    return asyncio.run(main())


def jsonable(value: Any) -> Any:
    """Dataclasses and pydantic models (nested), and lists of them, as plain JSON-ready values."""
    from pydantic import BaseModel  # here, not at the top: `--help` does not import pydantic

    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value
