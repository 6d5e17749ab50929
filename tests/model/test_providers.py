"""OpenAI-compatible and Anthropic providers over real HTTP against the fake LLM server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from semspec.core.errors import ConfigError, ProviderError
from semspec.core.reasons import FallbackReason
from semspec.model.providers.anthropic_chat import AnthropicChatProvider
from semspec.model.providers.credentials import api_key_from_env
from semspec.model.providers.openai_chat import OpenAIChatProvider
from semspec.model.providers.types import ChatMessage, ToolCall, ToolSpec, Usage
from tests.fakes.llm_server import (
    FakeLLMServer,
    FakeReply,
    cached,
    call,
    http_error,
    malformed_body,
    slow,
    text,
)

READ = ToolSpec(
    "read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
)
CONVERSATION = [
    ChatMessage("system", "be brief"),
    ChatMessage("user", "read a.py"),
    ChatMessage("assistant", "", (ToolCall("c1", "read", {"path": "a.py"}),)),
    ChatMessage("tool", "print(1)", tool_call_id="c1", name="read"),
]


def openai_provider(server: FakeLLMServer, **kwargs: object) -> OpenAIChatProvider:
    return OpenAIChatProvider(model="fake-model", base_url=server.base_url, timeout_s=5, **kwargs)  # type: ignore[arg-type]


async def openai_error(reply: object, timeout_s: float = 5) -> ProviderError:
    with FakeLLMServer([reply]) as server:  # type: ignore[list-item]
        provider = OpenAIChatProvider(model="m", base_url=server.base_url, timeout_s=timeout_s)
        with pytest.raises(ProviderError) as caught:
            await provider.complete([ChatMessage("user", "hi")])
    return caught.value


async def test_openai_provider_returns_text_and_usage() -> None:
    with FakeLLMServer([text("hello", usage=(12, 3))]) as server:
        reply = await openai_provider(server).complete([ChatMessage("user", "hi")])

    assert reply.text == "hello"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    assert reply.tool_calls == ()


async def test_openai_provider_sends_tools_and_tool_results_in_wire_format() -> None:
    with FakeLLMServer([call("read", {"path": "b.py"})]) as server:
        reply = await openai_provider(server).complete(CONVERSATION, [READ])
        body = server.requests[0].body

    assert reply.tool_calls[0].name == "read"
    assert reply.tool_calls[0].arguments == {"path": "b.py"}
    assert body["tools"][0]["function"]["name"] == "read"
    assert body["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"path": "a.py"}'
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "print(1)"}


async def test_openai_tool_call_with_malformed_arguments_is_kept_as_an_error() -> None:
    with FakeLLMServer([call("read", '{"path": ')]) as server:
        reply = await openai_provider(server).complete([ChatMessage("user", "hi")], [READ])

    assert reply.tool_calls[0].arguments == {}
    assert reply.tool_calls[0].arguments_error is not None


async def test_http_429_maps_to_rate_limited_with_retry_after() -> None:
    error = await openai_error(http_error(429, "too many requests", retry_after=12))

    assert error.reason is FallbackReason.RATE_LIMITED
    assert error.retryable
    assert error.retry_after == 12
    assert error.status == 429


async def test_http_500_maps_to_a_retryable_transport_error() -> None:
    error = await openai_error(http_error(500, "boom"))

    assert error.reason is FallbackReason.TRANSPORT_ERROR
    assert error.retryable


async def test_bad_credentials_fail_fast_with_a_hint() -> None:
    error = await openai_error(http_error(401, "invalid api key"))

    assert not error.retryable
    assert error.hint is not None and "api_key_env" in error.hint


async def test_unknown_model_fails_fast() -> None:
    error = await openai_error(http_error(404, "model 'nope' not found"))

    assert not error.retryable
    assert "model 'nope' not found" in error.message


async def test_malformed_reply_body_is_a_retryable_transport_error() -> None:
    error = await openai_error(malformed_body())

    assert error.reason is FallbackReason.TRANSPORT_ERROR
    assert error.retryable


async def test_slow_reply_maps_to_timeout() -> None:
    error = await openai_error(slow(text("late"), 1.5), timeout_s=0.3)

    assert error.reason is FallbackReason.TIMEOUT
    assert error.retryable


async def test_unreachable_server_is_a_transport_error() -> None:
    provider = OpenAIChatProvider(model="m", base_url="http://127.0.0.1:9/v1", timeout_s=2)

    with pytest.raises(ProviderError) as caught:
        await provider.complete([ChatMessage("user", "hi")])

    assert caught.value.reason is FallbackReason.TRANSPORT_ERROR


async def test_api_key_goes_in_the_header_and_never_in_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-test-0123456789abcdef")
    key = api_key_from_env("FAKE_LLM_KEY", field="models.developer.api_key_env", required=True)
    with FakeLLMServer([http_error(401, "invalid api key")]) as server:
        provider = OpenAIChatProvider(model="m", base_url=server.base_url, api_key=key)
        with pytest.raises(ProviderError) as caught:
            await provider.complete([ChatMessage("user", "hi")])
        headers = {k.lower(): v for k, v in server.requests[0].headers.items()}

    assert headers["authorization"] == "Bearer sk-test-0123456789abcdef"
    assert "sk-test" not in str(caught.value)
    assert "sk-test" not in (caught.value.hint or "")


async def test_a_key_quoted_back_by_the_server_is_masked_in_the_error() -> None:
    error = await openai_error(
        http_error(401, "Incorrect API key provided: sk-live-abcdef0123456789")
    )

    assert "sk-live" not in error.message
    assert "Incorrect API key provided" in error.message


def test_missing_api_key_variable_is_a_config_error_naming_the_field() -> None:
    with pytest.raises(ConfigError) as caught:
        api_key_from_env(
            "SEMSPEC_TEST_SURELY_UNSET", field="models.reviewer.api_key_env", required=True
        )

    assert "models.reviewer.api_key_env" in caught.value.message
    assert "SEMSPEC_TEST_SURELY_UNSET" in caught.value.message


async def test_anthropic_provider_folds_tool_results_into_user_turns() -> None:
    with FakeLLMServer([call("read", {"path": "c.py"})]) as server:
        provider = AnthropicChatProvider(
            model="claude-test", api_key="sk-ant-test-key", base_url=server.root_url
        )
        reply = await provider.complete(CONVERSATION, [READ])
        request = server.requests[0]

    assert request.path == "/v1/messages"
    assert request.body["system"] == "be brief"
    assert request.body["tools"][0]["input_schema"] == READ.parameters
    assert request.body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "print(1)"}
    ]
    assert reply.tool_calls[0].arguments == {"path": "c.py"}


async def test_anthropic_rate_limit_maps_to_rate_limited() -> None:
    with FakeLLMServer([http_error(429, "slow down", retry_after=3)]) as server:
        provider = AnthropicChatProvider(model="m", api_key="k", base_url=server.root_url)
        with pytest.raises(ProviderError) as caught:
            await provider.complete([ChatMessage("user", "hi")])

    assert caught.value.reason is FallbackReason.RATE_LIMITED
    assert caught.value.retry_after == 3


async def test_fake_server_lists_its_models() -> None:
    with FakeLLMServer(models=["a", "b"]) as server:
        provider = openai_provider(server)
        models = await provider._client.models.list()

    assert [m.id for m in models.data] == ["a", "b"]


async def test_closing_a_provider_closes_its_connections() -> None:
    # Each developer and reviewer step closes its provider (the worker's activities): a client
    # left to the garbage collector closes at a moment of its own, warning on another loop.
    with FakeLLMServer([text("one"), text("two"), text("three"), text("four")]) as server:
        providers = [
            openai_provider(server),
            AnthropicChatProvider(
                model="claude-test", api_key="sk-ant-test-key", base_url=server.root_url
            ),
        ]
        for provider in providers:
            await provider.complete([ChatMessage("user", "hi")])
            await provider.aclose()
            with pytest.raises((RuntimeError, ProviderError)):
                await provider.complete([ChatMessage("user", "again")])
        sent = len(server.requests)

    assert sent == 2


def anthropic_provider(server: FakeLLMServer) -> AnthropicChatProvider:
    return AnthropicChatProvider(
        model="claude-test", api_key="sk-ant-test-key", base_url=server.root_url, timeout_s=5
    )


def openai_body_with_usage(usage: Any) -> FakeReply:
    """A well-formed chat completion whose usage object is exactly ``usage``."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }
    return FakeReply(raw_body=json.dumps(body))


