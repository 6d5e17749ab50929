"""Where a gate's tool writes a report (``parsers.Format.report``) and where it is kept.

The tool writes into a fresh folder beside the gate's log, outside the worktree (so the report
is never part of the change, and a gate cannot pass one off as a file of the repository); a
fenced gate gets that folder bound writable (``Fence.writable``). After the gate ended, the
report is read with the bounds of ``junit.read_report_file``, kept beside the log as
``<gate>.<file name>`` and the folder removed, whatever the gate left in it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from semspec.workflow.gates.junit import Report, read_report_file


def report_folder(log_dir: Path) -> Path:
    """A new, empty folder under ``log_dir`` for one gate run's report (blocking)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".report-", dir=log_dir))


def keep_report(report: Report, folder: Path, log_path: Path) -> str:
    """Keep the report the run wrote in ``folder`` beside ``log_path`` and remove ``folder``;
    the kept file's path, or "" when there was no readable report (blocking)."""
    try:
        data = read_report_file(folder / report.file_name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if data is None:
        return ""
    kept = log_path.with_name(f"{log_path.stem}.{report.file_name}")
    fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return str(kept)
