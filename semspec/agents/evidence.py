"""Bounded enrichment for ``need_more_info``: the evidence allowlist, the source seam, fingerprints.

Per seed 001 the orchestrator, not the model, fetches evidence: at most two types from a fixed
allowlist, one enrichment step, and a second reviewer call only if the evidence fingerprint
(canonical JSON, sorted, hashed) changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from semspec.agents.protocol import ReviewRequest

FINGERPRINT_SCHEMA_VERSION = 1
NEEDED_EVIDENCE_TYPES_MAX = 2
MAX_ENRICHMENT_STEPS = 1
EVIDENCE_BLOCK_CHARS = 4_000


class EvidenceType(StrEnum):
    """What the reviewer may ask for (the canonical allowlist)."""

    TASK_FILE_CONTENTS = "task_file_contents"
    GATE_LOGS = "gate_logs"
    SOP_CHUNKS = "sop_chunks"
    PRIOR_DECISIONS = "prior_decisions"
    RELATED_SYMBOLS = "related_symbols"


@dataclass(frozen=True)
class EvidenceBlock:
    """One piece of fetched evidence."""

    type: EvidenceType
    source_id: str
    """Stable id of where it came from (a path, a gate name, an SOP IRI)."""
    content: str

    def excerpt_hash(self) -> str:
        """Hash of the content, the only part of the block that enters the fingerprint."""
        return hashlib.sha256(self.content.encode("utf-8")).hexdigest()[:16]


class EvidenceSource(Protocol):
    """Fetches evidence of the requested types for a review; supplied by the caller."""

    async def fetch(
        self, request: ReviewRequest, types: Sequence[EvidenceType]
    ) -> list[EvidenceBlock]: ...


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def evidence_fingerprint(request: ReviewRequest, evidence: Sequence[EvidenceBlock]) -> str:
    """Hash of everything the reviewer sees, as canonical JSON with sorted keys and arrays."""
    payload = {
        "schema_version": FINGERPRINT_SCHEMA_VERSION,
        "task_id": request.task_id,
        "diff": _digest(request.diff),
        "gate_summary": _digest(request.gate_summary),
        "context": _digest(request.context),
        "flags": sorted(request.flags),
        "evidence": sorted([b.type.value, b.source_id, b.excerpt_hash()] for b in evidence),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return _digest(canonical)[:32]


def render_evidence(evidence: Sequence[EvidenceBlock]) -> str:
    """Evidence blocks as prompt text, each cut to a fixed size."""
    parts = []
    for block in sorted(evidence, key=lambda b: (b.type.value, b.source_id)):
        content = block.content
        if len(content) > EVIDENCE_BLOCK_CHARS:
            content = content[:EVIDENCE_BLOCK_CHARS] + "\n… [cut]"
        parts.append(f"### {block.type.value}: {block.source_id}\n{content}")
    return "\n\n".join(parts)
