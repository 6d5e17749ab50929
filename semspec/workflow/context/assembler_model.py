"""Input and output of the reviewer's context assembler."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from semspec.knowledge.sources.sop_document import SopDocument


@dataclass(frozen=True)
class AssemblyRequest:
    """What the reviewer will look at and the window it has.

    ``file_summaries`` (repo-relative path → summary text) may be given by the caller; when it
    is None the assembler reads the code index's summaries of the task files.
    """

    task_files: tuple[str, ...]
    plan_id: str | None = None
    task_id: str | None = None
    diff: str = ""
    window_tokens: int = 32_000
    system_prompt_tokens: int = 2_000
    working_memory_tokens: int = 6_000
    output_tokens: int = 1_000
    safety_margin: float = 0.15
    file_summaries: dict[str, str] | None = None
    pinned_rules: tuple[SopDocument, ...] | None = None
    """The rule files of the task's base commit (``knowledge.sources.pinned``); None takes
    rule files from the graph (``review context --file`` without a task)."""
    rules_commit: str | None = None
    """The commit ``pinned_rules`` were read from, named in the notes."""


@dataclass
class Section:
    """One part of the assembled context and what the budget did to it.

    ``share`` is this section's fraction of the context budget; ``items`` are the labels
    included, ``trimmed`` those included in part, ``dropped`` those left out, ``reason`` why,
    ``cuts`` one line per cut naming what was left out of which item and why, and
    ``item_tokens`` the tokens each included item took of the budget.
    """

    name: str
    tokens: int = 0
    share: float = 0.0
    items: list[str] = field(default_factory=list)
    trimmed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    reason: str = ""
    cuts: list[str] = field(default_factory=list)
    item_tokens: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleReport:
    """How much of one matching SOP or rule the reviewer was given."""

    rule_id: str
    origin: str
    """``sop`` or the rule-file kind."""
    path: str
    severity: str
    given: str
    """``full``, ``cut`` (part of it: summary or sections left out) or ``left_out``."""
    sections_given: int
    sections_total: int


@dataclass
class AssembledContext:
    """The context text for the reviewer, section by section, with the budget it was cut to."""

    sections: list[Section]
    text: str
    budget_tokens: int
    used_tokens: int
    notes: list[str] = field(default_factory=list)
    rules: list[RuleReport] = field(default_factory=list)
    """Every SOP and rule that applies to the task files, and how much of it was given."""
    rules_commit: str | None = None
    """The base commit rule files were read from; None when they came from the graph."""

    def as_dict(self) -> dict[str, object]:
        """Plain data for ``--json``."""
        return asdict(self)
