"""Shared walk of tree-sitter syntax trees: each language supplies hooks, the walk collects facts.

The single-language grammar wheels (``tree-sitter-go`` and friends) ship their parsers
compiled in, so nothing is downloaded at run time.
"""

from __future__ import annotations

from tree_sitter import Language, Node, Parser

from semspec.knowledge.code_index.facts import (
    Boundary,
    BoundaryKind,
    Call,
    FileFacts,
    Import,
    SourceSyntaxError,
    Symbol,
    count_lines,
    resolve_calls,
)

MAX_SIGNATURE = 200
HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "all"})
STRING_PARTS = frozenset(
    {"string_fragment", "string_content", "interpreted_string_literal_content"}
)


def text(node: Node | None) -> str:
    """The source text of ``node`` (``""`` for none)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def line(node: Node) -> int:
    """1-based first line of ``node``."""
    return node.start_point.row + 1


def end_line(node: Node) -> int:
    """1-based last line of ``node``."""
    return node.end_point.row + 1


def string_value(node: Node | None) -> str | None:
    """The value of a string literal node without its quotes, or ``None`` for anything else."""
    if node is None or "string" not in node.type:
        return None
    parts = [text(c) for c in node.named_children if c.type in STRING_PARTS]
    if parts:
        return "".join(parts)
    raw = text(node)
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'`" else None


def first_argument(arguments: Node | None) -> Node | None:
    """First named child of an argument list."""
    if arguments is None:
        return None
    named = [c for c in arguments.named_children if c.type != "comment"]
    return named[0] if named else None


def first_string_argument(node: Node) -> str | None:
    """The value of the first argument of a call or annotation ``node`` when it is a string
    literal (``os.Getenv("HOME")`` gives ``HOME``), else ``None``."""
    return string_value(first_argument(node.child_by_field_name("arguments")))


def signature(node: Node, body_field: str = "body") -> str:
    """The definition's head: its text up to the body, on one line, bounded in length."""
    body = node.child_by_field_name(body_field)
    source = node.text or b""
    head = source[: body.start_byte - node.start_byte] if body is not None else source
    flat = " ".join(head.decode("utf-8", errors="replace").split())
    return flat if len(flat) <= MAX_SIGNATURE else flat[: MAX_SIGNATURE - 1] + "…"


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    if not node.has_error:
        return None
    for child in node.children:
        found = _first_error(child)
        if found is not None:
            return found
    return node


class TreeSitterExtractor:
    """Walks a tree once; subclasses recognise symbols, imports, calls and boundaries."""

    language_name = ""

    def __init__(self, language: Language) -> None:
        self._parser = Parser(language)

    # Hooks (defaults recognise nothing).
    def symbol(self, node: Node, parent: str | None) -> Symbol | None:
        """A symbol defined by ``node`` (only asked outside function bodies)."""
        return None

    def imports(self, node: Node) -> list[Import]:
        """Imports made by ``node``."""
        return []

    def callee(self, node: Node) -> str | None:
        """The simple name called by ``node`` if it is a call."""
        return None

    def boundary(self, node: Node, parent: str | None) -> Boundary | None:
        """A boundary ``node`` stands for."""
        return None

    def extract(self, path: str, source: bytes, source_hash: str) -> FileFacts:
        """Parse ``source`` and collect its facts; a tree with errors raises a syntax error."""
        tree = self._parser.parse(source)
        error = _first_error(tree.root_node)
        if error is not None:
            snippet = text(error)[:40]
            what = f"missing {error.type}" if error.is_missing else f"unexpected {snippet!r}"
            raise SourceSyntaxError(path, line(error), what)
        facts = FileFacts(path, self.language_name, source_hash, count_lines(source))
        raw: list[Call] = []
        self._scan(tree.root_node, None, None, facts, raw)
        facts.calls = resolve_calls(facts.symbols, raw)
        facts.boundaries = sorted(set(facts.boundaries), key=lambda b: (b.line, b.kind, b.detail))
        facts.imports.sort(key=lambda i: (i.line, i.module))
        return facts

    def _scan(
        self, node: Node, parent: str | None, owner: str | None, facts: FileFacts, raw: list[Call]
    ) -> None:
        for child in node.named_children:
            found = self.symbol(child, parent) if owner is None else None
            boundary = self.boundary(child, parent)
            if boundary is not None:
                facts.boundaries.append(boundary)
            if found is not None:
                facts.symbols.append(found)
                if found.kind == "class":
                    self._scan(child, found.qualname, None, facts, raw)
                else:
                    self._scan(child, parent, found.qualname, facts, raw)
                continue
            facts.imports.extend(self.imports(child))
            called = self.callee(child)
            if called:
                raw.append(Call(owner, called, line(child)))
            self._scan(child, parent, owner, facts, raw)


def make_boundary(kind: BoundaryKind, detail: str, node: Node) -> Boundary:
    """A boundary spanning ``node``'s lines."""
    return Boundary(kind, detail, line(node), end_line(node))


def make_symbol(
    name_node: Node, node: Node, kind: str, parent: str | None, body_field: str = "body"
) -> Symbol:
    """A symbol starting on its name's line (past annotations) and ending with ``node``."""
    return Symbol(
        text(name_node),
        kind,  # type: ignore[arg-type]
        signature(node, body_field),
        line(name_node),
        end_line(node),
        parent,
    )
