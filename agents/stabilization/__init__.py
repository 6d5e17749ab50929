"""Read/search stabilization (seed 000): budgets, the search→ref→read gate, relevance, dedupe."""

from agents.stabilization.analytics import AnalyticsQueue, BatchWriter, JsonlSink
from agents.stabilization.gate import ReadArgs
from agents.stabilization.layer import SearchHit, Stabilizer
from agents.stabilization.policy import StabilizationPolicy
from agents.stabilization.reasons import ErrorCode, ReasonCode
from agents.stabilization.session import SessionRegistry, SessionState, session_key

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
