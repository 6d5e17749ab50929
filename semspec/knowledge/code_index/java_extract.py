"""Facts of a Java file: classes/interfaces/enums/records, methods, imports and boundaries."""

from __future__ import annotations

import tree_sitter_java
from tree_sitter import Language, Node

from semspec.knowledge.code_index.facts import Boundary, Import, Symbol, names_config_file
from semspec.knowledge.code_index.ts_base import (
    TreeSitterExtractor,
    end_line,
    first_string_argument,
    line,
    make_boundary,
    make_symbol,
    text,
)

TYPES = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)
METHODS = frozenset({"method_declaration", "constructor_declaration"})
ROUTE_ANNOTATIONS = {
    "GetMapping": "GET",
    "PostMapping": "POST",
    "PutMapping": "PUT",
    "PatchMapping": "PATCH",
    "DeleteMapping": "DELETE",
    "RequestMapping": "ANY",
    "Path": "ANY",
}
FILE_CALLS = frozenset({"Paths.get", "Path.of", "File", "FileInputStream", "FileReader"})


class JavaExtractor(TreeSitterExtractor):
    """Java through ``tree-sitter-java``."""

    language_name = "java"

    def __init__(self) -> None:
        super().__init__(Language(tree_sitter_java.language()))

    def symbol(self, node: Node, parent: str | None) -> Symbol | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type in TYPES:
            return make_symbol(name, node, "class", parent)
        if node.type in METHODS and parent is not None:
            return make_symbol(name, node, "method", parent)
        return None

    def imports(self, node: Node) -> list[Import]:
        if node.type != "import_declaration":
            return []
        target = next((c for c in node.named_children if "identifier" in c.type), None)
        if target is None:
            return []
        if any(c.type == "asterisk" for c in node.named_children):
            return [Import(text(target), ("*",), line(node), end_line(node))]
        scope = target.child_by_field_name("scope")
        names = (text(target.child_by_field_name("name")),) if scope is not None else ()
        module = text(scope) if scope is not None else text(target)
        return [Import(module, names, line(node), end_line(node))]

    def callee(self, node: Node) -> str | None:
        if node.type != "method_invocation":
            return None
        receiver = node.child_by_field_name("object")
        name = text(node.child_by_field_name("name"))
        if receiver is None:
            return name
        return f"{text(receiver) if receiver.type in ('this', 'identifier') else '?'}.{name}"

    def boundary(self, node: Node, parent: str | None) -> Boundary | None:
        if node.type == "method_declaration":
            name = text(node.child_by_field_name("name"))
            modifiers = next((c for c in node.named_children if c.type == "modifiers"), None)
            if name == "main" and "static" in text(modifiers).split():
                return make_boundary("cli_entry", f"main {parent or ''}".strip(), node)
            return None
        if node.type in ("annotation", "marker_annotation"):
            verb = ROUTE_ANNOTATIONS.get(text(node.child_by_field_name("name")))
            first = first_string_argument(node)
            if verb and first is not None:
                return make_boundary("http_route", f"{verb} {first}", node)
            return None
        if node.type in ("method_invocation", "object_creation_expression"):
            return self._call_boundary(node)
        return None

    def _call_boundary(self, node: Node) -> Boundary | None:
        first = first_string_argument(node)
        if first is None:
            return None
        if node.type == "object_creation_expression":
            called = text(node.child_by_field_name("type"))
        else:
            obj = node.child_by_field_name("object")
            name = text(node.child_by_field_name("name"))
            called = f"{text(obj)}.{name}" if obj is not None else name
        if called == "System.getenv":
            return make_boundary("env_var", first, node)
        if called in FILE_CALLS and names_config_file(first):
            return make_boundary("config_file", first, node)
        return None
