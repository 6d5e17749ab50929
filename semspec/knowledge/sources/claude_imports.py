"""``@path`` imports of ``CLAUDE.md``, followed inside the repository only.

Claude Code reads ``@path/to/file`` in a ``CLAUDE.md`` as "include that file here" (relative to
the importing file, up to five hops, never inside code). A rule file is hostile input: an
import may name ``/etc/passwd``, ``~/.ssh/id_rsa``, ``../../outside``, a symlink out of the
repository, itself, or a chain that never ends. So: absolute, home and out-of-repo paths are
refused (and named), links are never followed (``rule_reader``), a file already imported is not
read again (loops end), and depth, count and total size are bounded. A token that names no file
is prose (``@pytest.fixture``), not an import, and is left alone as Claude Code leaves it.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from semspec.knowledge.sources.rule_reader import MAX_RULE_BYTES, RuleProblem, RuleReader

MAX_IMPORT_DEPTH = 5
"""Hops from the ``CLAUDE.md`` (Claude Code's own limit)."""
MAX_IMPORTS = 20
"""Files one ``CLAUDE.md`` may pull in."""
MAX_TOTAL_BYTES = 2 * MAX_RULE_BYTES
"""Bytes of a ``CLAUDE.md`` and all its imports together."""

_TOKEN = re.compile(r"(?<![\w@`])@([^\s`'\"<>()\[\]]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SPAN = re.compile(r"`[^`]*`")


@dataclass
class Expanded:
    """The text with its imports appended, the files read, and the imports refused."""

    text: str
    imports: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """``(token, why)`` of each import not followed because it leads out or is too much."""
    digest_parts: list[bytes] = field(default_factory=list)


def import_tokens(text: str) -> list[str]:
    """The ``@path`` tokens of ``text`` outside code blocks and code spans, in order."""
    found: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for match in _TOKEN.finditer(_SPAN.sub("", line)):
            token = match.group(1).rstrip(".,;:!?")
            if token:
                found.append(token)
    return list(dict.fromkeys(found))


def _target(importer: str, token: str) -> str:
    """The repo-relative path ``token`` names from ``importer``; ``RuleProblem`` when it is
    absolute, in a home folder or leads out of the repository."""
    if token.startswith("~"):
        raise RuleProblem("a home-folder path: only files inside the repository are imported")
    if token.startswith("/"):
        raise RuleProblem("an absolute path: only files inside the repository are imported")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(importer), token))
    if joined == ".." or joined.startswith("../"):
        raise RuleProblem("it leads out of the repository")
    return joined


def expand_imports(reader: RuleReader, path: str, text: str, data: bytes) -> Expanded:
    """``text`` (the ``CLAUDE.md`` at ``path``) with each file it imports, directly or through
    other imports, appended under a heading naming it; breadth first, each file once."""
    out = Expanded(text, digest_parts=[path.encode(), data])
    known = set(reader.paths())
    seen = {path}
    total = len(data)
    queue: list[tuple[str, str, int]] = [(path, text, 0)]
    pieces: list[str] = []
    while queue:
        importer, body, depth = queue.pop(0)
        for token in import_tokens(body):
            try:
                target = _target(importer, token)
            except RuleProblem as problem:
                out.refused.append((token, str(problem)))
                continue
            if target in seen:
                continue  # a loop, or a file imported twice
            if target not in known:
                continue  # prose such as @decorator, or a file git does not track
            if depth + 1 > MAX_IMPORT_DEPTH:
                out.refused.append((token, f"more than {MAX_IMPORT_DEPTH} imports deep"))
                continue
            if len(out.imports) >= MAX_IMPORTS:
                out.refused.append((token, f"more than {MAX_IMPORTS} imports"))
                continue
            try:
                raw = reader.read(target, min(MAX_RULE_BYTES, MAX_TOTAL_BYTES - total))
            except RuleProblem as problem:
                out.refused.append((token, str(problem)))
                continue
            seen.add(target)
            total += len(raw)
            imported = raw.decode("utf-8", "replace")
            out.imports.append(target)
            out.digest_parts += [target.encode(), raw]
            pieces.append(f"\n\n## Imported from {target}\n\n{imported.strip()}\n")
            queue.append((target, imported, depth + 1))
    out.text = text.rstrip() + "\n" + "".join(pieces)
    return out
