"""Context budget policy, pointers to large tool outputs, and the trace compactor (seed 002)."""

from agents.compaction.pointers import Pointer, PointerStore
from agents.compaction.policy import BudgetDecision, ContextBudgetPolicy
from agents.compaction.trace import Compaction, TraceCompactor

__all__ = [
    "BudgetDecision",
    "Compaction",
    "ContextBudgetPolicy",
    "Pointer",
    "PointerStore",
    "TraceCompactor",
]
