"""The real CLI in a subprocess, as a user or a script runs it, for tests that need no stack."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def semspec(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m semspec ARGS`` with no SEMSPEC_* variables and a wide terminal (200
    columns), stdout and stderr captured: the exit code and the ``error:``/``hint:`` lines are
    the ones ``main()`` produces."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    return subprocess.run(
        [sys.executable, "-m", "semspec", *args],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        cwd=cwd,
        timeout=60,
        check=False,
    )
