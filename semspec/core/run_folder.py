"""The run folder of a stack (``services.run_dir``, ``.semspec/run`` by default): where it is,
what ``semspec up`` recorded there in ``services.json``, and whether a recorded process still runs.

The folder holds the Temporal database, gate logs, task worktrees and the NATS credentials, so it
is the owner's only: the folder 0700, what semspec writes there 0600 (``make_private_dir``,
``write_private``); the services ``up`` starts run with umask 077 (``services.process``).

Every process of a stack reads it (the CLI, workers, the monitor, the graph opening rule), so it
sits on the ground floor; starting and stopping services stays in ``semspec.services``.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path

from semspec.core.config.models import SemspecConfig

STATE_FILE = "services.json"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def run_dir_of(config: SemspecConfig, repo: Path) -> Path:
    """Absolute run directory of the repository's embedded services."""
    path = Path(config.services.run_dir)
    return path if path.is_absolute() else repo / path


@dataclass
class ServiceRecord:
    """One started service: its PID, the argv we launched, and where it listens."""

    name: str
    pid: int
    argv: list[str]
    address: str
    ports: dict[str, int] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    log: str = ""


def load_records(run_dir: Path) -> dict[str, ServiceRecord]:
    """Records from the state file; a missing or unreadable file means none."""
    path = run_dir / STATE_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    records = {}
    for name, item in raw.get("services", {}).items():
        try:
            records[name] = ServiceRecord(**item)
        except TypeError:
            continue
    return records


def save_records(run_dir: Path, records: dict[str, ServiceRecord]) -> None:
    """Write the records atomically (temp file + rename) so a crash never leaves half a file."""
    make_private_dir(run_dir)
    body = {"services": {name: asdict(rec) for name, rec in sorted(records.items())}}
    write_private(run_dir / STATE_FILE, json.dumps(body, indent=2, sort_keys=True))


def make_private_dir(path: Path) -> bool:
    """Create ``path`` (with its parents) for its owner only; True when it existed with looser
    permissions and was tightened to 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) & 0o077 == 0:
        return False
    path.chmod(PRIVATE_DIR_MODE)
    return True


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file + rename), readable by its owner only."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        # A temp file left by an older version keeps its mode through O_CREAT.
        os.fchmod(out.fileno(), PRIVATE_FILE_MODE)
        out.write(text)
    os.replace(tmp, path)


def tighten_entries(run_dir: Path) -> None:
    """Take group and other permissions off what lies directly in ``run_dir``: what an older
    version left readable by others."""
    for entry in run_dir.iterdir():
        try:
            mode = entry.lstat().st_mode
            if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
                entry.chmod(stat.S_IMODE(mode) & ~0o077)
        except OSError:
            continue


def cmdline_of(pid: int) -> list[str] | None:
    """Command line of a live process, or None when it is gone (zombies count as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return None
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_ours(pid: int, argv: list[str]) -> bool:
    """True when ``pid`` is alive and still runs the recorded command line."""
    current = cmdline_of(pid)
    if not current or not argv:
        return False
    # Compare the tail: interpreters may rewrite argv[0] (e.g. a resolved python path).
    return current[1:] == argv[1:] and Path(current[0]).name == Path(argv[0]).name
