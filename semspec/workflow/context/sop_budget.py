"""Which parts of the matching SOPs fit the reviewer's context: severity first.

Kept first, cut last:

1. the heading and requirements of every error SOP: never cut (the assembler refuses with
   ``ContextBudgetError`` when they alone do not fit);
2. the applies-to and summary lines of error SOPs (the assembler puts decisions next);
3. the extra sections (chunks) of error SOPs;
4. warning SOPs: whole parent (heading, summary, requirements), then their sections;
5. info SOPs: whole parent, then their sections.

So a tight window cuts info SOPs first, then warning SOPs, then the sections of error SOPs.
Within one severity sections are taken round-robin by position, so every SOP gets its first
section before any gets a third, and an SOP stops at its first section that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from semspec.model.tokens import TokenCounter
from semspec.workflow.context.assembler_sops import MatchedSop

LESSER = ("warning", "info")
"""Severities whose SOPs may be cut whole, in the order they keep their place."""


@dataclass
class SopSelection:
    """What of each matching SOP is in the context, and a line per cut saying why."""

    sops: list[MatchedSop]
    forms: dict[str, str] = field(default_factory=dict)
    """SOP id → ``parent`` or ``core`` (heading and requirements); absent means cut."""
    cuts: list[str] = field(default_factory=list)
    tokens: int = 0

    def of(self, severity: str) -> list[MatchedSop]:
        """The SOPs of ``severity``, in context order."""
        return [s for s in self.sops if s.severity == severity]

    def core_tokens(self, count: TokenCounter) -> int:
        """Tokens the error SOPs' headings and requirements need (what is never cut)."""
        return sum(count(s.core) + 1 for s in self.of("error"))

    def take_error_cores(self, count: TokenCounter) -> int:
        """Put every error SOP in as heading and requirements; returns tokens used."""
        used = self.core_tokens(count)
        self.forms.update({s.sop_id: "core" for s in self.of("error")})
        self.tokens += used
        return used

    def take_error_summaries(self, left: int, count: TokenCounter) -> int:
        """Widen error SOPs to their whole parent text while it fits; returns tokens used."""
        used = 0
        for sop in self.of("error"):
            extra = count(sop.parent) - count(sop.core)
            if used + extra > left:
                self.cuts.append(f"{sop.sop_id}: summary left out (no room beside requirements)")
                continue
            used += extra
            self.forms[sop.sop_id] = "parent"
        self.tokens += used
        return used

    def take_the_rest(self, left: int, count: TokenCounter) -> int:
        """Error sections, then warning SOPs, then info SOPs, while they fit; returns tokens."""
        used = _fill(self.of("error"), left, count)
        for severity in LESSER:
            for sop in self.of(severity):
                cost = count(sop.parent) + 1
                if used + cost > left:
                    self.cuts.append(
                        f"{sop.sop_id}: {severity} SOP left out "
                        f"({_before(severity)} come first in a tight window)"
                    )
                    continue
                used += cost
                self.forms[sop.sop_id] = "parent"
            kept = [s for s in self.of(severity) if s.sop_id in self.forms]
            used += _fill(kept, left - used, count)
        for sop in self.sops:
            if sop.sop_id in self.forms and sop.taken < len(sop.chunks):
                left_out = len(sop.chunks) - sop.taken
                self.cuts.append(
                    f"{sop.sop_id}: {left_out} of {len(sop.chunks)} section(s) left out "
                    f"({sop.severity}; {_before(sop.severity)} come first)"
                )
        self.tokens += used
        return used

    def block(self, sop: MatchedSop) -> str | None:
        """The SOP's text in the context, or None when it was cut."""
        form = self.forms.get(sop.sop_id)
        if form is None:
            return None
        head = sop.parent if form == "parent" else sop.core
        return "\n\n".join([head, *sop.chunks[: sop.taken]])


def _before(severity: str) -> str:
    if severity == "error":
        return "error requirements and decisions"
    if severity == "warning":
        return "error SOPs"
    return "error and warning SOPs"


def _fill(sops: list[MatchedSop], allowance: int, count: TokenCounter) -> int:
    spent = 0
    stopped: set[str] = set()
    depth = max((len(s.chunks) for s in sops), default=0)
    for position in range(depth):
        for sop in sops:
            if sop.sop_id in stopped or sop.taken != position or position >= len(sop.chunks):
                continue
            cost = count(sop.chunks[position]) + 1
            if spent + cost > allowance:
                stopped.add(sop.sop_id)
                continue
            spent += cost
            sop.taken += 1
    return spent
