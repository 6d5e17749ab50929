"""Bad input: parse events strictly, and move what cannot be used to the dead-letter stream."""

from __future__ import annotations

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from pydantic import ValidationError

from semspec.vocabulary.events import MonitorEvent, event_from_json, validation_summary
from semspec.vocabulary.subjects import DEAD_LETTER_SUBJECT, MONITOR_STREAM

ORIGINAL_SUBJECT_HEADER = "Semspec-Original-Subject"
ERROR_HEADER = "Semspec-Error"
ORIGINAL_SIZE_HEADER = "Semspec-Original-Size"
_HEADER_ROOM = 4_096


def parse_event(subject: str, raw: bytes) -> MonitorEvent:
    """The validated event in ``raw``; raises ``ValueError`` naming each bad field.

    Unknown kinds, missing or extra fields and wrong types all fail here, so the rules only
    ever see an event that matches its kind's payload model.
    """
    try:
        event = event_from_json(raw)
    except ValidationError as exc:
        # The summary names fields, never values: a hostile event's text stays out of the logs.
        raise ValueError(validation_summary(exc)) from None
    subject_kind = subject.rsplit(".", 1)[-1]
    if subject_kind != event.kind:
        raise ValueError(f"event kind {event.kind!r} does not match subject {subject!r}")
    return event


async def dead_letter(
    js: JetStreamContext, msg: Msg, error: str, max_bytes: int = 1024 * 1024
) -> None:
    """Republish ``msg`` to the dead-letter subject with its subject and the error as headers.

    The message id comes from the stream sequence, so a redelivered bad event lands once. A
    body too large for the dead-letter stream is cut to fit; its original size is a header.
    """
    try:
        sequence = str(msg.metadata.sequence.stream)
    except Exception:  # a message without JetStream metadata: fall back to no dedupe id
        sequence = ""
    headers = {
        ORIGINAL_SUBJECT_HEADER: msg.subject,
        # Header values end at a line break; keep the error on one bounded line.
        ERROR_HEADER: " ".join(error.split())[:500],
    }
    if sequence:
        headers["Nats-Msg-Id"] = f"dl-{MONITOR_STREAM}-{sequence}"
    body = msg.data
    room = max(0, max_bytes - _HEADER_ROOM)
    if len(body) > room:
        headers[ORIGINAL_SIZE_HEADER] = str(len(body))
        body = body[:room]
    await js.publish(DEAD_LETTER_SUBJECT, body, headers=headers)
