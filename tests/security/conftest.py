"""Another local user, for the attacks of ``tests/security/``.

The attacker is the ``nobody`` account, reached with ``runuser`` (so the suite runs as root, as
CI does). It gets only what any local user has: the system ``python3`` with its standard library,
a copy of the ``temporal`` CLI in a folder anyone may read, and the loopback ports. It never gets
this checkout or its virtual environment (both may sit under folders only root can enter).
On a machine where it cannot be arranged (not root, no ``runuser``) the tests skip, except under
CI, where a skip would hide a hole: there they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from semspec.services.specs import binary

ATTACKER = "nobody"
SYSTEM_PYTHON = "/usr/bin/python3"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"


@dataclass(frozen=True)
class ForeignUser:
    """Runs commands as another local user, from a folder that user owns."""

    home: Path
    temporal_cli: Path

    def run(self, argv: list[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """``argv`` as the other user, with a bare environment; never raises on failure."""
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "LANG": "C.UTF-8"}
        return subprocess.run(
            [RUNUSER, "-u", ATTACKER, "--", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=self.home,
            check=False,
        )

    def python(
        self, code: str, *args: str, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        """Run ``code`` with the system Python (standard library only) as the other user."""
        return self.run([SYSTEM_PYTHON, "-I", "-c", code, *args], timeout=timeout)

    def temporal(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """The ``temporal`` CLI as the other user (it talks to any Temporal on loopback)."""
        return self.run([str(self.temporal_cli), *args], timeout=timeout)

    def can_read(self, path: Path) -> bool:
        """Whether the other user can open ``path`` for reading (or list it, for a folder)."""
        op = "os.listdir" if path.is_dir() else "open"
        done = self.python(f"import os, sys\n{op}(sys.argv[1])", str(path))
        return done.returncode == 0


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to act as another user"
    if not Path(RUNUSER).exists():
        return "runuser is not installed"
    if not Path(SYSTEM_PYTHON).exists():
        return f"{SYSTEM_PYTHON} is missing"
    return None


def world_readable_dir(prefix: str) -> Path:
    """A fresh folder anyone may enter and read (its parent, /tmp, is world-traversable)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def foreign_user() -> Iterator[ForeignUser]:
    """Another local user with the system Python and the ``temporal`` CLI."""
    why = _unavailable()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the security tests must run under CI: {why}")
        pytest.skip(why)
    home = world_readable_dir("semspec-attacker-")
    shutil.chown(home, user=ATTACKER)
    cli = home / "temporal"
    shutil.copy2(binary("temporal"), cli)
    cli.chmod(0o755)
    try:
        yield ForeignUser(home, cli)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temporary folder other users can reach, for repositories whose run folder's own
    permissions are what is tested (pytest's ``tmp_path`` sits under a folder only root enters)."""
    path = world_readable_dir("semspec-shared-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
