"""The spans semspec records itself: model and tool calls named and described as the
OpenTelemetry GenAI semantic conventions say, gates and task submission with ``semspec.*``
attributes. Each function does nothing while telemetry is off."""

from __future__ import annotations

from semspec.core.telemetry.types import AttributeValue, Telemetry

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
CONVERSATION = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
ERROR_TYPE = "error.type"
EXIT_CODE = "process.exit.code"

TASK_ID = "semspec.task.id"
STEP = "semspec.step"
COST_USD = "semspec.cost_usd"
GATE_NAME = "semspec.gate.name"
GATE_PASSED = "semspec.gate.passed"
GATE_REQUIRED = "semspec.gate.required"
GATE_TIMED_OUT = "semspec.gate.timed_out"

# OpenInference's names (Arize Phoenix and others read cost and tokens from these; the GenAI
# convention has no cost attribute yet).
OI_KIND = "openinference.span.kind"
LLM_MODEL = "llm.model_name"
LLM_PROMPT_TOKENS = "llm.token_count.prompt"
LLM_COMPLETION_TOKENS = "llm.token_count.completion"
LLM_TOTAL_TOKENS = "llm.token_count.total"
LLM_COST_TOTAL = "llm.cost.total"
LLM_COST_PROMPT = "llm.cost.prompt"
LLM_COST_COMPLETION = "llm.cost.completion"
USAGE_COST = "gen_ai.usage.cost"
"""Not (yet) in the GenAI convention, but what OpenLIT-based dashboards and Langfuse read."""


def _turn_step(
    operation: str, conversation: str, role: str, step: int
) -> dict[str, AttributeValue]:
    """The attributes every step of an agent's turn has."""
    return {OPERATION: operation, CONVERSATION: conversation, AGENT_NAME: role, STEP: step}


def chat_span(
    telemetry: Telemetry,
    *,
    conversation: str,
    role: str,
    step: int,
    model: str | None,
    provider: str | None,
    duration_ms: float,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cached_tokens: int = 0,
    cost_usd: float | None = None,
    completion_cost_usd: float | None = None,
    error_type: str | None = None,
) -> None:
    """One model call (``chat {model}``); ``error_type`` for a call that failed.

    A failed call has ``error.type`` but not the error status: the step is retried or the
    task decides what it means, and the task's span (``task run``) says how the task ended,
    so a task that recovered from a refused call is not an error trace."""
    if not telemetry.enabled:
        return
    attributes = _turn_step("chat", conversation, role, step)
    attributes[OI_KIND] = "LLM"
    if model:
        attributes[REQUEST_MODEL] = model
        attributes[LLM_MODEL] = model
    if provider:
        attributes[PROVIDER] = provider
    if error_type is None:
        attributes[INPUT_TOKENS] = input_tokens
        attributes[OUTPUT_TOKENS] = output_tokens
        attributes[CACHE_READ_TOKENS] = cached_tokens
        attributes[LLM_PROMPT_TOKENS] = input_tokens
        attributes[LLM_COMPLETION_TOKENS] = output_tokens
        attributes[LLM_TOTAL_TOKENS] = input_tokens + output_tokens
    else:
        attributes[ERROR_TYPE] = error_type
    if cost_usd is not None:
        attributes[COST_USD] = cost_usd
        attributes[LLM_COST_TOTAL] = cost_usd
        attributes[USAGE_COST] = cost_usd
        if completion_cost_usd is not None:
            attributes[LLM_COST_COMPLETION] = completion_cost_usd
            attributes[LLM_COST_PROMPT] = max(cost_usd - completion_cost_usd, 0.0)
    name = f"chat {model}" if model else "chat"
    telemetry.record_span(name, attributes, duration_ms, kind="client")


def tool_span(
    telemetry: Telemetry,
    *,
    conversation: str,
    role: str,
    step: int,
    tool: str,
    call_id: str,
    duration_ms: float,
    error: bool,
) -> None:
    """One tool call (``execute_tool {tool}``); ``error`` when the tool reported a failure,
    which the agent reads and goes on from (``error.type``, not the error status)."""
    if not telemetry.enabled:
        return
    attributes = _turn_step("execute_tool", conversation, role, step)
    attributes[OI_KIND] = "TOOL"
    attributes[TOOL_NAME] = tool
    if call_id:
        attributes[TOOL_CALL_ID] = call_id
    if error:
        attributes[ERROR_TYPE] = "tool_error"
    telemetry.record_span(f"execute_tool {tool}", attributes, duration_ms)


def gate_span(
    telemetry: Telemetry,
    *,
    gate: str,
    required: bool,
    exit_code: int | None,
    timed_out: bool,
    duration_ms: float,
) -> None:
    """One gate run (``gate {name}``) with its exit status. A gate that did not pass has
    ``error.type`` (its verdict sends the developer back; the task's span says how the task
    ended); only a gate that could not start has the error status."""
    if not telemetry.enabled:
        return
    attributes: dict[str, AttributeValue] = {
        GATE_NAME: gate,
        GATE_REQUIRED: required,
        GATE_PASSED: exit_code == 0 and not timed_out,
        GATE_TIMED_OUT: timed_out,
    }
    if exit_code is not None:
        attributes[EXIT_CODE] = exit_code
    if timed_out:
        error: str | None = "timed out"
    elif exit_code is None:
        error = "not started"
    else:
        error = None if exit_code == 0 else f"exit code {exit_code}"
    if error is not None:
        attributes[ERROR_TYPE] = "timeout" if timed_out else "gate_failed"
    not_started = error if exit_code is None and not timed_out else None
    telemetry.record_span(f"gate {gate}", attributes, duration_ms, error=not_started)
