"""Plain dataclasses holding what extraction found in one source file, each with its line span."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from semspec.core.errors import InputError

SymbolKind = Literal["function", "class", "method"]
BoundaryKind = Literal["cli_entry", "http_route", "env_var", "config_file"]


@dataclass(frozen=True)
class Symbol:
    """A function, class (or type) or method, with the lines of its definition."""

    name: str
    kind: SymbolKind
    signature: str
    start_line: int
    end_line: int
    parent: str | None = None

    @property
    def qualname(self) -> str:
        """``Parent.name`` for members, ``name`` otherwise."""
        return f"{self.parent}.{self.name}" if self.parent else self.name


@dataclass(frozen=True)
class Import:
    """One import statement: the module and the names taken from it."""

    module: str
    names: tuple[str, ...]
    line: int
    end_line: int


@dataclass(frozen=True)
class Call:
    """A call from one symbol (or the module body, ``caller=None``) to a symbol of the same file."""

    caller: str | None
    callee: str
    line: int


@dataclass(frozen=True)
class Boundary:
    """Where the code meets the outside: a CLI entry, HTTP route, env var or config file."""

    kind: BoundaryKind
    detail: str
    line: int
    end_line: int


@dataclass
class FileFacts:
    """Everything extracted from one file; ``path`` is repo-relative with ``/`` separators."""

    path: str
    language: str
    source_hash: str
    line_count: int = 0
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[Import] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)


class SourceSyntaxError(InputError):
    """A source file that its language's parser rejects; names the file and the line."""

    def __init__(self, path: str, line: int, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        super().__init__(
            f"{path}:{line}: syntax error: {detail}",
            hint="fix the syntax error; the other files were indexed",
        )


def normalized(facts: FileFacts) -> FileFacts:
    """``facts`` with every list in one canonical order, so equal facts compare and print equal."""
    facts.symbols.sort(key=lambda s: (s.start_line, -s.end_line, s.qualname))
    facts.imports.sort(key=lambda i: (i.line, i.module, i.names))
    facts.calls.sort(key=lambda c: (c.line, c.caller or "", c.callee))
    facts.boundaries.sort(key=lambda b: (b.line, b.kind, b.detail))
    return facts


CONFIG_SUFFIXES = (".yaml", ".yml", ".toml", ".json", ".ini")


def names_config_file(path: str) -> bool:
    """Whether a path a call opens looks like a configuration file (by its suffix), in every
    language: such a call is a ``config_file`` boundary."""
    return path.lower().endswith(CONFIG_SUFFIXES)


def count_lines(source: bytes) -> int:
    """Number of lines in ``source``, counting a last line without a newline."""
    return source.count(b"\n") + (0 if source.endswith(b"\n") or not source else 1)


SELF_NAMES = frozenset({"self", "this", "Self", "cls"})


def _resolve(callee: str, parent: str | None, qualnames: set[str], top: set[str]) -> str | None:
    receiver, _, name = callee.rpartition(".")
    own = f"{parent}.{name}" if parent else None
    if not receiver:
        # A bare name: a top-level symbol, or (Java, TypeScript) a member of the own class.
        return name if name in top else own if own in qualnames else None
    if receiver in SELF_NAMES or (parent and receiver == parent.rsplit(".", 1)[-1]):
        return own if own in qualnames else None
    # ``Store.load`` / ``Cache::new``: a member of another class of the same file.
    return callee if callee in qualnames else None


def resolve_calls(symbols: list[Symbol], raw: list[Call]) -> list[Call]:
    """Keep calls whose callee is a symbol of the file, rewritten to its qualified name.

    Raw callees are ``name`` or ``receiver.name``; calls on ``self``/``this``/``Self`` resolve
    to the caller's class, calls on any other object are left out (its type is unknown).
    Duplicates (same caller, callee, line) are dropped.
    """
    qualnames = {s.qualname for s in symbols}
    top_level = {s.name for s in symbols if s.parent is None}
    parent_of = {s.qualname: s.parent for s in symbols}
    resolved: dict[tuple[str | None, str, int], Call] = {}
    for call in raw:
        parent = parent_of.get(call.caller) if call.caller else None
        callee = _resolve(call.callee, parent, qualnames, top_level)
        if callee is not None:
            key = (call.caller, callee, call.line)
            resolved.setdefault(key, Call(call.caller, callee, call.line))
    return sorted(resolved.values(), key=lambda c: (c.line, c.caller or "", c.callee))
