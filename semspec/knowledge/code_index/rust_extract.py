"""Facts of a Rust file: functions, structs/enums/traits, impl methods, ``use`` and boundaries."""

from __future__ import annotations

import tree_sitter_rust
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
    text,
)

TYPES = frozenset({"struct_item", "enum_item", "trait_item", "union_item", "type_item"})
ENV_CALLS = frozenset({"var", "var_os"})
FILE_CALLS = frozenset({"File::open", "fs::read_to_string", "std::fs::read_to_string", "fs::read"})


def _impl_type(node: Node | None) -> str | None:
    """The type an ``impl`` block (possibly several levels up) implements methods for."""
    while node is not None:
        if node.type == "impl_item":
            return text(node.child_by_field_name("type")).split("<", 1)[0]
        if node.type in ("function_item", "source_file"):
            return None
        node = node.parent
    return None


class RustExtractor(TreeSitterExtractor):
    """Rust through ``tree-sitter-rust``."""

    language_name = "rust"

    def __init__(self) -> None:
        super().__init__(Language(tree_sitter_rust.language()))

    def symbol(self, node: Node, parent: str | None) -> Symbol | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type in TYPES:
            return make_symbol(name, node, "class", None)
        if node.type in ("function_item", "function_signature_item"):
            owner = parent or _impl_type(node.parent)
            return make_symbol(name, node, "method" if owner else "function", owner)
        return None

    def imports(self, node: Node) -> list[Import]:
        if node.type != "use_declaration":
            return []
        argument = node.child_by_field_name("argument")
        if argument is None:
            return []
        if argument.type == "scoped_use_list":
            items = argument.child_by_field_name("list")
            names = tuple(text(c) for c in items.named_children) if items is not None else ()
            module = text(argument.child_by_field_name("path"))
        elif argument.type == "scoped_identifier":
            module = text(argument.child_by_field_name("path"))
            names = (text(argument.child_by_field_name("name")),)
        else:
            module, names = text(argument), ()
        return [Import(module, names, line(node), end_line(node))]

    def callee(self, node: Node) -> str | None:
        if node.type != "call_expression":
            return None
        function = node.child_by_field_name("function")
        if function is None:
            return None
        if function.type == "field_expression":
            receiver = function.child_by_field_name("value")
            name = text(receiver) if receiver is not None and receiver.type == "self" else "?"
            return f"{name}.{text(function.child_by_field_name('field'))}"
        if function.type == "scoped_identifier":
            path = text(function.child_by_field_name("path")) or "?"
            return f"{path}.{text(function.child_by_field_name('name'))}"
        return text(function) if function.type == "identifier" else None

    def boundary(self, node: Node, parent: str | None) -> Boundary | None:
        if node.type == "function_item" and node.parent and node.parent.type == "source_file":
            name = text(node.child_by_field_name("name"))
            return make_boundary("cli_entry", "fn main", node) if name == "main" else None
        if node.type == "attribute_item":
            return self._route_attribute(node)
        if node.type != "call_expression":
            return None
        function = text(node.child_by_field_name("function"))
        first = first_string_argument(node)
        if first is None:
            return None
        if function.endswith("env::var") or function.endswith("env::var_os"):
            return make_boundary("env_var", first, node)
        if function in FILE_CALLS and names_config_file(first):
            return make_boundary("config_file", first, node)
        if function.endswith(".route") and first.startswith("/"):
            return make_boundary("http_route", f"ANY {first}", node)
        return None

    def _route_attribute(self, node: Node) -> Boundary | None:
        # ``#[get("/users")]`` (actix-web, rocket) marks the next function as a route.
        attribute = node.named_children[0] if node.named_children else None
        if attribute is None:
            return None
        verb = text(attribute.named_children[0]) if attribute.named_children else ""
        first = first_string_argument(attribute)
        if verb in HTTP_METHODS and first is not None and first.startswith("/"):
            return make_boundary("http_route", f"{verb.upper()} {first}", node)
        return None
