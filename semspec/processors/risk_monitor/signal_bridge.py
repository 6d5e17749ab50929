"""The signal bridge: pause, halt and flag from the risk monitor become Temporal signals.

Delivery is idempotent on the workflow's side (it drops a repeated ``signal_id``), so the monitor
may deliver again after a crash. A workflow that does not exist or has already closed is logged
and skipped: the user signal on NATS is still there for humans.

The workflow acts only on signals the stack's owner signed for that task (ADR 0004): the bridge
signs each with the ``Signer`` it is given (the owner key's ``sign``, loaded by the monitor).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from temporalio.client import Client

from semspec.core.logging import logger_for
from semspec.processors.risk_monitor.temporal_client import LazyTemporal, NoAnswer
from semspec.vocabulary.events import RISK_SIGNAL, RiskSignalInput, UserSignal
from semspec.vocabulary.workflow_names import TASK_SIGNALS, task_workflow_id

log = logger_for("signal-bridge")


Signer = Callable[[str, Mapping[str, Any]], str]
"""Signs ``fields`` for a purpose (``OwnerKey.sign``)."""


def signal_input(signal: UserSignal, action: str, task_id: str, sign: Signer) -> RiskSignalInput:
    """The one argument of the workflow's ``pause``/``halt``/``flag`` signals, signed for
    ``action`` on ``task_id``."""
    unsigned = RiskSignalInput(
        reason=signal.reason,
        level=signal.level,
        signal_id=signal.signal_id,
        message=signal.message,
        evidence=signal.evidence.model_dump(mode="json"),
    )
    return replace(unsigned, signature=sign(RISK_SIGNAL, unsigned.signed_fields(action, task_id)))


class TemporalSignalBridge:
    """Sends risk actions to task workflows; connects on first use and never raises."""

    def __init__(self, connect: Callable[[], Awaitable[Client]], sign: Signer) -> None:
        self._temporal = LazyTemporal(connect)
        self._sign = sign

    @classmethod
    def for_client(cls, client: Client, sign: Signer) -> TemporalSignalBridge:
        """A bridge over an already connected client."""

        async def connected() -> Client:
            return client

        return cls(connected, sign)

    async def deliver(self, task_id: str, action: str, signal: UserSignal) -> bool:
        """Signal ``action`` to ``task-<task_id>``; false (and logged) if it did not arrive."""
        if action not in TASK_SIGNALS:
            return False
        where = {"task_id": task_id, "action": action, "signal_id": signal.signal_id}

        async def send(client: Client) -> None:
            # Signed in here: a key that cannot sign is a failed delivery, not a crash.
            argument = signal_input(signal, action, task_id, self._sign)
            await client.get_workflow_handle(task_workflow_id(task_id)).signal(action, argument)

        sent = await self._temporal.call(send)
        if isinstance(sent, NoAnswer):
            if sent.not_found:
                log().info("workflow not found or closed; signal skipped", **where)
            else:
                log().warning("workflow signal failed", error=sent.error, **where)
            return False
        log().info("workflow signalled", **where)
        return True