def anthropic_body_with_usage(usage: Any) -> FakeReply:
    """A well-formed Anthropic message whose usage object is exactly ``usage``."""
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    return FakeReply(raw_body=json.dumps(body))


async def test_openai_provider_reads_cached_tokens_as_part_of_the_prompt() -> None:
    with FakeLLMServer([cached(text("hi", usage=(1_000, 20)), read=800)]) as server:
        reply = await openai_provider(server).complete([ChatMessage("user", "hi")])

    assert reply.usage == Usage(prompt_tokens=1_000, completion_tokens=20, cached_tokens=800)


async def test_anthropic_provider_counts_cache_reads_and_writes_once_inside_the_prompt() -> None:
    # On the wire: input_tokens 100 (uncached), cache_read 600, cache_creation 300.
    with FakeLLMServer([cached(text("hi", usage=(1_000, 20)), read=600, written=300)]) as server:
        reply = await anthropic_provider(server).complete([ChatMessage("user", "hi")])
        wire = server.requests[0]

    assert wire.path == "/v1/messages"
    assert reply.usage == Usage(
        prompt_tokens=1_000, completion_tokens=20, cached_tokens=600, cache_write_tokens=300
    )


async def test_openai_missing_or_hostile_usage_values_read_as_zero() -> None:
    # Ollama and older vLLM send no details, some servers null; a broken one sends junk.
    replies = [
        openai_body_with_usage({"prompt_tokens": 7, "completion_tokens": 2}),
        openai_body_with_usage(
            {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": None}
        ),
        openai_body_with_usage(
            {
                "prompt_tokens": 7,
                "completion_tokens": "many",
                "prompt_tokens_details": {"cached_tokens": "all of them"},
            }
        ),
        openai_body_with_usage({"prompt_tokens": -5, "completion_tokens": 2}),
    ]
    with FakeLLMServer(replies) as server:
        provider = openai_provider(server)
        usages = [(await provider.complete([ChatMessage("user", "hi")])).usage for _ in replies]

    assert usages == [
        Usage(prompt_tokens=7, completion_tokens=2),
        Usage(prompt_tokens=7, completion_tokens=2),
        Usage(prompt_tokens=7),
        Usage(completion_tokens=2),
    ]


async def test_openai_cached_tokens_above_the_prompt_are_cut_to_the_prompt() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 99},
    }
    with FakeLLMServer([openai_body_with_usage(usage)]) as server:
        reply = await openai_provider(server).complete([ChatMessage("user", "hi")])

    assert reply.usage == Usage(prompt_tokens=10, completion_tokens=1, cached_tokens=10)


async def test_anthropic_missing_or_hostile_cache_fields_read_as_zero() -> None:
    replies = [
        anthropic_body_with_usage({"input_tokens": 40, "output_tokens": 3}),
        anthropic_body_with_usage(
            {
                "input_tokens": 40,
                "output_tokens": 3,
                "cache_read_input_tokens": 5,
                "cache_creation_input_tokens": -8,
            }
        ),
        anthropic_body_with_usage(
            {
                "input_tokens": 40,
                "output_tokens": 3,
                "cache_read_input_tokens": "x",
                "cache_creation_input_tokens": None,
            }
        ),
    ]
    with FakeLLMServer(replies) as server:
        provider = anthropic_provider(server)
        usages = [(await provider.complete([ChatMessage("user", "hi")])).usage for _ in replies]

    assert usages == [
        Usage(prompt_tokens=40, completion_tokens=3),
        Usage(prompt_tokens=45, completion_tokens=3, cached_tokens=5),
        Usage(prompt_tokens=40, completion_tokens=3),
    ]
