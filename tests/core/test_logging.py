"""Logging: JSON or console lines on the stream given, with secrets masked in every field."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from semspec.core.logging import configure_logging, get_logger
from semspec.core.masking import MASK, mask_text


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Put back the structlog setup found before the test (other tests log too)."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def json_lines(fmt_level: str, emit: Any) -> list[dict[str, Any]]:
    stream = io.StringIO()
    configure_logging("json", fmt_level, stream=stream)
    emit(get_logger("test"))
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_format_writes_one_object_per_line_with_level_component_and_fields() -> None:
    lines = json_lines("INFO", lambda log: log.info("started", service="nats", pid=42))
    assert len(lines) == 1
    line = lines[0]
    assert {k: line[k] for k in ("event", "level", "component", "service", "pid")} == {
        "event": "started",
        "level": "info",
        "component": "test",
        "service": "nats",
        "pid": 42,
    }
    assert line["timestamp"].endswith("Z")


def test_the_level_filters_lower_messages() -> None:
    def emit(log: Any) -> None:
        log.debug("hidden")
        log.info("hidden too")
        log.warning("shown")

    assert [line["event"] for line in json_lines("warning", emit)] == ["shown"]


@pytest.mark.parametrize(
    "key", ["api_key", "token", "password", "client_secret", "Authorization", "private_key"]
)
def test_values_under_secret_looking_keys_are_masked(key: str) -> None:
    lines = json_lines("INFO", lambda log: log.info("call", **{key: "plain-value-123"}))
    assert lines[0][key] == MASK
    assert "plain-value-123" not in json.dumps(lines)


@pytest.mark.parametrize(
    "secret",
    [
        "sk-abcdefghijklmnop1234",
        "sk-ant-api03-abcdefghijkl",
        "ghp_abcdefghijklmnopqrstuv",
        "xoxb-1234567890-abcdef",
        "AKIAABCDEFGHIJKLMNOP",
    ],
)
def test_credential_shaped_values_are_masked_under_any_key(secret: str) -> None:
    lines = json_lines("INFO", lambda log: log.info(f"sent {secret}", detail=f"with {secret} in"))
    assert secret not in json.dumps(lines)
    assert lines[0]["event"] == f"sent {MASK}"
    assert lines[0]["detail"] == f"with {MASK} in"


def test_secrets_nested_in_dicts_and_lists_are_masked() -> None:
    payload = {"headers": {"Authorization": "Bearer abcdefghijkl"}, "items": ["sk-zzzzzzzzzzzz"]}
    lines = json_lines("INFO", lambda log: log.info("request", payload=payload))
    assert lines[0]["payload"] == {"headers": {"Authorization": MASK}, "items": [MASK]}


def test_an_empty_or_unset_secret_field_is_shown_as_it_is() -> None:
    lines = json_lines("INFO", lambda log: log.info("config", token=None, password=""))
    assert (lines[0]["token"], lines[0]["password"]) == (None, "")


def test_a_secret_inside_an_exception_message_is_masked_in_the_traceback() -> None:
    def emit(log: Any) -> None:
        try:
            raise RuntimeError("upstream refused key sk-live-abcdefghijklmnop")
        except RuntimeError:
            log.exception("call failed")

    lines = json_lines("INFO", emit)
    assert "RuntimeError: upstream refused key ***" in lines[0]["exception"]
    assert "sk-live" not in json.dumps(lines)


def test_console_format_is_plain_text_and_masks_secrets_and_tracebacks() -> None:
    stream = io.StringIO()
    configure_logging("console", "INFO", stream=stream)
    log = get_logger("test")
    log.info("connected", token="t0ps3cret", url="nats://127.0.0.1:4222")
    try:
        raise ValueError("bad header Bearer abcdefghijklmn")
    except ValueError:
        log.exception("failed")
    text = stream.getvalue()
    assert "connected" in text and "url=nats://127.0.0.1:4222" in text
    assert "token=***" in text
    assert "ValueError: bad header ***" in text
    assert "t0ps3cret" not in text and "abcdefghijklmn" not in text
    assert not text.lstrip().startswith("{")


def test_auto_format_picks_json_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    configure_logging("auto", "INFO", stream=stream)
    get_logger("test").info("hello")
    assert json.loads(stream.getvalue())["event"] == "hello"


def test_mask_text_leaves_ordinary_text_alone() -> None:
    text = "retry 3 of task t-1 on branch semspec/task/t-1 (skip-list, tokens=1200)"
    assert mask_text(text) == text
