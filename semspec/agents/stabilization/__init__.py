"""Read/search stabilization (seed 000): budgets, the search→ref→read gate, relevance, dedupe."""

from semspec.agents.stabilization.analytics import AnalyticsQueue, BatchWriter, JsonlSink
from semspec.agents.stabilization.gate import ReadArgs
from semspec.agents.stabilization.layer import SearchHit, Stabilizer
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.reasons import ErrorCode, ReasonCode
from semspec.agents.stabilization.session import SessionRegistry, SessionState, session_key

__all__ = [
    "AnalyticsQueue",
    "BatchWriter",
    "ErrorCode",
    "JsonlSink",
    "ReadArgs",
    "ReasonCode",
    "SearchHit",
    "SessionRegistry",
    "SessionState",
    "StabilizationPolicy",
    "Stabilizer",
    "session_key",
]
