"""The words of a review: the reviewer's verdicts and the severities of findings and SOPs.

Defined once here, on the floor every part above can import: the reviewer schema and the
protocol (``semspec.agents``), the task loop (``semspec.workflow``) and the loop's events.
"""

# No ``from __future__ import annotations``: the protocol's dataclasses, which cross the Temporal
# boundary, use these Literals and the workflow sandbox must be able to resolve them.
from typing import Final, Literal, get_args

Verdict = Literal["approve", "request_changes", "reject", "need_more_info"]
"""What a reviewer can answer; ``need_more_info`` asks for evidence once before deciding."""

Severity = Literal["error", "warning", "info"]
"""How much a finding or an SOP matters, most important first."""

SEVERITIES: Final[tuple[Severity, ...]] = get_args(Severity)
