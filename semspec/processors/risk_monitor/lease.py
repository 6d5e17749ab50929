"""The active monitor's lease: one KV key that only one monitor of a stack holds (ADR 0005).

Taking it is a create (it succeeds only while the key is absent, deleted or expired); holding
it is an update naming the last revision, every third of the bucket's age bound
(``risk.leader.lease_ttl_s``), which drops the key that long after its holder stopped renewing.
The holder trusts its lease until its last successful renewal was sent plus the TTL minus a
margin, on its own monotonic clock: the server drops the key no earlier, so no two monitors
both believe they are active unless one stalls longer than the margin between its check and
its writes (the state store's revision checks catch that case).

Every change of this monitor's view (take, renew, give up, take from a stalled holder) runs
under one lock, so each sees the result of the one before: a renewal still in flight when the
monitor steps down finishes before the key is deleted, and nothing but a take makes the lease
held again (issue 26: a late renewal answer used to revive a lease already given up, and the
monitor then renewed a key it no longer consumed for).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from nats.js import JetStreamContext
from nats.js.errors import (
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from nats.js.kv import KeyValue

from semspec.core.logging import logger_for
from semspec.vocabulary.streams import LEASE_BUCKET

LEASE_KEY = "active"
_MARGIN_SHARE = 0.25
"""Part of the TTL kept back: the time a commit may take after its lease check."""


log = logger_for("risk-monitor")


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds the lease: the process's identity (as its presence file names it), a token
    made at start (two monitors of one process differ) and when it took the lease."""

    identity: str
    token: str
    since: str = ""

    def to_json(self) -> bytes:
        """The value stored under the lease key."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> LeaseHolder:
        """Parse a stored value (written by ``to_json``)."""
        body = json.loads(raw)
        return cls(str(body["identity"]), str(body["token"]), str(body.get("since", "")))


def new_holder(identity: str) -> LeaseHolder:
    """A holder for this monitor, with a fresh token."""
    return LeaseHolder(identity, secrets.token_hex(8))


class Lease:
    """The lease as one monitor sees it: taken or not, valid until when."""

    def __init__(self, kv: KeyValue, holder: LeaseHolder, ttl_s: float) -> None:
        self._kv = kv
        self.holder = holder
        self.ttl_s = ttl_s
        self._revision = 0
        self._valid_until = 0.0
        self._value = holder.to_json()
        self._lock = asyncio.Lock()
        """Held by each transition for its whole round trip to the server (module docstring)."""
        self.given_up = False
        """Whether the last holder gave the lease up (else it ran out, or nobody held it)."""
        self.quiet_until = 0.0
        """After taking the lease from a stalled holder: the monotonic time before which that
        holder may still trust its own lease, so nothing is written before it."""

    @property
    def renew_every_s(self) -> float:
        """How often the holder renews."""
        return self.ttl_s / 3

    @property
    def validity_s(self) -> float:
        """How long after sending a renewal the holder trusts it."""
        return self.ttl_s * (1 - _MARGIN_SHARE)

    @property
    def held(self) -> bool:
        """True from taking the lease until it is lost or given up (it may have run out)."""
        return self._revision > 0

    def valid(self) -> bool:
        """True while this monitor holds the lease with the margin to commit a batch."""
        return self._revision > 0 and time.monotonic() < self._valid_until

    @property
    def since_last_pull_s(self) -> float:
        """How long before a takeover a holder that died last pulled events, at least: the
        key outlives its last renewal by the TTL, and the holder renewed every third of it."""
        return self.ttl_s - self.renew_every_s

    async def acquire(self) -> bool:
        """Take the lease if nobody holds it; true when this monitor holds it now."""
        async with self._lock:
            if self.valid():
                return True
            self._lost()  # a lease held but run out is taken afresh, with a new revision
            value = self._stamped()
            sent = time.monotonic()
            try:
                revision, given_up = await self._create(value)
            except (KeyWrongLastSequenceError, KeyNotFoundError):
                return False  # held by another (or it expired between two reads: next poll)
            except Exception as exc:
                log().warning("taking the monitor lease failed", error=str(exc))
                return False
            self._value = value
            self.given_up = given_up
            self.quiet_until = 0.0
            self._held(revision, sent)
            return True

    async def take_from_stalled(self, stalled: LeaseHolder) -> bool:
        """Take the lease from ``stalled`` if it still holds it (the watchdog found that events
        are not being consumed); true when this monitor holds it now.

        The write names the revision read, so it fails if the holder renewed meanwhile, and
        only one standby wins. The old holder trusts its lease at most until it sent that
        revision (before the answer to this read came back) plus the validity, so
        ``quiet_until`` keeps this monitor from writing before then."""
        async with self._lock:
            try:
                entry = await self._kv.get(LEASE_KEY)
                read_at = time.monotonic()
                if entry.value is None or not entry.revision:
                    return False
                if LeaseHolder.from_json(entry.value).token != stalled.token:
                    return False  # it changed hands meanwhile: the watchdog looks again
                value = self._stamped()
                sent = time.monotonic()
                revision = await self._kv.update(LEASE_KEY, value, last=entry.revision)
            except (KeyWrongLastSequenceError, KeyNotFoundError, ValueError, KeyError):
                return False
            except Exception as exc:
                log().warning("taking the monitor lease failed", error=str(exc))
                return False
            self._value = value
            self.given_up = False
            self.quiet_until = read_at + self.validity_s
            self._held(revision, sent)
            return True

    async def current(self) -> LeaseHolder | None:
        """Who holds the key now; None when nobody does (``nats.errors.Error`` when the bucket
        does not answer)."""
        try:
            entry = await self._kv.get(LEASE_KEY)
        except KeyNotFoundError:
            return None
        if entry.value is None:
            return None
        try:
            return LeaseHolder.from_json(entry.value)
        except (ValueError, KeyError, TypeError):
            return None

    def _stamped(self) -> bytes:
        since = datetime.now(UTC).isoformat(timespec="seconds")
        return LeaseHolder(self.holder.identity, self.holder.token, since).to_json()

    async def _create(self, value: bytes) -> tuple[int, bool]:
        """``kv.create``, also saying whether the key was given up (a delete marker) rather
        than absent (expired, never written, or this monitor's own value that a failed delete
        left behind)."""
        try:
            return await self._kv.update(LEASE_KEY, value, last=0), False
        except KeyWrongLastSequenceError:
            try:
                entry = await self._kv.get(LEASE_KEY)
            except KeyNotFoundError as gone:  # nats-py's get reports a delete marker so
                if gone.entry is None or not gone.entry.revision:
                    raise
                return await self._kv.update(LEASE_KEY, value, last=gone.entry.revision), True
            if entry.value is None or not entry.revision or not self._is_mine(entry.value):
                raise  # held by another monitor
            # This monitor stepped down but the delete did not reach the server: the key is
            # still its own (nobody else wrote since). Its hand-back may not have reached the
            # server either, so it is treated as a lease that ran out.
            return await self._kv.update(LEASE_KEY, value, last=entry.revision), False

    def _is_mine(self, raw: bytes) -> bool:
        try:
            return LeaseHolder.from_json(raw).token == self.holder.token
        except (ValueError, KeyError, TypeError):
            return False

    async def renew(self) -> bool:
        """Extend the lease; false once it is lost (another monitor holds it, or it ran out)."""
        async with self._lock:
            for _ in range(2):
                if self._revision == 0:
                    return False  # given up while this renewal waited for the lock
                sent = time.monotonic()
                try:
                    revision = await self._kv.update(LEASE_KEY, self._value, last=self._revision)
                except KeyWrongLastSequenceError:
                    if await self._adopt_landed():
                        continue  # an earlier renewal landed after its answer timed out
                    log().warning("monitor lease lost to another monitor")
                    self._lost()
                    return False
                except Exception as exc:
                    log().warning("renewing the monitor lease failed", error=str(exc))
                    return self.valid()
                self._held(revision, sent)
                return True
            return self.valid()

    async def release(self) -> None:
        """Give the lease up at once (when stepping down or stopping), so a standby need not
        wait for the TTL; a renewal in flight finishes first, and its revision is deleted."""
        async with self._lock:
            revision = self._revision
            self._lost()
            if revision:
                with contextlib.suppress(Exception):  # else it expires after the TTL anyway
                    await self._kv.delete(LEASE_KEY, last=revision)

    async def _adopt_landed(self) -> bool:
        """Whether the key still holds this monitor's exact value (then its revision is
        adopted; validity stays that of the last renewal known to have landed)."""
        try:
            entry = await self._kv.get(LEASE_KEY)
        except Exception:
            return False
        if entry.value != self._value or not entry.revision:
            return False
        self._revision = entry.revision
        return True

    def _held(self, revision: int, sent: float) -> None:
        self._revision = revision
        self._valid_until = sent + self.validity_s

    def _lost(self) -> None:
        self._revision = 0
        self._valid_until = 0.0


async def active_holder(js: JetStreamContext) -> LeaseHolder | None:
    """The monitor holding the lease now, or None (no monitor is active, or none ever ran)."""
    try:
        kv = await js.key_value(LEASE_BUCKET)
        entry = await kv.get(LEASE_KEY)
    except (BucketNotFoundError, KeyNotFoundError):
        return None
    if entry.value is None:
        return None
    try:
        return LeaseHolder.from_json(entry.value)
    except (ValueError, KeyError, TypeError):
        return None
