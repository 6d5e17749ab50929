"""Dollars of a model call: each token priced once, at its own price."""

from __future__ import annotations

import pytest

from semspec.model.pricing import Price, cost_usd, price_of
from semspec.model.profiles import ContextProfile, Cost, ModelSpec
from semspec.model.providers.types import Usage
from semspec.model.registry import load_registry


def spec(cost: Cost | None) -> ModelSpec:
    return ModelSpec(
        id="m",
        provider="openai-compatible",
        capabilities=("developer",),
        cost=cost,
        context=ContextProfile(
            context_window=64_000,
            effective_context=60_000,
            sweet_spot=20_000,
            system_prompt_overhead=2_000,
            recommended_max_file_tokens=8_000,
        ),
    )


def test_plain_call_prices_input_and_output() -> None:
    price = Price(input_per_1m=2.0, output_per_1m=8.0)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000)
    assert price.cost_usd(usage) == pytest.approx(2.0 + 4.0)


def test_openai_cached_part_of_the_prompt_is_priced_once_at_the_cached_price() -> None:
    # OpenAI: prompt_tokens is every input token; cached_tokens is the part of it read from cache.
    price = Price(input_per_1m=2.0, output_per_1m=8.0, cached_input_per_1m=0.5)
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=0, cached_tokens=800_000)
    assert price.cost_usd(usage) == pytest.approx(0.2 * 2.0 + 0.8 * 0.5)


def test_anthropic_cache_read_and_write_are_each_priced_once() -> None:
    price = Price(
        input_per_1m=3.0, output_per_1m=15.0, cached_input_per_1m=0.3, cache_write_per_1m=3.75
    )
    # 100k plain + 600k read + 300k written = 1M prompt tokens, as the provider sums them.
    usage = Usage(
        prompt_tokens=1_000_000,
        completion_tokens=100_000,
        cached_tokens=600_000,
        cache_write_tokens=300_000,
    )
    expected = 0.1 * 3.0 + 0.6 * 0.3 + 0.3 * 3.75 + 0.1 * 15.0
    assert price.cost_usd(usage) == pytest.approx(expected)


def test_cached_tokens_without_a_cached_price_are_priced_as_input() -> None:
    price = Price(input_per_1m=1.0, output_per_1m=1.0)
    usage = Usage(prompt_tokens=1_000_000, cached_tokens=400_000, cache_write_tokens=100_000)
    assert price.cost_usd(usage) == pytest.approx(1.0)


def test_cached_tokens_beyond_the_prompt_never_make_a_cost_negative() -> None:
    price = Price(input_per_1m=1.0, output_per_1m=1.0, cached_input_per_1m=0.1)
    usage = Usage(prompt_tokens=1_000, cached_tokens=5_000, cache_write_tokens=5_000)
    assert price.cost_usd(usage) == pytest.approx(1_000 * 0.1 / 1_000_000)


def test_a_model_without_a_price_has_no_cost() -> None:
    assert cost_usd(None, Usage(prompt_tokens=10, completion_tokens=10)) is None


def test_price_of_reads_every_price_of_the_registry_entry() -> None:
    cost = Cost(
        input_per_1m=3.0, output_per_1m=15.0, cached_input_per_1m=0.3, cache_write_per_1m=3.75
    )
    assert price_of(spec(cost)) == Price(
        input_per_1m=3.0, output_per_1m=15.0, cached_input_per_1m=0.3, cache_write_per_1m=3.75
    )


def test_price_of_a_model_without_cost_or_without_entry_is_none() -> None:
    assert price_of(spec(None)) is None
    assert price_of(None) is None


def test_price_of_a_shipped_openai_model_has_a_cached_input_price() -> None:
    price = price_of(load_registry().get("gpt-4o"))
    assert price is not None and price.cached_input_per_1m is not None
    assert price.cached_input_per_1m < price.input_per_1m
