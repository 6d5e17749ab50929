"""Terms of what semspec itself learns: decisions (``semspec.decision.*``), conventions
(``semspec.convention.*``), tasks and plans (``semspec.task.*``, ``semspec.plan.*``).

Decisions point at their plan with W3C PROV ``wasDerivedFrom``. These IRIs are an API.
"""

from __future__ import annotations

from typing import Final

from semspec.vocabulary.namespaces import PROV, SEMSPEC

DECISION: Final = SEMSPEC["class.Decision"]
"""Class of a decision recorded by an approved task."""
CONVENTION: Final = SEMSPEC["class.Convention"]
"""Class of a convention learned from an approved review."""
TASK: Final = SEMSPEC["class.Task"]
"""Class of a task."""
PLAN: Final = SEMSPEC["class.Plan"]
"""Class of a plan (a group of tasks)."""

TASK_ID: Final = SEMSPEC["semspec.task.id"]
"""Id of a task, on the task entity."""
PLAN_ID: Final = SEMSPEC["semspec.plan.id"]
"""Id of a plan, on the plan entity."""

DECISION_TITLE: Final = SEMSPEC["semspec.decision.title"]
"""One-line title of a decision."""
DECISION_TEXT: Final = SEMSPEC["semspec.decision.text"]
"""What was decided and why."""
DECISION_TASK: Final = SEMSPEC["semspec.decision.task"]
"""Decision → the task that made it."""
DECISION_FILE: Final = SEMSPEC["semspec.decision.file"]
"""A repo-relative path the decision is about (one per triple)."""

CONVENTION_NAME: Final = SEMSPEC["semspec.convention.name"]
"""Short name of a convention, unique within its project."""
CONVENTION_PROJECT: Final = SEMSPEC["semspec.convention.project"]
"""Project the convention was learned in."""
CONVENTION_APPLIES_TO: Final = SEMSPEC["semspec.convention.applies_to"]
"""One glob per triple, matched like an SOP's ``applies_to``."""
CONVENTION_DESCRIPTION: Final = SEMSPEC["semspec.convention.description"]
"""What the convention asks for."""
CONVENTION_SOURCE_REVIEW: Final = SEMSPEC["semspec.convention.source_review"]
"""Id of the review that approved the pattern."""
CONVENTION_FILE: Final = SEMSPEC["semspec.convention.file"]
"""A repo-relative path of the approved change the convention was seen in (one per triple)."""
CONVENTION_RECORDED_AT: Final = SEMSPEC["semspec.convention.recorded_at"]
"""When the approval was recorded (ISO 8601, UTC)."""

WAS_DERIVED_FROM: Final = PROV.wasDerivedFrom
"""W3C PROV: decision → the plan it was derived from."""

PERFORMANCE: Final = SEMSPEC["class.PerformanceRecord"]
"""Class of one task's outcome for the model that played a role in it."""
PERF_MODEL: Final = SEMSPEC["semspec.performance.model"]
"""Model id of a performance record."""
PERF_ROLE: Final = SEMSPEC["semspec.performance.role"]
"""Role (developer or reviewer) of a performance record."""
PERF_TASK: Final = SEMSPEC["semspec.performance.task"]
"""Task id of a performance record."""
PERF_APPROVED: Final = SEMSPEC["semspec.performance.approved"]
"""Whether the task was approved (xsd:boolean)."""
PERF_ITERATIONS: Final = SEMSPEC["semspec.performance.iterations"]
"""Developer iterations the task took."""
PERF_TOKENS: Final = SEMSPEC["semspec.performance.tokens"]
"""Tokens the task's agent calls used."""
PERF_LATENCY: Final = SEMSPEC["semspec.performance.latency_s"]
"""Seconds from the task's start to its end."""
