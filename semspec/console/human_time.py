"""Times as people read them: ``5 min ago``, with the exact UTC time on hover.

Pages show an instant as ``<time datetime="ISO" title="exact">5 min ago</time>``; the
console's script (``static/console.js``, ``agoText``) rewrites the text every 30 seconds with
the same wording, so a page left open stays right. Issue 30 item 6: raw ISO strings with
microseconds were hard to read and said nothing about age.
"""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup

MINUTE = 60
HOUR = 60 * MINUTE
DAY = 24 * HOUR


def parse_instant(text: str) -> datetime | None:
    """An ISO 8601 instant (``Z`` or an offset; none means UTC), or None when it is not one."""
    try:
        at = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def ago(at: datetime, now: datetime) -> str:
    """How long before ``now`` ``at`` was, in the largest whole unit (``3 h ago``)."""
    seconds = int((now - at).total_seconds())
    if seconds < 10:
        return "just now"
    if seconds < MINUTE:
        return f"{seconds} s ago"
    if seconds < HOUR:
        return f"{seconds // MINUTE} min ago"
    if seconds < DAY:
        return f"{seconds // HOUR} h ago"
    return f"{seconds // DAY} d ago"


def exact(at: datetime) -> str:
    """The instant to the second in UTC (``2026-11-27 11:36:08 UTC``)."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_tag(text: str, now: datetime | None = None) -> Markup:
    """``text`` (an ISO instant) as a ``<time>`` element; text that is not an instant is shown
    as it is, escaped."""
    at = parse_instant(text) if text else None
    if at is None:
        return Markup("{}").format(text)
    return Markup('<time datetime="{}" title="{}" data-ago>{}</time>').format(
        at.isoformat(timespec="seconds"), exact(at), ago(at, now or datetime.now(UTC))
    )
