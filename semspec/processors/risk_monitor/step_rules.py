"""The step rules: a stuck agent seen inside one turn, from its ``step`` events alone.

Pure like ``rules``: ``step_triggers`` reads one step event and the task's state, updates the
state's step window and yields the rules the step completes; ``rules.apply_event`` climbs their
ladders. Nothing here reads a clock, so a recorded run replayed through it (``semspec monitor
replay``) fires exactly where the live monitor would.

The rules are the rows of ``core.step_rule_table.STEP_RULES``, checked in its order; a
``tool`` rule's detector is its entry in ``TOOL_PATTERNS``. What each compares (hashes only; the
monitor never sees the text):

- ``repeated_failure``: the same tool call failing with the same output ``threshold`` times in a
  row. Checked first, so a failing loop is named as one even when ``repeated_action`` would match.
- ``repeated_action``: the same tool call returning the same output ``threshold`` times in a row.
  Polling, the same call with changing output, never matches.
- ``alternating_actions``: two different tool calls taking turns, each returning its own same
  output every time, over ``threshold`` steps.
- ``no_tool_call``: ``threshold`` model calls of the developer in a row that asked for no tool
  (the reviewer has no tools to call: its verdict is text).
- ``context_window_errors``: ``threshold`` model calls refused for a prompt over the window, in
  any turns of the episode (a new turn often hits the same wall).

The first three look at the turn's tool steps in order; a model call in between, one asking for
no tool included (mini-swe-agent's format-error turn), neither counts nor resets them, so a loop
the agent interrupts with a malformed reply is still one loop (issue 24). A step the agent marks
``wait``, or of a tool in ``risk.steps.wait_tools``, never counts, and it ends every run in
progress: a wait tool may repeat as long as it likes, and so may a check the agent waits between
(a server that is not up yet answers the same each time). Such polling is bounded by the turn's
step limit and the task's dollar budget, not by these rules (ADR 0006). Only steps of one turn
(one agent, one iteration) make a pattern: a reviewer that reads the same files in every review
is not stuck. A rule that fires uses its steps up, so it climbs the ladder again only after a
whole new run of ``threshold``. Once a pause went out, the rest of that turn counts for no rule
(``TaskState.step_paused``): those are the steps the agent took while the stop reached it, and
a halt from them would skip the pause (issue 24, docs/risk-monitor.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from semspec.core.config.models import RiskRule, StepRulesConfig
from semspec.core.step_rule_table import STEP_RULES
from semspec.processors.risk_monitor.state import TaskState, event_digest
from semspec.vocabulary.events import StepEvent
from semspec.vocabulary.signal_evidence import StepPatternEvidence

CONTEXT_WINDOW = "context_window"
"""The ``error_kind`` of a model call refused because its prompt exceeded the window."""
MAX_STEP_ID_CHARS = 256
"""Longer event ids are kept (and named in evidence) as ``#`` + their digest, so a state stays
small whatever a step event carries."""
MAX_TOOL_CHARS = 64
"""Tool names are kept to this many characters."""
MAX_HASH_CHARS = 64
"""Longer action and observation hashes (the agents send 16 hex digits) are kept as ``#`` +
their digest: equal stays equal, and a state stays small."""

Trigger = tuple[str, RiskRule, StepPatternEvidence]

_NO_TOOL_CALL, _WINDOW_ERRORS = "no_tool_call", "context_window_errors"
"""The ``model`` rows of ``STEP_RULES``: each counts model calls in its own field of the state."""

# Positions in a ``TaskState.step_window`` entry.
_ID, _STEP, _TOOL, _ACTION, _OBSERVATION, _ERROR = range(6)


def step_triggers(state: TaskState, event: StepEvent, rules: StepRulesConfig) -> Iterator[Trigger]:
    """Record ``event`` in ``state``'s step window and yield the rule it completes, if any."""
    data = event.data
    turn = f"{data.role}/{event.iteration}"
    if turn != state.step_turn or data.step <= state.step_last:
        state.step_turn = turn
        state.step_window = []
        state.silent_steps = []
        state.step_paused = False
    state.step_last = data.step
    if state.step_paused:
        # Steps the agent takes between the pause going out and it stopping (polling, NATS,
        # the kill: a second or two, several steps for a fast agent) are the paused loop's own
        # tail: counting them would climb to halt and skip the human's chance (issue 24).
        return
    named = [_step_id(event.event_id), data.step]

    if data.kind == "model":
        if data.error_kind == CONTEXT_WINDOW:
            yield from _context_window(state, event, rules.rule(_WINDOW_ERRORS), named)
        elif not data.error and data.role == "developer":
            # A provider's failure is neither silence nor a request; the reviewer answers in
            # text by design (its format retries are bounded by the agent itself).
            silent = data.action_hash == ""
            yield from _silence(state, event, rules.rule(_NO_TOOL_CALL), named, silent)
        return
    state.silent_steps = []
    if data.wait or data.tool in rules.wait_tools:
        # Waiting between two checks is what polling is: a repeat after a wait is no loop.
        state.step_window = []
        return
    tool = (data.tool or "")[:MAX_TOOL_CHARS]
    entry = [*named, tool, _short(data.action_hash), _short(data.observation_hash), data.error]
    state.step_window = [*state.step_window, entry][-window_size(rules) :]
    match = next(_tool_patterns(state.step_window, rules), None)
    if match is not None:
        reason, rule, found = match
        state.step_window = []  # its steps are used up: the next signal needs a new run
        yield reason, rule, _evidence(event, found, [entry[_TOOL] for entry in found[:2]])


