"""The step rules, one row each: what every part of semspec that names a step rule reads.

A step rule finds a stuck agent inside one turn from its ``step`` events (ADR 0006). Each row
gives the rule's reason (also its key under ``risk.steps``), its default threshold, the words
the config reference, the signals, the suggested guidance and ``docs/risk-monitor.md`` use, and
which steps its detector reads. Readers:

- ``core.config.models.StepRulesConfig``: one ``risk.steps.<reason>`` per row, its default and
  its meaning from here;
- ``processors.risk_monitor.step_rules``: the detectors, checked in this table's order (a
  failing loop is named ``repeated_failure`` before ``repeated_action`` can match);
- ``processors.risk_monitor.signals``: the signal's message (``pattern``);
- ``vocabulary.suggestions``: the ``--guidance`` offered with a signal (``guidance``);
- ``tests/processors/test_step_rule_table.py``: the rows of ``docs/risk-monitor.md``'s rule table.

It sits on the ground floor so that config, vocabulary and the monitor may all import it.
Adding a rule: ``CONTRIBUTING.md``, "Add a step rule".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

StepKind = Literal["tool", "model"]
"""The steps a detector reads: a turn's tool calls in order, or the agent's model calls."""


@dataclass(frozen=True)
class StepRuleSpec:
    """One step rule."""

    reason: str
    """The rule's name: the reason of its signals and its key under ``risk.steps``."""
    threshold: int
    """Default steps that make the pattern."""
    reads: StepKind
    """Which steps its detector reads (``tool`` rules share the turn's window of tool steps)."""
    meaning: str
    """What the pattern is, for the config reference (``threshold`` is the count)."""
    watches: str
    """What it watches, for the rule table of ``docs/risk-monitor.md``."""
    counted: str
    """How the threshold counts, after the number in that table (``in a row``)."""
    pattern: str
    """What the agent did, in a signal's message (``the developer <pattern> at steps ...``)."""
    guidance: str
    """The guidance a human is offered to send with ``retry``."""
    least: int = 1
    """The smallest threshold that can make the pattern."""


STEP_RULES: Final[tuple[StepRuleSpec, ...]] = (
    StepRuleSpec(
        reason="repeated_failure",
        threshold=3,
        reads="tool",
        meaning="The same tool call failing with the same output ``threshold`` times in a row.",
        watches="the same tool call failing with the same output",
        counted="in a row",
        pattern="repeated the same call failing the same way",
        guidance="the same command keeps failing the same way; fix the cause",
    ),
    StepRuleSpec(
        reason="repeated_action",
        threshold=4,
        reads="tool",
        meaning="The same tool call returning the same output ``threshold`` times in a row.",
        watches="the same tool call with the same output",
        counted="in a row",
        pattern="repeated the same call with the same output",
        guidance="the same command keeps giving the same output; try another",
    ),
    StepRuleSpec(
        reason="alternating_actions",
        threshold=6,
        least=4,
        reads="tool",
        meaning="Two tool calls taking turns, each returning its same output, over "
        "``threshold`` steps.",
        watches="two tool calls taking turns, same outputs",
        counted="steps",
        pattern="alternated two calls with the same outputs",
        guidance="two commands keep undoing each other; pick one approach",
    ),
    StepRuleSpec(
        reason="no_tool_call",
        threshold=3,
        reads="model",
        meaning="``threshold`` model calls of the developer in a row that asked for no tool.",
        watches="the developer's model calls asking for no tool",
        counted="in a row",
        pattern="answered without calling a tool",
        guidance="act with the tools instead of answering in text",
    ),
    StepRuleSpec(
        reason="context_window_errors",
        threshold=2,
        reads="model",
        meaning="``threshold`` model calls refused because the prompt exceeded the context window.",
        watches="model calls refused for a prompt over the window",
        counted="in an episode",
        pattern="overflowed the context window",
        guidance="read less at once: search first, then read small parts",
    ),
)
"""Every step rule, in the order the monitor checks them."""

STEP_RULE_NAMES: Final[tuple[str, ...]] = tuple(spec.reason for spec in STEP_RULES)


def step_rule(reason: str) -> StepRuleSpec | None:
    """The row of the step rule named ``reason``, or None for any other reason."""
    return next((spec for spec in STEP_RULES if spec.reason == reason), None)
