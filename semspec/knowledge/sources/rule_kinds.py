"""The rule files other tools read, one row per kind: which paths are one, what they apply to,
and their default severity (``docs/sops.md``, "Rule files from other tools").

A kind's name is what ``sources.rules`` in the config lists and what ``sources list`` shows as
a rule's origin. Adding a kind is a row here and its name in ``RuleFileKind`` of the config.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from semspec.knowledge.sources.rule_front_matter import FrontValue, flag_value, glob_list

ALL_FILES = "**"
"""The glob of a rule for the whole repository."""


@dataclass(frozen=True)
class RuleKind:
    """One kind of rule file."""

    name: str
    is_one: Callable[[str], bool]
    """Whether a repo-relative path is a file of this kind."""
    scope: Callable[[str, dict[str, FrontValue]], tuple[list[str], str]]
    """The globs a file at ``path`` with ``meta`` applies to, and why (said in the context)."""
    default_severity: str
    """Severity when the front matter gives none."""
    nested: bool = False
    """A file under a folder applies to that folder, and the nearest such file wins."""


def folder_of(path: str) -> str:
    """The folder a nested rule file sits in ('' at the root)."""
    return posixpath.dirname(path)


def _folder_scope(path: str, meta: dict[str, FrontValue]) -> tuple[list[str], str]:
    del meta
    folder = folder_of(path)
    if not folder:
        return [ALL_FILES], "the whole repository (it sits at the root)"
    return [f"{folder}/**"], f"files under {folder}/ (where it sits)"


def _cursor_scope(path: str, meta: dict[str, FrontValue]) -> tuple[list[str], str]:
    del path
    if flag_value(meta, "alwaysApply"):
        return [ALL_FILES], "every file (alwaysApply: true)"
    globs = glob_list(meta, "globs")
    if globs:
        return globs, "its globs"
    return [ALL_FILES], "every file (no globs: Cursor lets the agent decide, so it is info)"


def _copilot_scope(path: str, meta: dict[str, FrontValue]) -> tuple[list[str], str]:
    if path == ".github/copilot-instructions.md":
        return [ALL_FILES], "the whole repository"
    globs = glob_list(meta, "applyTo")
    if not globs:
        return [], "nothing (no applyTo)"
    return globs, "its applyTo"


def _named(name: str) -> Callable[[str], bool]:
    return lambda path: posixpath.basename(path) == name


def _in_folder(folder: str, suffix: str) -> Callable[[str], bool]:
    # Directly in the folder: Cursor and Copilot read no subfolders of theirs.
    return lambda path: posixpath.dirname(path) == folder and path.endswith(suffix)


def _copilot(path: str) -> bool:
    return path == ".github/copilot-instructions.md" or _in_folder(
        ".github/instructions", ".instructions.md"
    )(path)


RULE_KINDS: dict[str, RuleKind] = {
    kind.name: kind
    for kind in (
        RuleKind("agents_md", _named("AGENTS.md"), _folder_scope, "warning", nested=True),
        RuleKind("claude_md", _named("CLAUDE.md"), _folder_scope, "warning", nested=True),
        RuleKind("cursor_rules", _in_folder(".cursor/rules", ".mdc"), _cursor_scope, "warning"),
        RuleKind("copilot", _copilot, _copilot_scope, "warning"),
    )
}
"""Every kind, by the name the config and ``sources list`` use."""


def default_severity(kind: RuleKind, meta: dict[str, FrontValue]) -> str:
    """The severity of a file of ``kind`` whose front matter names none: the kind's default,
    and ``info`` for a Cursor rule Cursor gives only when its agent asks (no globs, not
    ``alwaysApply``)."""
    agent_requested = not (flag_value(meta, "alwaysApply") or glob_list(meta, "globs"))
    if kind.name == "cursor_rules" and agent_requested:
        return "info"
    return kind.default_severity


def kind_of(path: str, enabled: Iterable[str]) -> RuleKind | None:
    """The enabled kind ``path`` is a rule file of, or None."""
    for name in enabled:
        kind = RULE_KINDS.get(name)
        if kind is not None and kind.is_one(path):
            return kind
    return None


def rule_files(paths: Iterable[str], enabled: Iterable[str]) -> list[tuple[str, RuleKind]]:
    """The rule files among ``paths`` with their kinds, in path order."""
    names = list(enabled)
    found = [(p, kind_of(p, names)) for p in paths]
    return sorted((p, k) for p, k in found if k is not None)
