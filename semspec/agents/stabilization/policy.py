"""The numbers and mode of the stabilization layer (defaults from seed 000)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GateMode = Literal["enforce", "advise", "off"]
EXCLUDED_DIRS: tuple[str, ...] = ("vendor", "node_modules", ".git", "dist")


@dataclass(frozen=True)
class StabilizationPolicy:
    """Read budget, gate and relevance settings of one session."""

    max_reads_per_session: int = 25
    max_total_read_lines: int = 2_500
    max_single_read_lines: int = 300
    max_preview_chars: int = 12_000
    soft_ratio: float = 0.8
    """Share of a budget at which the soft limit starts reducing payloads."""
    soft_read_lines: int = 100
    """Lines per read while the soft limit is active."""
    gate_mode: GateMode = "enforce"
    max_range_lines: int = 200
    """Largest precision read (path + line range) allowed without a search ref."""
    top_k: int = 10
    """Paths of the latest search that count as relevant."""
    candidate_window: int = 80
    """Lines returned for a candidate ref: from 20 lines above the hit."""
    excluded_dirs: tuple[str, ...] = EXCLUDED_DIRS
    collapse_min_run: int = 3
    """Runs of at least this many already-seen lines collapse to one marker."""
