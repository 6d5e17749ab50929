"""The reviewer agent's system prompt and the rendering of a review request."""

from __future__ import annotations

from semspec.agents.evidence import EvidenceType
from semspec.agents.protocol import ReviewRequest
from semspec.agents.review_schema import SCHEMA_TEXT

_ALLOWED = ", ".join(t.value for t in EvidenceType)

SYSTEM_PROMPT = f"""\
You are the reviewer agent of semspec. Judge the diff against the task's acceptance criteria,
the gate results and the project context (SOPs, decisions, conventions).

Answer with ONE JSON object and nothing else, matching this JSON schema:
{SCHEMA_TEXT}

Rules:
- verdict is approve, request_changes, reject or need_more_info.
- request_changes needs at least one finding; give file and line, and when the finding enforces
  an SOP or rule of the project context, its id as sop_id (the name after "### SOP" or
  "### Rule") and the heading of the section it comes from as section.
- severity "error" is a violation of a requirement, "warning" a risk, "info" a remark.
- noted_patterns lists conventions in the diff worth keeping (name, description, applies_to glob).
- need_more_info only when you cannot decide from what you have: list 1 or 2 needed_evidence
  types from: {_ALLOWED}; say in summary what you need to know.
"""

FORMAT_CORRECTION = (
    "Your reply could not be used: {error}. Reply again with only the JSON object that matches "
    "the schema (no prose, no code fence)."
)


def render_review(request: ReviewRequest, evidence_text: str = "") -> str:
    """The user message of a review: task, criteria, gates, flags, context, evidence and diff."""
    parts = [f"# Review of task {request.task_id}: {request.title}", "", request.description]
    if request.criteria:
        parts += ["", "## Acceptance criteria", *(f"- {c}" for c in request.criteria)]
    if request.task_files:
        parts += ["", "## Task files", *(f"- {f}" for f in request.task_files)]
    if request.gate_summary.strip():
        parts += ["", "## Gate results", request.gate_summary.strip()]
    if request.flags:
        parts += ["", "## Risk-monitor flags (consider these)", *(f"- {f}" for f in request.flags)]
    if request.context.strip():
        parts += ["", "## Project context", request.context.strip()]
    if evidence_text:
        parts += ["", "## Additional evidence you asked for", evidence_text]
    parts += ["", f"## Diff (iteration {request.iteration})", "```diff", request.diff, "```"]
    return "\n".join(parts)
