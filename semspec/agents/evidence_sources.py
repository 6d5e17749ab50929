"""Evidence sources the reviewer's enrichment step can use without the graph."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from semspec.agents.evidence import EvidenceBlock, EvidenceType
from semspec.agents.protocol import ReviewRequest
from semspec.agents.tools.files import read_regular
from semspec.agents.workspace import ToolError, Workspace
from semspec.core.secret_scan import SecretScan

MAX_FILE_CHARS = 20_000


class WorktreeEvidence:
    """Task file contents read from a worktree, plus gate logs from a directory of log files."""

    def __init__(self, worktree: str | Path, gate_log_dir: str | Path | None = None) -> None:
        self.workspace = Workspace(worktree)
        self.gate_log_dir = Path(gate_log_dir) if gate_log_dir else None

    async def fetch(
        self, request: ReviewRequest, types: Sequence[EvidenceType]
    ) -> list[EvidenceBlock]:
        """Blocks for the requested types this source knows; other types give nothing."""
        return await asyncio.to_thread(self._read, request, types)  # file reads: off the loop

    def _read(self, request: ReviewRequest, types: Sequence[EvidenceType]) -> list[EvidenceBlock]:
        blocks: list[EvidenceBlock] = []
        if EvidenceType.TASK_FILE_CONTENTS in types:
            for rel in request.task_files:
                try:
                    # Bounded, and never a link, FIFO or device the agent's code put there.
                    data = read_regular(self.workspace.resolve(rel), rel)
                except ToolError:
                    continue  # outside the worktree, missing, or not a file we may show
                text = data.decode("utf-8", "replace")[:MAX_FILE_CHARS]
                text = SecretScan.of_worker().mask(text)  # no secret to the reviewer's model
                blocks.append(EvidenceBlock(EvidenceType.TASK_FILE_CONTENTS, rel, text))
        if EvidenceType.GATE_LOGS in types and self.gate_log_dir and self.gate_log_dir.is_dir():
            for log in sorted(self.gate_log_dir.glob("*.log")):
                text = log.read_text(encoding="utf-8", errors="replace")[-MAX_FILE_CHARS:]
                blocks.append(EvidenceBlock(EvidenceType.GATE_LOGS, log.name, text))
        return blocks