def forget_steps(state: TaskState) -> None:
    """Drop every step pattern in progress (a human answered: a new episode starts)."""
    state.step_window = []
    state.silent_steps = []
    state.window_errors = []
    state.step_paused = False


def window_size(rules: StepRulesConfig) -> int:
    """Tool steps a task's window keeps: the largest threshold of an enabled tool-step rule."""
    tool_rules = [rules.rule(spec.reason) for spec in STEP_RULES if spec.reads == "tool"]
    return max([int(r.threshold) for r in tool_rules if r.enabled], default=1)


def _tool_patterns(
    window: list[list[Any]], rules: StepRulesConfig
) -> Iterator[tuple[str, RiskRule, list[list[Any]]]]:
    """Each tool-step rule whose pattern the window's newest steps complete, in the table's
    order (``core.step_rule_table``)."""
    for spec in STEP_RULES:
        if spec.reads != "tool" or not (rule := rules.rule(spec.reason)).enabled:
            continue
        if (run := _tail(window, rule)) and TOOL_PATTERNS[spec.reason](run):
            yield spec.reason, rule, run


def _tail(window: list[list[Any]], rule: RiskRule) -> list[list[Any]]:
    """The newest ``threshold`` entries, or none while the window holds fewer."""
    count = int(rule.threshold)
    return window[-count:] if len(window) >= count else []


def _same(run: list[list[Any]]) -> bool:
    """Every step is the same call with the same output (and the same error flag)."""
    first = _outcome(run[0])
    return all(_outcome(entry) == first for entry in run[1:])


def _same_failing(run: list[list[Any]]) -> bool:
    """Every step is the same call failing with the same output."""
    return bool(run[0][_ERROR]) and _same(run)


def _alternating(run: list[list[Any]]) -> bool:
    """Two different calls take turns, each with the same output every time."""
    even, odd = _outcome(run[0]), _outcome(run[1])
    if even[0] == odd[0]:
        return False  # one call: that is repetition, not alternation
    return all(_outcome(entry) == (even, odd)[i % 2] for i, entry in enumerate(run))


TOOL_PATTERNS: Final[dict[str, Callable[[list[list[Any]]], bool]]] = {
    "repeated_failure": _same_failing,
    "repeated_action": _same,
    "alternating_actions": _alternating,
}
"""The detector of each ``tool`` row of ``STEP_RULES``: whether a run of the newest
``threshold`` tool steps makes its pattern. A test keeps the two in step."""


def _outcome(entry: list[Any]) -> tuple[str, str, bool]:
    return entry[_ACTION], entry[_OBSERVATION], bool(entry[_ERROR])


def _silence(
    state: TaskState, event: StepEvent, rule: RiskRule, named: list[Any], silent: bool
) -> Iterator[Trigger]:
    if not silent:
        state.silent_steps = []
        return
    state.silent_steps = [*state.silent_steps, named][-int(rule.threshold) :]
    if rule.enabled and len(state.silent_steps) >= rule.threshold:
        found, state.silent_steps = state.silent_steps, []
        yield _NO_TOOL_CALL, rule, _evidence(event, found, [])


def _context_window(
    state: TaskState, event: StepEvent, rule: RiskRule, named: list[Any]
) -> Iterator[Trigger]:
    state.window_errors = [*state.window_errors, named][-int(rule.threshold) :]
    if rule.enabled and len(state.window_errors) >= rule.threshold:
        found, state.window_errors = state.window_errors, []
        yield _WINDOW_ERRORS, rule, _evidence(event, found, [])


def _evidence(event: StepEvent, found: list[list[Any]], tools: list[str]) -> StepPatternEvidence:
    return StepPatternEvidence(
        event_id=_step_id(event.event_id),
        iteration=event.iteration,
        role=event.data.role,
        steps=[entry[_ID] for entry in found],
        step_numbers=[entry[_STEP] for entry in found],
        tools=[tool for tool in dict.fromkeys(tools) if tool],
    )


def _step_id(event_id: str) -> str:
    return event_id if len(event_id) <= MAX_STEP_ID_CHARS else "#" + event_digest(event_id)


def _short(value: str) -> str:
    return value if len(value) <= MAX_HASH_CHARS else "#" + event_digest(value)
