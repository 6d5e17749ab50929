"""Dollars of a model call: the registry's prices applied to the tokens the provider reported.

Each input token is priced once: plain input at the input price, cache reads at the cached-input
price, cache writes at the cache-write price (each falls back to the input price when the
registry names none). A model without a price has no cost: callers get ``None`` and decide
(the task loop fails closed when a dollar budget is set).
"""

from __future__ import annotations

from dataclasses import dataclass

from semspec.model.profiles import ModelSpec
from semspec.model.providers.types import Usage

PER = 1_000_000


@dataclass(frozen=True)
class Price:
    """US dollars per one million tokens of each kind."""

    input_per_1m: float
    output_per_1m: float
    cached_input_per_1m: float | None = None
    """Tokens read from the prompt cache; None = priced as plain input."""
    cache_write_per_1m: float | None = None
    """Tokens written to the prompt cache; None = priced as plain input."""

    def cost_usd(self, usage: Usage) -> float:
        """What a call with ``usage`` cost."""
        cached = min(usage.cached_tokens, usage.prompt_tokens)
        written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
        plain = usage.prompt_tokens - cached - written
        cached_price = (
            self.input_per_1m if self.cached_input_per_1m is None else (self.cached_input_per_1m)
        )
        write_price = (
            self.input_per_1m if self.cache_write_per_1m is None else (self.cache_write_per_1m)
        )
        dollars = (
            plain * self.input_per_1m
            + cached * cached_price
            + written * write_price
            + usage.completion_tokens * self.output_per_1m
        )
        return dollars / PER


def cost_usd(price: Price | None, usage: Usage) -> float | None:
    """What a call cost, or None when the model has no price."""
    return None if price is None else price.cost_usd(usage)


def price_of(spec: ModelSpec | None) -> Price | None:
    """The registry's price of the model ``spec``, or None when it has none (or is unknown)."""
    if spec is None or spec.cost is None:
        return None
    cost = spec.cost
    return Price(
        input_per_1m=cost.input_per_1m,
        output_per_1m=cost.output_per_1m,
        cached_input_per_1m=cost.cached_input_per_1m,
        cache_write_per_1m=cost.cache_write_per_1m,
    )
