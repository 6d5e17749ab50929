"""The rule files as they are on one commit: what a task is reviewed against.

A task's change may edit ``AGENTS.md``; the reviewer must still judge it by the rules the task
started from, so rule files are read from the task's base commit through git (never from its
worktree, never from the graph synced from a checkout that may have moved on). Parsing is the
same as ``sources sync``'s; the result is cached per commit and kinds, since every review of a
task reads the same commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pygit2

from semspec.core.errors import GitError
from semspec.knowledge.sources.rule_document import read_rule
from semspec.knowledge.sources.rule_kinds import rule_files
from semspec.knowledge.sources.rule_reader import CommitReader, RuleProblem
from semspec.knowledge.sources.sop_document import SopDocument


@dataclass(frozen=True)
class PinnedRules:
    """The rules of one commit and the rule files on it that could not be read."""

    commit: str
    docs: tuple[SopDocument, ...]
    problems: tuple[tuple[str, str], ...] = ()


def rules_on_commit(repo: Path, commit: str, kinds: Sequence[str]) -> PinnedRules:
    """The rule files of ``kinds`` on ``commit`` of ``repo``, parsed (cached per commit)."""
    return _rules_on_commit(str(repo), commit, tuple(kinds))


@lru_cache(maxsize=32)
def _rules_on_commit(repo: str, commit: str, kinds: tuple[str, ...]) -> PinnedRules:
    try:
        reader = CommitReader(Path(repo), commit)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise GitError(
            f"cannot read the rule files of commit {commit[:12]}: {exc}",
            repo=repo,
            hint="the task's base commit must exist in the repository",
        ) from exc
    docs: list[SopDocument] = []
    problems: list[tuple[str, str]] = []
    for path, kind in rule_files(reader.paths(), kinds):
        try:
            parsed = read_rule(reader, path, kind)
        except RuleProblem as problem:
            problems.append((path, str(problem)))
            continue
        if parsed.doc is not None:
            docs.append(parsed.doc)
    return PinnedRules(reader.commit_id, tuple(docs), tuple(problems))
