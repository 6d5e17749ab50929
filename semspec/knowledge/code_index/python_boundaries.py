"""Boundaries of a Python module: ``__main__`` guards, CLI commands, routes, env vars, configs."""

from __future__ import annotations

import ast

from semspec.knowledge.code_index.facts import Boundary, names_config_file

CLI_DECORATORS = frozenset({"command", "group", "callback"})
ROUTE_DECORATORS = frozenset(
    {"route", "get", "post", "put", "patch", "delete", "head", "options", "websocket", "api_route"}
)
# Callables whose first literal argument names a file being opened (or about to be).
OPENERS = frozenset({"open", "Path", "PurePath"})
ENV_GETTERS = frozenset({"getenv", "get", "setdefault", "pop"})


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _dotted(node: ast.AST) -> str:
    """``os.environ.get`` for an attribute chain of names, ``""`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _boundary(kind: str, detail: str, node: ast.AST) -> Boundary:
    line = getattr(node, "lineno", 1)
    end = getattr(node, "end_lineno", None) or line
    return Boundary(kind, detail, line, end)  # type: ignore[arg-type]


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.comparators) == 1):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        _string(s) == "__main__" for s in sides
    )


def _decorator_boundaries(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Boundary]:
    found: list[Boundary] = []
    for deco in func.decorator_list:
        call = deco if isinstance(deco, ast.Call) else None
        target = call.func if call else deco
        if not isinstance(target, ast.Attribute):
            continue
        first = _string(call.args[0]) if call and call.args else None
        if target.attr in ROUTE_DECORATORS and first is not None and first.startswith("/"):
            methods = _route_methods(call, target.attr) if call else "ANY"
            found.append(_boundary("http_route", f"{methods} {first}", func))
        elif target.attr in CLI_DECORATORS:
            name = first or func.name.replace("_", "-")
            found.append(_boundary("cli_entry", f"{target.attr} {name}", func))
    return found


def _route_methods(call: ast.Call, attr: str) -> str:
    if attr not in ("route", "api_route"):
        return attr.upper()
    for keyword in call.keywords:
        if keyword.arg == "methods" and isinstance(keyword.value, ast.List | ast.Tuple):
            names = [_string(e) for e in keyword.value.elts]
            return ",".join(n.upper() for n in names if n)
    return "ANY"


def _call_boundary(node: ast.Call) -> Boundary | None:
    name = _dotted(node.func)
    first = _string(node.args[0]) if node.args else None
    last = name.rsplit(".", 1)[-1]
    if first is None:
        return _boundary("cli_entry", "argparse", node) if last == "ArgumentParser" else None
    if name in ("os.getenv", "getenv") or (
        last in ENV_GETTERS and name.rsplit(".", 1)[0] in ("os.environ", "environ")
    ):
        return _boundary("env_var", first, node)
    if last in OPENERS and names_config_file(first):
        return _boundary("config_file", first, node)
    if last == "add_parser":
        return _boundary("cli_entry", f"subcommand {first}", node)
    return None


def python_boundaries(tree: ast.Module) -> list[Boundary]:
    """Every boundary in the module, in source order."""
    found: list[Boundary] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_guard(node):
            found.append(_boundary("cli_entry", "__main__", node))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.extend(_decorator_boundaries(node))
        elif isinstance(node, ast.Call):
            boundary = _call_boundary(node)
            if boundary is not None:
                found.append(boundary)
        elif (
            isinstance(node, ast.Subscript)
            and _dotted(node.value) in ("os.environ", "environ")
            and _string(node.slice) is not None
        ):
            found.append(_boundary("env_var", str(_string(node.slice)), node))
    return sorted(set(found), key=lambda b: (b.line, b.kind, b.detail))
