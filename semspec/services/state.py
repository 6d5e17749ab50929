"""What ``semspec up`` started, recorded in ``.semspec/run/services.json``."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

STATE_FILE = "services.json"


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
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / STATE_FILE
    tmp = path.with_suffix(".tmp")
    body = {"services": {name: asdict(rec) for name, rec in sorted(records.items())}}
    tmp.write_text(json.dumps(body, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
