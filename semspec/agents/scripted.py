"""The ``scripted`` provider: replays a YAML script, for the demo and for tests.

A script gives, per iteration, the developer's file edits and the reviewer's verdict::

    iterations:
      - developer:
          summary: add subtraction
          write: {calc.py: "def sub(a, b):\\n    return a - b\\n"}
          delete: [old.py]
        reviewer:
          verdict: request_changes
          findings: [{message: "criterion 2 is not met", criterion: "sub handles floats"}]
        reviewer_followup:        # used only for a second call after need_more_info
          verdict: approve

Iterations past the end repeat the last entry, so "the developer keeps doing the same thing"
is one entry.

Each scripted action (a file written or deleted, a verdict given) is one tool step for the
turn's observer, asked first whether to go on; a script that writes nothing still takes one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from semspec.agents.protocol import (
    DeveloperOutcome,
    DeveloperRequest,
    DeveloperResult,
    ReviewRequest,
    ReviewVerdict,
)
from semspec.agents.review_schema import FindingModel, PatternModel, ReviewAnswer
from semspec.agents.steps import StepObserver
from semspec.agents.turn_meter import TurnMeter
from semspec.core.errors import ScriptError
from semspec.core.yaml_files import read_yaml
from semspec.model.pricing import Price
from semspec.model.providers.types import ToolCall

FREE = Price(input_per_1m=0.0, output_per_1m=0.0)
"""A script costs nothing, so a dollar budget stops it only once spent by other turns."""


class _Strict(BaseModel):
    # Unlike a model's reply, a script is written by hand: an unknown key is a typo to report.
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedDeveloperStep(_Strict):
    summary: str = ""
    outcome: DeveloperOutcome = "submitted"
    reason: str | None = None
    write: dict[str, str] = Field(default_factory=dict)
    delete: list[str] = Field(default_factory=list)
    tokens: int = Field(default=0, ge=0)


class ScriptedFinding(FindingModel, _Strict):
    pass


class ScriptedPattern(PatternModel, _Strict):
    pass


class ScriptedReview(ReviewAnswer, _Strict):
    """The reviewer's answer schema, strict-keyed, plus what a script fixes by hand.

    ``needed_evidence`` takes any name (not only the allowlist) and a verdict need not be
    consistent, so a script can play a reviewer that misbehaves.
    """

    findings: tuple[ScriptedFinding, ...] = Field(default_factory=tuple)
    noted_patterns: tuple[ScriptedPattern, ...] = Field(default_factory=tuple)
    reason: str | None = None
    tokens: int = Field(default=0, ge=0)


class ScriptedIteration(_Strict):
    developer: ScriptedDeveloperStep = Field(default_factory=ScriptedDeveloperStep)
    reviewer: ScriptedReview | None = None
    reviewer_followup: ScriptedReview | None = None


class Script(_Strict):
    iterations: list[ScriptedIteration] = Field(min_length=1)
    reviewer_name: str = "scripted-reviewer"


def load_script(path: Path) -> Script:
    """Parse and validate a script, naming the file and field of any problem."""
    shown = str(path)
    try:
        raw = read_yaml(path).data
    except FileNotFoundError:
        raise ScriptError("file not found", path=shown, hint="check the script path") from None
    if not isinstance(raw, dict):
        raise ScriptError("top level must be a mapping with `iterations:`", path=shown)
    try:
        return Script.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ScriptError(
            first["msg"], path=shown, field=field, hint="see docs/scripted-agent.md for the format"
        ) from None


def _entry(script: Script, iteration: int) -> ScriptedIteration:
    index = min(max(iteration, 1), len(script.iterations)) - 1
    return script.iterations[index]


def _inside(root: Path, rel: str) -> Path:
    """``root/rel`` after resolving symlinks, refused if it leaves ``root`` or touches .git."""
    target = (root / rel).resolve()
    base = root.resolve()
    if target != base and base not in target.parents:
        raise ScriptError(f"path {rel!r} leaves the worktree", path=str(root), field="write")
    if ".git" in target.relative_to(base).parts:
        raise ScriptError(f"path {rel!r} is inside .git", path=str(root), field="write")
    return target


@dataclass
class ScriptedDeveloper:
    """Applies the script's edits for the request's iteration to the worktree."""

    script: Script

    async def develop(
        self, request: DeveloperRequest, observer: StepObserver | None = None
    ) -> DeveloperResult:
        step = _entry(self.script, request.iteration).developer
        root = Path(request.worktree)
        meter = TurnMeter.for_turn("developer", observer, "scripted", FREE, request)
        actions = [
            *(ToolCall(rel, "write_file", {"path": rel}) for rel in sorted(step.write)),
            *(ToolCall(rel, "delete", {"path": rel}) for rel in sorted(step.delete)),
        ] or [ToolCall("", "submit", {"summary": step.summary})]
        for action in actions:
            if stop := meter.stop():
                return meter.stopped_development(stop, step.tokens)
            if action.name == "write_file":
                _write(root, action.id, step.write[action.id])
            elif action.name == "delete":
                _inside(root, action.id).unlink(missing_ok=True)
            meter.tool_step(action, "ok", error=False, duration_ms=0.0)
        return DeveloperResult(
            outcome=step.outcome,
            summary=step.summary,
            tokens_used=step.tokens,
            reason=step.reason,
            usage=meter.usage(),
        )

    async def aclose(self) -> None:
        """Nothing to release: a script holds no connection."""


@dataclass
class ScriptedReviewer:
    """Returns the script's verdict for the request's iteration."""

    script: Script
    followup: bool = False

    async def review(
        self, request: ReviewRequest, observer: StepObserver | None = None
    ) -> ReviewVerdict:
        entry = _entry(self.script, request.iteration)
        review = entry.reviewer_followup if self.followup and entry.reviewer_followup else None
        review = review or entry.reviewer or _last_review(self.script, request.iteration)
        meter = TurnMeter.for_turn("reviewer", observer, "scripted", FREE, request)
        if stop := meter.stop():
            return meter.stopped_review(stop, self.script.reviewer_name, review.tokens)
        verdict = ToolCall("", "verdict", {"verdict": review.verdict})
        meter.tool_step(verdict, review.summary, error=False, duration_ms=0.0)
        answer = review.to_verdict(
            reviewer=self.script.reviewer_name, tokens_used=review.tokens, reason=review.reason
        )
        return replace(answer, usage=meter.usage())

    async def aclose(self) -> None:
        """Nothing to release: a script holds no connection."""


def _write(root: Path, rel: str, text: str) -> None:
    target = _inside(root, rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.semspec-tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def _last_review(script: Script, iteration: int) -> ScriptedReview:
    upto = script.iterations[: min(max(iteration, 1), len(script.iterations))]
    for entry in reversed(upto):
        if entry.reviewer is not None:
            return entry.reviewer
    raise ScriptError(
        f"no reviewer verdict scripted up to iteration {iteration}",
        path="<script>",
        field=f"iterations[{iteration - 1}].reviewer",
    )
