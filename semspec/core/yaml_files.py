"""The one way semspec reads YAML: data, the node tree for line numbers, and layered merges.

Every YAML file semspec reads (config, model registry, gate presets, task and plan files,
scripted-agent scripts, SOP front matter) is parsed here, so a syntax error always names the
file, line and column, and a field that later fails validation can be traced to its line with
``YamlDocument.line_of``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from semspec.core.errors import ConfigError

MAX_DEPTH = 64
"""Deepest nesting of lists and mappings a YAML text may have. Nothing semspec reads goes past
a handful of levels; PyYAML builds nodes recursively, so a deeper text (``[[[[...`` a few
hundred deep) would end in a RecursionError instead of a clear error."""

Location = tuple[str | int, ...]
"""Where a value sits: mapping keys and list indexes from the top, e.g. ``("gates", 0, "name")``."""


@dataclass(frozen=True)
class YamlDocument:
    """One parsed YAML text: its data and the node tree the data was built from."""

    path: str
    data: Any
    root: yaml.Node | None
    first_line: int = 1
    """Line of the file the text starts on (front matter starts below its ``---``)."""

    def line_of(self, loc: Location) -> int | None:
        """Line of the key (or list item) at ``loc``, or of its nearest parent that exists.

        A key's own line, not its value's: a block value starts a line below the name the user
        has to fix.
        """
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line
        for key in loc:
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if k.value == str(key)), None)
                if pair is None:
                    break
                line = pair[0].start_mark.line
                node = pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    break
                node = node.value[key]
                line = node.start_mark.line
            else:
                break
        return line + self.first_line


class _TooDeep(Exception):
    """A text nested deeper than ``MAX_DEPTH``, found at ``mark``."""

    def __init__(self, mark: yaml.Mark | None) -> None:
        super().__init__()
        self.mark = mark


class _DepthBoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing nesting deeper than ``MAX_DEPTH`` while it composes."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)  # type: ignore[no-untyped-call]
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def parse_yaml(text: str, path: str, *, first_line: int = 1) -> YamlDocument:
    """Parse ``text`` read from ``path``; invalid YAML is a ``ConfigError`` at its line and column.

    ``first_line`` is the line of the file where ``text`` starts, for texts cut out of a file.
    """
    loader = _DepthBoundedLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except _TooDeep as exc:
        line = exc.mark.line + first_line if exc.mark is not None else None
        raise ConfigError(
            f"nested deeper than {MAX_DEPTH} levels of lists and mappings",
            path=path,
            line=line,
            hint="flatten the file; no semspec file needs more than a few levels",
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is None:
            raise ConfigError(f"not valid YAML: {problem}", path=path) from None
        raise ConfigError(
            f"not valid YAML at column {mark.column + 1}: {problem}",
            path=path,
            line=mark.line + first_line,
            hint="fix the YAML syntax at that line and column",
        ) from None
    finally:
        loader.dispose()
    return YamlDocument(path, data, root, first_line)


def read_yaml(path: Path) -> YamlDocument:
    """Read and parse the file at ``path``; ``OSError`` (a missing file) passes through."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", path=shown) from None
    return parse_yaml(text, shown)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` laid on top: nested mappings merge key by key, the rest replace."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = deep_merge(below, value)
        else:
            merged[key] = value
    return merged
