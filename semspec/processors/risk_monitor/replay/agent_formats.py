"""Other agents' recordings as chat logs: SWE-agent ``.traj``, OpenHands event lists, ATIF.

Each reader turns its document into the chat log ``chat_log.chat_run`` reads (assistant
messages with ``tool_calls``, each answered by a ``tool`` message with the call's id), so one
function derives steps, failures, tokens and dollars for every format. ``FORMATS`` is the
table: a name, a test that a parsed JSON document is of the format, and its converter; the
first row whose test holds wins, and ``semspec monitor replay`` names it.

- **SWE-agent** (``.traj``): ``trajectory``, a list of ``{action, observation, response,
  thought}``, one model call and one command each (the command's first word is the tool:
  ``edit``, ``open``, ``submit``, a shell command); or, without it, ``history``, the chat
  where an assistant message's ``action`` is answered by the next user or tool message. The
  run's dollars: ``info.model_stats.instance_cost``.
- **OpenHands** (a JSON list of events, or an object holding it under ``events``,
  ``history`` or ``trajectory``): an agent event with an ``action`` other than ``message`` is
  a tool call (its ``tool_call_metadata.function_name``, else the action) answered by the
  observation whose ``cause`` is its ``id``; actions of one model response (the same
  ``tool_call_metadata.model_response.id``) are one model call; an agent ``message`` is a
  model call asking for no tool. An ``error`` observation, or one with a non-zero
  ``extras.exit_code``, is a failure. Bookkeeping events (``system``, ``recall``,
  ``agent_state_changed``, ``condensation``) are no steps.
- **ATIF** (the Agent Trajectory Interchange Format, Harbor RFC 0001; ``schema_version``
  ``ATIF-v1.x``): an ``agent`` step is a model call whose ``tool_calls`` are answered by
  its ``observation.results`` (matched by ``source_call_id``); its ``metrics`` give its
  tokens; ``final_metrics.total_cost_usd`` the run's dollars.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from semspec.processors.risk_monitor.replay.runs import ReplayFileError

Converter = Callable[[str, Any], dict[str, Any]]

_OPENHANDS_SKIPPED = frozenset(
    {"system", "recall", "condensation", "condensation_request", "change_agent_state", "null"}
)
_OPENHANDS_QUIET = frozenset({"agent_state_changed", "recall", "null", "condensation"})
_OPENHANDS_NOISE = frozenset(
    {"thought", "security_risk", "confirmation_state", "is_confirmed", "hidden", "impl_source"}
)


@dataclass(frozen=True)
class AgentFormat:
    """One row of the table: how to recognise a recording and turn it into a chat log."""

    name: str
    detect: Callable[[Any], bool]
    convert: Converter


def is_mini_swe_agent(document: Any) -> bool:
    """A mini-swe-agent ``.traj.json``: a chat log whose ``info`` names mini's version."""
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        return False
    fmt = document.get("trajectory_format")
    info = document.get("info")
    return (isinstance(fmt, str) and fmt.startswith("mini-swe-agent")) or (
        isinstance(info, dict) and "mini_version" in info
    )


def _is_atif(document: Any) -> bool:
    return isinstance(document, dict) and str(document.get("schema_version", "")).startswith("ATIF")


def _is_swe_agent(document: Any) -> bool:
    if not isinstance(document, dict) or "messages" in document:
        return False
    trajectory, history = document.get("trajectory"), document.get("history")
    if isinstance(trajectory, list) and trajectory:
        first = trajectory[0]
        return isinstance(first, dict) and "action" in first and "source" not in first
    return isinstance(history, list) and any(
        isinstance(m, dict) and "role" in m for m in history[:5]
    )


def _openhands_events(document: Any) -> list[Any] | None:
    events = document
    if isinstance(document, dict):
        events = next(
            (document[k] for k in ("events", "history", "trajectory") if k in document), None
        )
    if not isinstance(events, list) or not events:
        return None
    sample = [e for e in events[:10] if isinstance(e, dict)]
    if sample and all("source" in e and ("action" in e or "observation" in e) for e in sample):
        return events
    return None


def _is_openhands(document: Any) -> bool:
    return _openhands_events(document) is not None


def swe_agent_chat(name: str, document: Any) -> dict[str, Any]:
    """A SWE-agent ``.traj`` as a chat log."""
    messages: list[dict[str, Any]] = []
    trajectory = document.get("trajectory")
    if isinstance(trajectory, list) and trajectory:
        for index, entry in enumerate(trajectory):
            if not isinstance(entry, dict):
                raise ReplayFileError(name, f"trajectory[{index}]: expected an object")
            text = _string(entry.get("response")) or _string(entry.get("thought"))
            _command_turn(messages, f"t{index}", text, _string(entry.get("action")))
            if messages[-1]["role"] == "assistant" and messages[-1].get("tool_calls"):
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": f"t{index}",
                        "content": _string(entry.get("observation")),
                    }
                )
    else:
        waiting: str | None = None
        for index, message in enumerate(document["history"]):
            if not isinstance(message, dict):
                raise ReplayFileError(name, f"history[{index}]: expected an object")
            role = message.get("role")
            text = _text(message.get("content"))
            if role == "assistant":
                _command_turn(messages, f"h{index}", text, _string(message.get("action")))
                waiting = f"h{index}" if messages[-1].get("tool_calls") else None
            elif role in ("user", "tool") and waiting is not None:
                messages.append({"role": "tool", "tool_call_id": waiting, "content": text})
                waiting = None
            elif role in ("user", "system", "tool"):
                messages.append({"role": "user", "content": text})
    total = _path(document, "info", "model_stats", "instance_cost")
    return {"info": _run_cost_info(total), "messages": messages}


