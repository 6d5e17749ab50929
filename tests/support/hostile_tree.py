"""A worktree holding what agent-written code could leave in it, and random hostile paths.

Used by the attack tests of the agent tools and of ``semspec mcp`` (``tests/security/``).
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from hypothesis import strategies as st

from tests.support.repos import make_repo

SECRET = "RUN-FOLDER-SECRET-7f3a"
"""Planted in the run folder, the git config and outside the worktree; no tool may show it."""
SPARSE_BYTES = 3 << 30
LONG_NAME = "a" * 300  # longer than a file name may be
# Backtracks (overlapping branches under a star) some milliseconds per line of SLOW_TEXT, with
# ``regex`` as with ``re``, each line far below the search's per-line timeout: minutes in all.
SLOW_QUERY = r"(\w|\w)*[=:]"
SLOW_TEXT = "abcdefghijklmn\n" * 30_000


def plant(repo: Path, outside: Path) -> None:
    """Fill ``repo`` with a FIFO, a socket, a device (as root), links out, a link loop, a 3 GiB
    sparse file, a run folder and a git config holding ``SECRET``; ``outside`` gets a file too.
    """
    run = repo / ".semspec" / "run"
    run.mkdir(parents=True)
    (run / "temporal.db").write_text(f"{SECRET}\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[semspec]\n\ttoken = {SECRET}\n")
    outside.mkdir()
    (outside / "passwd").write_text(f"{SECRET}\n")
    os.mkfifo(repo / "pipe.py")
    os.symlink(outside, repo / "out")
    os.symlink(outside / "passwd", repo / "passwd.py")
    os.symlink("calc.py", repo / "alias.py")
    os.symlink("loop.py", repo / "loop.py")
    os.symlink("/dev/zero", repo / "zero.py")
    with open(repo / "sparse.py", "wb") as sparse:
        sparse.truncate(SPARSE_BYTES)
    # A socket's path must be short (108 bytes): bind it through the folder's descriptor.
    folder = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(f"/proc/self/fd/{folder}/sock.py")
    finally:
        os.close(folder)
    if os.geteuid() == 0:  # only root may make a device node
        os.mknod(repo / "null.py", 0o600 | stat.S_IFCHR, os.makedev(1, 3))


def hostile_repo(base: Path) -> Path:
    """A git repository at ``base/repo`` with ``calc.py``, planted (``base/outside`` beside it)."""
    repo = base / "repo"
    make_repo(repo, {"README.md": "# sample\n", "calc.py": "def add(a, b):\n    return a + b\n"})
    plant(repo, base / "outside")
    return repo


def snapshot(*folders: Path) -> dict[str, bytes]:
    """Every file under ``folders`` with its content (special files by name), but git's objects:
    libgit2 stores the blobs of a patch it applies, which changes nothing."""
    seen: dict[str, bytes] = {}
    for folder in folders:
        for dirpath, dirnames, names in os.walk(folder):
            if Path(dirpath).name == ".git":
                dirnames.remove("objects")
            for name in names:
                path = Path(dirpath) / name
                mode = os.lstat(path).st_mode
                seen[str(path)] = path.read_bytes() if stat.S_ISREG(mode) else b"<special>"
    return seen


PATHS = st.one_of(
    st.sampled_from(
        [
            ".semspec/run/temporal.db",
            ".semspec",
            ".git/config",
            ".git",
            "./.git/../.semspec/run",
            "out/passwd",
            "out/../../outside/passwd",
            "../outside/passwd",
            "/etc/passwd",
            "passwd.py",
            "pipe.py",
            "sock.py",
            "null.py",
            "zero.py",
            "loop.py",
            "loop.py/x",
            "alias.py",
            "sparse.py",
            "calc.py/x.py",
            LONG_NAME,
            "/".join([LONG_NAME] * 20),
            "a\x00b",
            "\ud800.py",
            "ünï/cödé.py",
            "",
            " ",
            ".",
            "..",
        ]
    ),
    st.text(max_size=40),
    st.builds(lambda up, tail: "../" * up + tail, st.integers(0, 6), st.text(max_size=10)),
)
"""Paths a hostile or confused model may send."""
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), PATHS, st.lists(PATHS, max_size=3)
)
"""Argument values of any JSON type."""
