"""The Temporal client of the monitor's adapters (the signal bridge, workflow liveness): made on
first use, dropped after a failure that was not Temporal's answer so the next call connects
again, and never raising: the monitor keeps running whatever Temporal does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")


@dataclass(frozen=True)
class NoAnswer:
    """Why a call gave no result: Temporal's refusal (``not_found`` when the workflow does not
    exist or has closed) or the failure to reach it."""

    error: str
    not_found: bool = False


class LazyTemporal:
    """Calls Temporal through a client it connects on first use."""

    def __init__(self, connect: Callable[[], Awaitable[Client]]) -> None:
        self._connect = connect
        self._client: Client | None = None

    async def call(self, use: Callable[[Client], Awaitable[T]]) -> T | NoAnswer:
        """What ``use`` returns with the client, or why there is nothing."""
        try:
            if self._client is None:
                self._client = await self._connect()
            return await use(self._client)
        except RPCError as exc:
            return NoAnswer(exc.message, not_found=exc.status == RPCStatusCode.NOT_FOUND)
        except Exception as exc:  # the monitor keeps running whatever Temporal does
            self._client = None
            return NoAnswer(str(exc))
