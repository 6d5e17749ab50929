"""The trace compactor: a token ledger of the conversation, pointer swaps, and what they saved."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from semspec.agents.compaction.pointers import PointerStore
from semspec.agents.compaction.policy import BudgetDecision, ContextBudgetPolicy, DecisionKind
from semspec.model.providers.types import ChatMessage
from semspec.model.tokens import MESSAGE_OVERHEAD, count_tokens, exceeds_tokens


@dataclass(frozen=True)
class Compaction:
    """One payload replaced by a pointer."""

    pointer_id: str
    source: str
    tokens_before: int
    tokens_after: int
    at_gate: bool
    """True when the output was pointerized on arrival, False when compacted later for budget."""

    @property
    def tokens_saved(self) -> int:
        return max(0, self.tokens_before - self.tokens_after)


@dataclass
class TraceCompactor:
    """Keeps a conversation under the policy by swapping old tool outputs for pointers."""

    policy: ContextBudgetPolicy
    pointers: PointerStore = field(default_factory=PointerStore)
    compactions: list[Compaction] = field(default_factory=list)
    decisions: list[BudgetDecision] = field(default_factory=list)
    # Token counts by message identity; messages are immutable, so a count never goes stale.
    _ledger: dict[int, tuple[ChatMessage, int]] = field(default_factory=dict)

    @property
    def tokens_saved(self) -> int:
        """Tokens kept out of the context by all compactions so far."""
        return sum(c.tokens_saved for c in self.compactions)

    def tokens(self, message: ChatMessage) -> int:
        """Tokens of ``message`` (content, tool-call arguments and a small overhead), cached."""
        entry = self._ledger.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        text = message.content + "".join(tc.name + str(tc.arguments) for tc in message.tool_calls)
        count = count_tokens(text) + MESSAGE_OVERHEAD
        self._ledger[id(message)] = (message, count)
        return count

    def admit_tool_output(
        self, call_id: str, tool: str, content: str, *, summarizable: bool = True
    ) -> ChatMessage:
        """The tool message to append: the output itself, or a pointer when it is too large."""
        limit = self.policy.max_tool_output_tokens
        if summarizable and exceeds_tokens(content, limit):
            pointer = self.pointers.put(content, source=tool)
            message = ChatMessage(
                role="tool", content=pointer.summary, tool_call_id=call_id, name=tool
            )
            after = self.tokens(message)
            # Counting megabytes exactly would cost more than the turn budget; bytes/4 is the
            # usual estimate and never below the gate limit that was just exceeded.
            before = max(limit + 1, len(content.encode("utf-8", "surrogatepass")) // 4)
            self.compactions.append(Compaction(pointer.pointer_id, tool, before, after, True))
            return message
        return ChatMessage(
            role="tool", content=content, tool_call_id=call_id, name=tool, compactable=summarizable
        )

    def prepare(self, messages: list[ChatMessage]) -> BudgetDecision:
        """Decide on ``messages`` before a call, pointerizing old outputs in place if needed.

        System, user and assistant messages are never touched, so the system prompt, the task and
        SOP requirements stay intact; only compactable tool outputs, oldest first, are swapped.
        """
        decision = self._decide(messages)
        if decision.kind == "needs_summary":
            total = decision.total_tokens
            for index, message in enumerate(messages):
                if total <= self.policy.target_tokens:
                    break
                if not self._can_compact(message):
                    continue
                before = self.tokens(message)
                pointer = self.pointers.put(message.content, source=message.name or "tool")
                swapped = replace(message, content=pointer.summary, compactable=False)
                after = self.tokens(swapped)
                messages[index] = swapped
                total -= before - after
                self.compactions.append(
                    Compaction(pointer.pointer_id, message.name or "tool", before, after, False)
                )
            decision = self._decide(messages)
            if decision.kind == "needs_summary":
                # Compacted what was allowed; within the hard budget is good enough.
                kind: DecisionKind = (
                    "ok" if decision.total_tokens <= decision.budget_tokens else "reject"
                )
                decision = replace(decision, kind=kind)
        self.decisions.append(decision)
        return decision

    def _can_compact(self, message: ChatMessage) -> bool:
        return (
            message.role == "tool"
            and message.compactable
            and self.tokens(message) >= self.policy.min_pointer_tokens
        )

    def _decide(self, messages: list[ChatMessage]) -> BudgetDecision:
        total = compactable = count = 0
        for message in messages:
            tokens = self.tokens(message)
            total += tokens
            if self._can_compact(message):
                compactable += tokens
                count += 1
        return self.policy.decide(total, compactable, count)