def _command_turn(messages: list[dict[str, Any]], call_id: str, text: str, action: str) -> None:
    command = action.strip()
    if not command:
        messages.append({"role": "assistant", "content": text, "tool_calls": []})
        return
    tool = command.split(maxsplit=1)[0]
    call = {"id": call_id, "function": {"name": tool, "arguments": {"command": command}}}
    messages.append({"role": "assistant", "content": text, "tool_calls": [call]})


def openhands_chat(name: str, document: Any) -> dict[str, Any]:
    """An OpenHands event list as a chat log."""
    events = _openhands_events(document) or []
    messages: list[dict[str, Any]] = []
    last_response: object = None
    last_call: dict[str, Any] = {}  # the assistant message of the latest model response
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise ReplayFileError(name, f"events[{index}]: expected an object")
        source, action = event.get("source"), event.get("action")
        if isinstance(action, str):
            raw_args = event.get("args")
            args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
            if source != "agent":
                if action == "message":
                    messages.append({"role": "user", "content": _string(args.get("content"))})
                continue
            if action in _OPENHANDS_SKIPPED:
                continue
            text = _string(args.get("thought")) or _string(event.get("message"))
            if action == "message":
                content = _string(args.get("content"))
                messages.append({"role": "assistant", "content": content, "tool_calls": []})
                last_response, last_call = None, {}
                continue
            raw_metadata = event.get("tool_call_metadata")
            metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
            tool = _string(metadata.get("function_name")) or action
            arguments = {k: v for k, v in args.items() if k not in _OPENHANDS_NOISE}
            call = {"id": str(event.get("id")), "function": {"name": tool, "arguments": arguments}}
            response = _path(metadata, "model_response", "id")
            if response is not None and response == last_response and last_call:
                last_call["tool_calls"].append(call)  # a parallel call of the same response
            else:
                last_call = {"role": "assistant", "content": text, "tool_calls": [call]}
                messages.append(last_call)
            last_response = response
        elif isinstance(event.get("observation"), str) and "cause" in event:
            kind = event["observation"]
            if kind in _OPENHANDS_QUIET:
                continue
            code = _path(event, "extras", "exit_code")
            failed = kind == "error" or (isinstance(code, int) and code not in (0, -1))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": str(event["cause"]),
                    "content": _string(event.get("content")),
                    "is_error": failed,
                }
            )
    return {"messages": messages}


def atif_chat(name: str, document: Any) -> dict[str, Any]:
    """An ATIF trajectory as a chat log."""
    steps = document.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ReplayFileError(name, "steps: expected a non-empty list of ATIF steps")
    messages: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict) or step.get("source") not in ("system", "user", "agent"):
            raise ReplayFileError(
                name, f"steps[{index}]: expected an object with source system, user or agent"
            )
        text = _text(step.get("message"))
        if step["source"] != "agent":
            messages.append({"role": step["source"], "content": text})
            continue
        message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": []}
        calls = step.get("tool_calls")
        if isinstance(calls, list) and calls:
            message["tool_calls"] = [_atif_call(name, index, n, c) for n, c in enumerate(calls)]
        usage = _atif_usage(step.get("metrics"))
        if usage:
            message["usage"] = usage
        if isinstance(step.get("model_name"), str):
            message["model"] = step["model_name"]
        messages.append(message)
        results = _path(step, "observation", "results")
        for result in results if isinstance(results, list) else []:
            if isinstance(result, dict):
                call_id = result.get("source_call_id")
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id if isinstance(call_id, str) else None,
                        "content": _text(result.get("content")),
                    }
                )
    model = _path(document, "agent", "model_name")
    chat: dict[str, Any] = {
        "info": _run_cost_info(_path(document, "final_metrics", "total_cost_usd")),
        "messages": messages,
    }
    if isinstance(model, str):
        chat["model"] = model
    return chat


def _atif_call(name: str, step: int, number: int, call: Any) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("function_name"), str):
        raise ReplayFileError(
            name, f"steps[{step}].tool_calls[{number}]: expected {{tool_call_id, function_name}}"
        )
    call_id = call.get("tool_call_id")
    return {
        "id": call_id if isinstance(call_id, str) else f"s{step}c{number}",
        "function": {"name": call["function_name"], "arguments": call.get("arguments")},
    }


def _atif_usage(metrics: Any) -> dict[str, Any] | None:
    if not isinstance(metrics, dict) or "prompt_tokens" not in metrics:
        return None
    usage = {
        "prompt_tokens": metrics.get("prompt_tokens"),
        "completion_tokens": metrics.get("completion_tokens", 0),
    }
    if isinstance(metrics.get("cached_tokens"), int):
        usage["prompt_tokens_details"] = {"cached_tokens": metrics["cached_tokens"]}
    return usage


def _run_cost_info(total: Any) -> dict[str, Any]:
    return {"model_stats": {"instance_cost": total}} if total is not None else {}


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    if isinstance(content, dict | int | float):
        return json.dumps(content, sort_keys=True)
    return ""


def _path(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


FORMATS = (
    AgentFormat("atif", _is_atif, atif_chat),
    AgentFormat("swe-agent", _is_swe_agent, swe_agent_chat),
    AgentFormat("openhands", _is_openhands, openhands_chat),
)
"""Recordings read by conversion to a chat log, tested in this order."""
