"""The relevance guard: soft warnings for reads outside the latest search's top-K."""

from __future__ import annotations

from typing import Any

from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.reasons import ReasonCode
from semspec.agents.stabilization.session import SessionState


def is_excluded(path: str, policy: StabilizationPolicy) -> bool:
    """Whether ``path`` lies under an excluded directory (vendor/, node_modules/, ...)."""
    return any(part in policy.excluded_dirs for part in path.split("/")[:-1])


def relevance_warnings(
    state: SessionState, path: str, policy: StabilizationPolicy
) -> tuple[list[ReasonCode], list[str], list[dict[str, Any]]]:
    """Reason codes, messages and alternative calls for a read of ``path`` (never a block)."""
    codes: list[ReasonCode] = []
    messages: list[str] = []
    calls: list[dict[str, Any]] = []
    if is_excluded(path, policy):
        codes.append(ReasonCode.EXCLUDED_PATH)
        messages.append(f"{path} is under an excluded directory; it is rarely the right target.")
    search = state.latest_search
    if search is not None and path not in search.top_paths[: policy.top_k]:
        codes.append(ReasonCode.LOW_RELEVANCE_OUTSIDE_TOPK)
        messages.append(
            f"This target seems unrelated to the latest search {search.query!r}. "
            f"Try one of: {', '.join(search.top_paths[:3]) or '(no results)'}."
        )
        seen: set[str] = set()
        for candidate in search.candidates:
            if candidate.path not in seen:
                seen.add(candidate.path)
                calls.append({"tool": "read", "args": {"candidate_id": candidate.candidate_id}})
            if len(calls) == 3:
                break
    return codes, messages, calls
