"""Which tracked files an SOP's or a convention's ``applies_to`` globs match, fast enough for a
page on a large repository.

``glob_matches`` (``semspec.vocabulary.applies_to``) decides every match; it costs tens of
microseconds a path, so checking every glob against every file of a 20,000-file repository took
seconds. Two cheap tests it implies come first: an anchored glob only matches paths starting
with its literal prefix (a range of the sorted paths), and any glob only matches paths holding
the literal end of its last segment (the last segment must match one of the path's names,
which then ends with that text). Each distinct glob is matched once, and the results are kept
while the git index is unchanged.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from semspec.vocabulary.applies_to import anchored, glob_matches, literal_prefix
from semspec.workflow.git.repository import open_repository

_WILDCARDS = "*?]"
"""Characters after which a glob's text is no longer matched literally (``]`` ends a set)."""


@dataclass
class TrackedFiles:
    """The paths of a git index, sorted, and the matches of each glob asked about so far."""

    paths: list[str]
    _hits: dict[str, list[str]] = field(default_factory=dict)

    def matching(self, globs: Sequence[str]) -> list[str]:
        """The paths any of ``globs`` matches, sorted."""
        for glob in globs:
            if glob not in self._hits:
                self._hits[glob] = [p for p in self._candidates(glob) if glob_matches(glob, p)]
        if len(globs) == 1:  # already sorted: candidates keep the paths' order
            return list(self._hits[globs[0]])
        return sorted({path for glob in globs for path in self._hits[glob]})

    def _candidates(self, glob: str) -> Sequence[str]:
        paths: Sequence[str] = self.paths
        prefix = literal_prefix(glob)
        if prefix and anchored(glob):
            start = bisect.bisect_left(self.paths, prefix)
            end = bisect.bisect_left(self.paths, prefix + "\U0010ffff")
            paths = self.paths[start:end]
        tail = literal_tail(glob)
        return [p for p in paths if tail in p] if tail else paths


def literal_tail(glob: str) -> str:
    """The end of ``glob``'s last segment after its last wildcard: text every name the segment
    matches ends with ('' when it ends in a wildcard or holds an escape)."""
    last = glob.rstrip("/").rpartition("/")[2]
    if "\\" in last:
        return ""
    cut = max(last.rfind(c) for c in _WILDCARDS)
    return last[cut + 1 :]


def tracked_files(repo: Path) -> TrackedFiles:
    """The repository's tracked paths (its git index), read again only when the index changed."""
    index = Path(open_repository(repo).path) / "index"
    try:
        stat = index.stat()
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    except OSError:
        stamp = (0, 0, 0)
    return _tracked(os.fspath(repo), stamp)


@lru_cache(maxsize=4)
def _tracked(repo: str, stamp: tuple[int, int, int]) -> TrackedFiles:
    del stamp  # part of the cache key only: a new index is a new entry
    return TrackedFiles(sorted(entry.path for entry in open_repository(Path(repo)).index))
