"""The stabilization layer around read and search: gate, budget, relevance, dedupe, metrics.

Tools (the developer's and the MCP server's) find files and lines; this layer decides what of it
reaches the model and labels every response with ``meta.stabilization``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from semspec.agents.stabilization.analytics import AnalyticsQueue
from semspec.agents.stabilization.budget import budget_state, line_allowance
from semspec.agents.stabilization.dedupe import render_lines
from semspec.agents.stabilization.gate import Blocked, ReadArgs, resolve_read
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.reasons import ErrorCode, ReasonCode
from semspec.agents.stabilization.relevance import relevance_warnings
from semspec.agents.stabilization.session import Candidate, SearchRecord, SessionState

_ACTIONS = {
    "ok": "read a candidate_id from search, or search first",
    "soft": "narrow the scope with search before reading more",
    "hard": "stop reading; work with what you have or submit",
}


@dataclass(frozen=True)
class SearchHit:
    """One matching line found by a search tool."""

    path: str
    line: int
    preview: str


def _short_id(prefix: str, *parts: str) -> str:
    return prefix + hashlib.sha1("\x00".join(parts).encode("utf-8")).hexdigest()[:10]


def candidate_id(query: str, path: str, line: int) -> str:
    """The stable id search issues for a hit: the same query and hit always give the same id."""
    return _short_id("c-", query, path, str(line))


class Stabilizer:
    """Applies one policy to the sessions it is handed; holds no per-session state itself."""

    def __init__(
        self, policy: StabilizationPolicy | None = None, analytics: AnalyticsQueue | None = None
    ) -> None:
        self.policy = policy or StabilizationPolicy()
        self.analytics = analytics

    def meta(
        self,
        state: SessionState,
        *,
        reason_codes: Sequence[ReasonCode] = (),
        warnings: Sequence[str] = (),
        next_calls: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """The ``meta.stabilization`` block of a response."""
        budget = budget_state(state.metrics, self.policy)
        return {
            "budget_state": budget,
            "suggested_next_action": _ACTIONS[budget],
            "warnings": list(warnings),
            "reason_codes": [code.value for code in dict.fromkeys(reason_codes)],
            "metrics_snapshot": state.metrics.snapshot(),
            "next_calls": list(next_calls),
        }

    def search_response(
        self, state: SessionState, query: str, hits: Sequence[SearchHit]
    ) -> dict[str, Any]:
        """Rank hits by path, issue stable candidate and bundle ids, and remember the search."""
        counts: dict[str, int] = {}
        for hit in hits:
            counts[hit.path] = counts.get(hit.path, 0) + 1
        ranked_paths = sorted(counts, key=lambda p: (-counts[p], p))
        rank = {path: i for i, path in enumerate(ranked_paths)}
        ordered = sorted(hits, key=lambda h: (rank[h.path], h.line))
        candidates = tuple(
            Candidate(candidate_id(query, h.path, h.line), h.path, h.line, h.preview)
            for h in ordered
        )
        top = tuple(ranked_paths[: self.policy.top_k])
        bundle_id = _short_id("b-", query, *top)
        state.metrics.search_count += 1
        state.latest_search = SearchRecord(query, bundle_id, top, candidates)
        state.candidates.update({c.candidate_id: c for c in candidates})
        state.bundles[bundle_id] = top
        calls = [{"tool": "read", "args": {"candidate_id": c.candidate_id}} for c in candidates[:3]]
        warnings = [] if candidates else [f"no match for {query!r}; try a shorter or other term"]
        self._emit({"type": "search", "session": state.key, "hits": len(candidates)})
        return {
            "ok": True,
            "query": query,
            "bundle_id": bundle_id,
            "candidates": [
                {
                    "candidate_id": c.candidate_id,
                    "path": c.path,
                    "line": c.line,
                    "preview": c.preview,
                }
                for c in candidates
            ],
            "meta": {"stabilization": self.meta(state, warnings=warnings, next_calls=calls)},
        }

    def read_response(
        self, state: SessionState, args: ReadArgs, load: Callable[[str], list[str]]
    ) -> dict[str, Any]:
        """Gate, budget, load, trim, dedupe and annotate one read; blocked reads explain why."""
        metrics = state.metrics
        if budget_state(metrics, self.policy) == "hard":
            return self._blocked(
                state,
                Blocked(
                    ErrorCode.BUDGET_EXCEEDED,
                    ReasonCode.BUDGET_HARD_LIMIT,
                    "Read budget exceeded. Use search to narrow scope: the session has used "
                    f"{metrics.reads_count} reads and {metrics.reads_lines_total} lines.",
                    "Work with what you have already read, or submit.",
                ),
            )
        target = resolve_read(state, args, self.policy)
        if isinstance(target, Blocked):
            return self._blocked(state, target)
        lines = load(target.path)
        total = len(lines)
        codes: list[ReasonCode] = list(target.warnings)
        warnings: list[str] = []
        start = min(max(1, target.start), max(1, total))
        end = total if target.end is None else min(target.end, total)
        allowance = line_allowance(metrics, self.policy)
        if budget_state(metrics, self.policy) == "soft":
            codes.append(ReasonCode.BUDGET_SOFT_LIMIT)
            warnings.append("Read budget nearly spent; payloads are reduced. Narrow with search.")
        if end - start + 1 > allowance:
            end = start + allowance - 1
            codes.append(ReasonCode.PREVIEW_DEGRADED)
        window = lines[start - 1 : end] if total else []
        seen = state.delivered.setdefault(target.path, {})
        rendered = render_lines(window, start, seen, self.policy.collapse_min_run)
        text = rendered.text
        if rendered.collapsed_lines:
            codes.append(ReasonCode.DUPLICATE_READ_COLLAPSED)
        if len(text) > self.policy.max_preview_chars:
            text = text[: self.policy.max_preview_chars] + "\n… [cut at the preview limit]"
            codes.append(ReasonCode.PREVIEW_DEGRADED)
        rel_codes, rel_messages, next_calls = relevance_warnings(state, target.path, self.policy)
        if target.via in ("candidate", "bundle"):
            # A search ref is relevant by construction; keep only the excluded-path hint.
            rel_codes = [c for c in rel_codes if c is not ReasonCode.LOW_RELEVANCE_OUTSIDE_TOPK]
            rel_messages = rel_messages[: len(rel_codes)]
            next_calls = []
        codes.extend(rel_codes)
        warnings.extend(rel_messages)
        if end < total:
            span = min(self.policy.max_range_lines, total - end)
            next_calls.append(
                {
                    "tool": "read",
                    "args": {"path": target.path, "start_line": end + 1, "end_line": end + span},
                }
            )
        metrics.reads_count += 1
        metrics.reads_lines_total += rendered.new_lines
        metrics.reads_chars_total += len(text)
        metrics.max_read_span = max(metrics.max_read_span, len(window))
        if metrics.search_count:
            metrics.reads_after_search += 1
        if ReasonCode.PREVIEW_DEGRADED in codes:
            metrics.preview_degraded_count += 1
        self._emit(
            {
                "type": "read",
                "session": state.key,
                "path": target.path,
                "lines": len(window),
                "reason_codes": [c.value for c in codes],
            }
        )
        return {
            "ok": True,
            "path": target.path,
            "start_line": start,
            "end_line": max(start - 1, end),
            "total_lines": total,
            "content": text,
            "meta": {
                "stabilization": self.meta(
                    state, reason_codes=codes, warnings=warnings, next_calls=next_calls
                )
            },
        }

    def _blocked(self, state: SessionState, blocked: Blocked) -> dict[str, Any]:
        state.metrics.blocked_count += 1
        self._emit(
            {
                "type": "read_blocked",
                "session": state.key,
                "reason_codes": [blocked.reason.value],
            }
        )
        return {
            "ok": False,
            "error": {
                "code": blocked.error.value,
                "message": blocked.message,
                "hint": blocked.hint,
            },
            "meta": {
                "stabilization": self.meta(
                    state,
                    reason_codes=[blocked.reason],
                    warnings=[blocked.message],
                    next_calls=blocked.next_calls,
                )
            },
        }

    def _emit(self, event: dict[str, Any]) -> None:
        if self.analytics is not None:
            self.analytics.enqueue(event)
