"""The search→ref→read gate: a read needs a search ref, or is a bounded precision read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.reasons import ErrorCode, ReasonCode
from semspec.agents.stabilization.session import SessionState

Via = Literal["candidate", "bundle", "precision", "open"]


@dataclass(frozen=True)
class ReadArgs:
    """Arguments of one read call (path already normalized relative to the workspace)."""

    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    candidate_id: str | None = None
    bundle_id: str | None = None


@dataclass(frozen=True)
class ReadTarget:
    """What the gate allows: a path and a line range (``end`` None = to the end of the file)."""

    path: str
    start: int
    end: int | None
    via: Via
    warnings: tuple[ReasonCode, ...] = ()


@dataclass(frozen=True)
class Blocked:
    """A refused read, with the reason and ready-to-run alternatives."""

    error: ErrorCode
    reason: ReasonCode
    message: str
    hint: str
    next_calls: list[dict[str, Any]] = field(default_factory=list)


def _search_call(path: str | None) -> dict[str, Any]:
    stem = (path or "").rsplit("/", 1)[-1].split(".", 1)[0] or "<symbol or phrase>"
    return {"tool": "search", "args": {"query": stem}}


def _precision_call(path: str, start: int, span: int) -> dict[str, Any]:
    return {
        "tool": "read",
        "args": {"path": path, "start_line": start, "end_line": start + span - 1},
    }


def resolve_read(
    state: SessionState, args: ReadArgs, policy: StabilizationPolicy
) -> ReadTarget | Blocked:
    """Turn read arguments into a target, or block them with reason codes and next calls."""
    if args.candidate_id:
        return _by_candidate(state, args, policy)
    if args.bundle_id:
        return _by_bundle(state, args)
    if not args.path:
        return Blocked(
            ErrorCode.SEARCH_REF_REQUIRED,
            ReasonCode.SEARCH_REF_REQUIRED,
            "read needs a candidate_id or bundle_id from search, or a path with a line range",
            "Use search results (candidate/bundle ref) or precision read path+range.",
            [_search_call(None)],
        )
    return _by_path(state, args, args.path, policy)


def _by_candidate(
    state: SessionState, args: ReadArgs, policy: StabilizationPolicy
) -> ReadTarget | Blocked:
    candidate = state.candidates.get(args.candidate_id or "")
    if candidate is None or (args.path and args.path != candidate.path):
        return Blocked(
            ErrorCode.CANDIDATE_REF_REQUIRED,
            ReasonCode.CANDIDATE_REF_REQUIRED,
            f"candidate_id {args.candidate_id!r} was not issued by a search in this session"
            + (f" for {args.path!r}" if args.path and candidate else ""),
            "Run search again and pass one of its candidate_id values unchanged.",
            [_search_call(args.path)],
        )
    start = args.start_line or max(1, candidate.line - 20)
    end = args.end_line or start + policy.candidate_window - 1
    return ReadTarget(candidate.path, start, end, "candidate")


def _by_bundle(state: SessionState, args: ReadArgs) -> ReadTarget | Blocked:
    paths = state.bundles.get(args.bundle_id or "")
    path = args.path or (paths[0] if paths else None)
    if not paths or path not in paths:
        calls = [
            {"tool": "read", "args": {"bundle_id": args.bundle_id, "path": p}} for p in paths or ()
        ]
        return Blocked(
            ErrorCode.CANDIDATE_REF_REQUIRED,
            ReasonCode.CANDIDATE_REF_REQUIRED,
            f"bundle_id {args.bundle_id!r} is unknown in this session or does not cover {path!r}",
            "Pass a bundle_id from the latest search together with one of its paths.",
            calls[:3] or [_search_call(args.path)],
        )
    return ReadTarget(path, args.start_line or 1, args.end_line, "bundle")


def _by_path(
    state: SessionState, args: ReadArgs, path: str, policy: StabilizationPolicy
) -> ReadTarget | Blocked:
    if args.start_line is not None and args.end_line is not None:
        span = args.end_line - args.start_line + 1
        if span < 1:
            return Blocked(
                ErrorCode.RANGE_TOO_LARGE,
                ReasonCode.PRECISION_RANGE_TOO_LARGE,
                f"end_line {args.end_line} is before start_line {args.start_line}",
                "Give start_line <= end_line (1-based, inclusive).",
                [_precision_call(path, args.start_line, min(policy.max_range_lines, 50))],
            )
        if span <= policy.max_range_lines or policy.gate_mode != "enforce":
            warnings = (
                (ReasonCode.PRECISION_RANGE_TOO_LARGE,)
                if span > policy.max_range_lines and policy.gate_mode == "advise"
                else ()
            )
            return ReadTarget(path, args.start_line, args.end_line, "precision", warnings)
        window = policy.max_range_lines
        return Blocked(
            ErrorCode.RANGE_TOO_LARGE,
            ReasonCode.PRECISION_RANGE_TOO_LARGE,
            f"precision read of {span} lines exceeds the {window}-line cap",
            f"Read in windows of at most {window} lines, or search and read by candidate_id.",
            [
                _precision_call(path, args.start_line, window),
                _precision_call(path, args.start_line + window, window),
                _search_call(path),
            ],
        )
    if policy.gate_mode == "off":
        return ReadTarget(path, args.start_line or 1, args.end_line, "open")
    first = state.metrics.search_count == 0
    reason = ReasonCode.SEARCH_FIRST_REQUIRED if first else ReasonCode.SEARCH_REF_REQUIRED
    if policy.gate_mode == "advise":
        return ReadTarget(path, args.start_line or 1, args.end_line, "open", (reason,))
    return Blocked(
        ErrorCode.SEARCH_FIRST_REQUIRED if first else ErrorCode.SEARCH_REF_REQUIRED,
        reason,
        f"read of {path!r} without a search ref or a line range is blocked",
        "Use search results (candidate/bundle ref) or precision read path+range.",
        [_search_call(path), _precision_call(path, args.start_line or 1, policy.max_range_lines)],
    )
