"""Context budget policy, pointers to large tool outputs, and the trace compactor (seed 002)."""

from semspec.agents.compaction.pointers import Pointer, PointerStore
from semspec.agents.compaction.policy import BudgetDecision, ContextBudgetPolicy
from semspec.agents.compaction.trace import Compaction, TraceCompactor

__all__ = [
    "BudgetDecision",
    "Compaction",
    "ContextBudgetPolicy",
    "Pointer",
    "PointerStore",
    "TraceCompactor",
]
