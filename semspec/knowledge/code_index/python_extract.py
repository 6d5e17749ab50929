"""Facts of a Python file through the standard ``ast`` module."""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from semspec.knowledge.code_index.facts import (
    Call,
    FileFacts,
    Import,
    SourceSyntaxError,
    Symbol,
    SymbolKind,
    count_lines,
    resolve_calls,
)
from semspec.knowledge.code_index.python_boundaries import python_boundaries

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
MAX_DEFAULT = 24


def _signature(node: FunctionNode | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = [ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords]
        return f"class {node.name}({', '.join(bases)})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"{prefix} {node.name}({_arguments(node.args)}){returns}"


def _short_default(value: ast.expr | None) -> ast.expr | None:
    # A long default (``typer.Option(..., help="...")``) says little about the interface and
    # costs many tokens; the evidence span still leads to it.
    if value is None or len(ast.unparse(value)) <= MAX_DEFAULT:
        return value
    return ast.Constant(value=Ellipsis)


def _arguments(args: ast.arguments) -> str:
    short = copy.copy(args)
    short.defaults = [d for d in (_short_default(d) for d in args.defaults) if d is not None]
    short.kw_defaults = [_short_default(d) for d in args.kw_defaults]
    return ast.unparse(short)


def _bodies(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a block, descending into if/try/with but not into defs."""
    for stmt in stmts:
        yield stmt
        if isinstance(stmt, ast.If | ast.For | ast.While | ast.With | ast.AsyncWith):
            yield from _bodies(stmt.body)
            yield from _bodies(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try | ast.TryStar):
            yield from _bodies(stmt.body)
            for handler in stmt.handlers:
                yield from _bodies(handler.body)
            yield from _bodies(stmt.orelse)
            yield from _bodies(stmt.finalbody)


def _symbols(stmts: list[ast.stmt], parent: str | None) -> Iterator[tuple[Symbol, ast.AST]]:
    for stmt in _bodies(stmts):
        if isinstance(stmt, ast.ClassDef):
            symbol = Symbol(stmt.name, "class", _signature(stmt), stmt.lineno, _end(stmt), parent)
            yield symbol, stmt
            yield from _symbols(stmt.body, symbol.qualname)
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            kind: SymbolKind = "method" if parent else "function"
            yield Symbol(stmt.name, kind, _signature(stmt), stmt.lineno, _end(stmt), parent), stmt


def _end(node: ast.AST) -> int:
    end: int | None = getattr(node, "end_lineno", None)
    return end if end is not None else int(getattr(node, "lineno", 1))


def _imports(tree: ast.Module) -> list[Import]:
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(Import(a.name, (), node.lineno, _end(node)) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names = tuple(a.name for a in node.names)
            found.append(Import(module, names, node.lineno, _end(node)))
    return sorted(found, key=lambda i: (i.line, i.module))


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        name = receiver.id if isinstance(receiver, ast.Name) else "?"
        return f"{name}.{node.func.attr}"
    return None


def _raw_calls(owner: str | None, node: ast.AST) -> Iterator[Call]:
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            callee = _callee(child)
            if callee:
                yield Call(owner, callee, child.lineno)


def extract_python(path: str, source: bytes, source_hash: str) -> FileFacts:
    """Symbols (with signatures), imports, same-file calls and boundaries of a Python file."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise SourceSyntaxError(path, exc.lineno or 1, exc.msg) from exc
    except ValueError as exc:  # e.g. source with NUL bytes or a bad encoding declaration
        raise SourceSyntaxError(path, 1, str(exc)) from exc
    pairs = list(_symbols(tree.body, None))
    symbols = [symbol for symbol, _ in pairs]
    raw: list[Call] = []
    for symbol, node in pairs:
        if symbol.kind != "class":
            raw.extend(_raw_calls(symbol.qualname, node))
    for stmt in tree.body:
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            raw.extend(_raw_calls(None, stmt))
    return FileFacts(
        path=path,
        language="python",
        source_hash=source_hash,
        line_count=count_lines(source),
        symbols=symbols,
        imports=_imports(tree),
        calls=resolve_calls(symbols, raw),
        boundaries=python_boundaries(tree),
    )
