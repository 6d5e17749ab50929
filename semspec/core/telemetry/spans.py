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
    error_type: str | None = None,
) -> None:
    """One model call (``chat {model}``); ``error_type`` for a call that failed."""
    if not telemetry.enabled:
        return
    attributes = _turn_step("chat", conversation, role, step)
    if model:
        attributes[REQUEST_MODEL] = model
    if provider:
        attributes[PROVIDER] = provider
    if error_type is None:
        attributes[INPUT_TOKENS] = input_tokens
        attributes[OUTPUT_TOKENS] = output_tokens
        attributes[CACHE_READ_TOKENS] = cached_tokens
    else:
        attributes[ERROR_TYPE] = error_type
    if cost_usd is not None:
        attributes[COST_USD] = cost_usd
    name = f"chat {model}" if model else "chat"
    telemetry.record_span(name, attributes, duration_ms, kind="client", error=error_type)


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
    """One tool call (``execute_tool {tool}``); ``error`` when the tool reported a failure."""
    if not telemetry.enabled:
        return
    attributes = _turn_step("execute_tool", conversation, role, step)
    attributes[TOOL_NAME] = tool
    if call_id:
        attributes[TOOL_CALL_ID] = call_id
    failed = "tool_error" if error else None
    if failed:
        attributes[ERROR_TYPE] = failed
    telemetry.record_span(f"execute_tool {tool}", attributes, duration_ms, error=failed)


def gate_span(
    telemetry: Telemetry,
    *,
    gate: str,
    required: bool,
    exit_code: int | None,
    timed_out: bool,
    duration_ms: float,
) -> None:
    """One gate run (``gate {name}``) with its exit status; a gate that did not pass fails."""
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
    telemetry.record_span(f"gate {gate}", attributes, duration_ms, error=error)
