"""Reason codes of the stabilization layer: the enum decides, the JSON registry only describes."""

from __future__ import annotations

import json
from enum import StrEnum
from functools import lru_cache
from importlib import resources
from typing import Any


class ReasonCode(StrEnum):
    """Why a read or search response was limited, blocked or annotated (seed 000, v1 core + ext)."""

    SEARCH_FIRST_REQUIRED = "SEARCH_FIRST_REQUIRED"
    SEARCH_REF_REQUIRED = "SEARCH_REF_REQUIRED"
    CANDIDATE_REF_REQUIRED = "CANDIDATE_REF_REQUIRED"
    BUDGET_SOFT_LIMIT = "BUDGET_SOFT_LIMIT"
    BUDGET_HARD_LIMIT = "BUDGET_HARD_LIMIT"
    LOW_RELEVANCE_OUTSIDE_TOPK = "LOW_RELEVANCE_OUTSIDE_TOPK"
    PREVIEW_DEGRADED = "PREVIEW_DEGRADED"
    # Extensions (allowed by the seed through the registry).
    PRECISION_RANGE_TOO_LARGE = "PRECISION_RANGE_TOO_LARGE"
    EXCLUDED_PATH = "EXCLUDED_PATH"
    DUPLICATE_READ_COLLAPSED = "DUPLICATE_READ_COLLAPSED"


class ErrorCode(StrEnum):
    """The ``error.code`` of a blocked response."""

    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    SEARCH_FIRST_REQUIRED = "SEARCH_FIRST_REQUIRED"
    SEARCH_REF_REQUIRED = "SEARCH_REF_REQUIRED"
    CANDIDATE_REF_REQUIRED = "CANDIDATE_REF_REQUIRED"
    RANGE_TOO_LARGE = "RANGE_TOO_LARGE"


@lru_cache(maxsize=1)
def reason_registry() -> dict[str, dict[str, Any]]:
    """Descriptions and severities of each reason code from ``reason_registry.json``."""
    text = (
        resources.files("semspec.agents.stabilization").joinpath("reason_registry.json").read_text()
    )
    data: dict[str, dict[str, Any]] = json.loads(text)
    return data


def describe(code: ReasonCode) -> str:
    """The human description of ``code`` (falls back to the code itself)."""
    return str(reason_registry().get(code.value, {}).get("description", code.value))
