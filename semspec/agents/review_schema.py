"""The reviewer's answer schema and the parser that turns model text into a validated verdict.

``ReviewAnswer`` is the one schema of a reviewer's output: the LLM reviewer parses model replies
into ``VerdictModel`` (its stricter form) and the scripted provider reads scripts into its own
strict-keyed form (``semspec.agents.scripted``); both become the protocol's ``ReviewVerdict``.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from semspec.agents.evidence import NEEDED_EVIDENCE_TYPES_MAX, EvidenceType
from semspec.agents.protocol import Finding, NotedPattern, ReviewVerdict
from semspec.vocabulary.review import Severity, Verdict

_FENCE = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.S)


class VerdictFormatError(ValueError):
    """The model's reply is not a verdict; the message says what to fix."""


# Comments, not docstrings, on these models: a docstring would show in the JSON schema of the
# prompt (``SCHEMA_TEXT``).
class _Model(BaseModel):
    # Extra keys are ignored: models add commentary fields, and rejecting them only costs retries.
    model_config = ConfigDict(extra="ignore", frozen=True)


class FindingModel(_Model):
    message: str = Field(min_length=1)
    severity: Severity = "error"
    file: str | None = None
    line: int | None = Field(default=None, ge=1)
    # The SOP or rule (a rule file's path) the finding enforces, and its section's heading.
    sop_id: str | None = None
    criterion: str | None = None
    section: str | None = None


class PatternModel(_Model):
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    applies_to: str = "*"


class ReviewAnswer(_Model):
    # The fields of every reviewer's answer, whoever plays the role.
    verdict: Verdict
    summary: str = ""
    findings: tuple[FindingModel, ...] = Field(default_factory=tuple)
    noted_patterns: tuple[PatternModel, ...] = Field(default_factory=tuple)
    needed_evidence: tuple[str, ...] = Field(default_factory=tuple)

    def to_verdict(
        self, *, reviewer: str, tokens_used: int, reason: str | None = None
    ) -> ReviewVerdict:
        """The protocol's ``ReviewVerdict`` for this validated answer."""
        return ReviewVerdict(
            verdict=self.verdict,
            summary=self.summary,
            findings=[Finding(**f.model_dump()) for f in self.findings],
            noted_patterns=[NotedPattern(**p.model_dump()) for p in self.noted_patterns],
            needed_evidence=[str(e) for e in self.needed_evidence],
            reviewer=reviewer,
            tokens_used=tokens_used,
            reason=reason,
        )


class VerdictModel(ReviewAnswer):
    # A model's answer: evidence only from the allowlist, and a verdict its fields support.
    needed_evidence: tuple[EvidenceType, ...] = Field(
        default_factory=tuple, max_length=NEEDED_EVIDENCE_TYPES_MAX
    )

    @model_validator(mode="after")
    def _consistent(self) -> VerdictModel:
        if self.verdict == "need_more_info" and not self.needed_evidence:
            raise ValueError("need_more_info must list needed_evidence (1 or 2 allowed types)")
        if self.verdict == "request_changes" and not self.findings:
            raise ValueError("request_changes must list at least one finding")
        return self


SCHEMA_TEXT = json.dumps(VerdictModel.model_json_schema(), indent=1)


def parse_verdict(text: str) -> VerdictModel:
    """The verdict in ``text`` (bare JSON or a fenced block), or ``VerdictFormatError``."""
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    if fenced:
        stripped = fenced.group(1)
    elif not stripped.startswith("{") and "{" in stripped:
        stripped = stripped[stripped.index("{") : stripped.rindex("}") + 1]
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        raise VerdictFormatError(f"reply is not JSON ({exc.msg} at char {exc.pos})") from exc
    try:
        return VerdictModel.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'verdict'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise VerdictFormatError(f"reply does not match the verdict schema: {problems}") from exc
