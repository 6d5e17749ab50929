"""The sample sources of the code index tests (``tests/fixtures/code``), one file per language."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "code"
SOURCES = ("service.py", "server.go", "app.js", "shapes.ts", "lib.rs", "Inventory.java")
"""Every sample but ``broken.py``, which a test copies in when it wants a file that fails."""


def sample_repo(root: Path) -> Path:
    """A repository at ``root`` holding the samples under ``src/``."""
    (root / "src").mkdir(parents=True)
    for name in SOURCES:
        shutil.copy(FIXTURES / name, root / "src" / name)
    return root
