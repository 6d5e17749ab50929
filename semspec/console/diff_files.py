"""A unified patch cut into one part per file, each line tagged with what it does, so the task
page can show each file on its own, collapsible, one line per line (issue 30 item 6).

Pure: it reads only the patch text ``task_diff`` produced (already masked and cut).
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPEN_UP_TO_LINES = 400
"""A file's part is shown open when it has at most this many lines; a longer one starts folded
so that the files after it stay in reach."""


@dataclass(frozen=True)
class DiffLine:
    """One patch line and its kind: ``add``, ``del``, ``hunk``, ``meta`` (the file's header
    lines) or ``ctx``."""

    kind: str
    text: str


@dataclass
class FileDiff:
    """One file's part of a patch."""

    path: str
    lines: list[DiffLine] = field(default_factory=list)
    insertions: int = 0
    deletions: int = 0

    @property
    def open(self) -> bool:
        """Whether the page shows it unfolded."""
        return len(self.lines) <= OPEN_UP_TO_LINES


def split_patch(patch: str) -> list[FileDiff]:
    """The files of ``patch`` in order; text before the first ``diff --git`` (none in what
    git writes) goes into a part named ``(patch)``."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    in_header = False
    for text in patch.splitlines():
        if text.startswith("diff --git "):
            current = FileDiff(_path_of(text))
            files.append(current)
            in_header = True
            current.lines.append(DiffLine("meta", text))
            continue
        if current is None:
            current = FileDiff("(patch)")
            files.append(current)
        if text.startswith("@@"):
            in_header = False
            current.lines.append(DiffLine("hunk", text))
        elif in_header:
            if text.startswith("+++ b/"):
                current.path = text[len("+++ b/") :]
            current.lines.append(DiffLine("meta", text))
        elif text.startswith("+"):
            current.insertions += 1
            current.lines.append(DiffLine("add", text))
        elif text.startswith("-"):
            current.deletions += 1
            current.lines.append(DiffLine("del", text))
        else:
            current.lines.append(DiffLine("ctx", text))
    return files


def _path_of(header: str) -> str:
    """The new path of ``diff --git a/X b/Y`` (``Y``); the whole rest when it does not split."""
    rest = header[len("diff --git ") :]
    at = rest.rfind(" b/")
    return rest[at + 3 :] if rest.startswith("a/") and at > 0 else rest
