"""Facts of a Go file: functions, types, methods, imports and ``main``/env/HTTP boundaries."""

from __future__ import annotations

import tree_sitter_go
from tree_sitter import Language, Node

from semspec.knowledge.code_index.facts import Boundary, Import, Symbol, names_config_file
from semspec.knowledge.code_index.ts_base import (
    HTTP_METHODS,
    TreeSitterExtractor,
    end_line,
    first_string_argument,
    line,
    make_boundary,
    make_symbol,
    string_value,
    text,
)

ENV_CALLS = frozenset({"os.Getenv", "os.LookupEnv"})
ROUTE_CALLS = frozenset({"HandleFunc", "Handle"})
FILE_CALLS = frozenset({"os.Open", "os.ReadFile", "ioutil.ReadFile", "os.OpenFile"})


def _receiver_type(node: Node) -> str | None:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    for param in receiver.named_children:
        kind = param.child_by_field_name("type")
        if kind is not None:
            # ``*Server`` and ``List[T]`` are both methods of the named type.
            return text(kind).lstrip("*").split("[", 1)[0]
    return None


def _type_head(node: Node) -> str:
    """``type Server struct`` rather than the struct's whole field list."""
    name = text(node.child_by_field_name("name"))
    kind = node.child_by_field_name("type")
    shape = {"struct_type": "struct", "interface_type": "interface"}.get(
        kind.type if kind is not None else "", " ".join(text(kind).split())[:80]
    )
    return f"type {name} {shape}".strip()


class GoExtractor(TreeSitterExtractor):
    """Go through ``tree-sitter-go``."""

    language_name = "go"

    def __init__(self) -> None:
        super().__init__(Language(tree_sitter_go.language()))

    def symbol(self, node: Node, parent: str | None) -> Symbol | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type == "function_declaration":
            return make_symbol(name, node, "function", None)
        if node.type == "method_declaration":
            return make_symbol(name, node, "method", _receiver_type(node))
        if node.type in ("type_spec", "type_alias"):
            return Symbol(text(name), "class", _type_head(node), line(name), end_line(node))
        return None

    def imports(self, node: Node) -> list[Import]:
        if node.type != "import_spec":
            return []
        module = string_value(node.child_by_field_name("path")) or ""
        alias = node.child_by_field_name("name")
        names = (text(alias),) if alias is not None else ()
        return [Import(module, names, line(node), end_line(node))]

    def callee(self, node: Node) -> str | None:
        if node.type != "call_expression":
            return None
        function = node.child_by_field_name("function")
        if function is not None and function.type == "selector_expression":
            # A Go receiver has no fixed name, so only package-less bare calls resolve.
            return f"?.{text(function.child_by_field_name('field'))}"
        return text(function) if function is not None and function.type == "identifier" else None

    def boundary(self, node: Node, parent: str | None) -> Boundary | None:
        if node.type == "function_declaration":
            name = text(node.child_by_field_name("name"))
            return make_boundary("cli_entry", "func main", node) if name == "main" else None
        if node.type != "call_expression":
            return None
        function = text(node.child_by_field_name("function"))
        first = first_string_argument(node)
        if first is None:
            return None
        method = function.rsplit(".", 1)[-1]
        if function in ENV_CALLS:
            return make_boundary("env_var", first, node)
        if first.startswith("/") and (method in ROUTE_CALLS or method.lower() in HTTP_METHODS):
            verb = "ANY" if method in ROUTE_CALLS else method.upper()
            return make_boundary("http_route", f"{verb} {first}", node)
        if function in FILE_CALLS and names_config_file(first):
            return make_boundary("config_file", first, node)
        return None
