"""Facts of JavaScript and TypeScript files: functions, classes, methods, imports, boundaries."""

from __future__ import annotations

import tree_sitter_javascript
import tree_sitter_typescript
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
    signature,
    string_value,
    text,
)

FUNCTIONS = frozenset({"function_declaration", "generator_function_declaration"})
FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function"})
CLASSES = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
    }
)
METHODS = frozenset({"method_definition", "method_signature", "abstract_method_signature"})
FILE_READERS = frozenset({"readFile", "readFileSync", "open", "openSync", "createReadStream"})


def _import_names(clause: Node | None) -> tuple[str, ...]:
    if clause is None:
        return ()
    names: list[str] = []
    for child in clause.named_children:
        if child.type == "identifier":
            names.append(text(child))
        elif child.type == "namespace_import":
            names.append(f"* as {text(child.named_children[-1])}")
        elif child.type == "named_imports":
            names.extend(
                text(s.child_by_field_name("name"))
                for s in child.named_children
                if s.type == "import_specifier"
            )
    return tuple(names)


class JavaScriptExtractor(TreeSitterExtractor):
    """JavaScript, TypeScript and TSX through their tree-sitter grammars."""

    def __init__(self, language_name: str, language: Language) -> None:
        super().__init__(language)
        self.language_name = language_name

    def symbol(self, node: Node, parent: str | None) -> Symbol | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type in FUNCTIONS:
            return make_symbol(name, node, "function", None)
        if node.type in CLASSES:
            return make_symbol(name, node, "class", None)
        if node.type in METHODS and parent is not None:
            return make_symbol(name, node, "method", parent)
        value = node.child_by_field_name("value")
        is_function_value = value is not None and value.type in FUNCTION_VALUES
        if node.type == "variable_declarator" and value is not None and is_function_value:
            head = f"const {text(name)} = {signature(value)}"
            return Symbol(text(name), "function", head, line(name), end_line(value))
        return None

    def imports(self, node: Node) -> list[Import]:
        source = string_value(node.child_by_field_name("source"))
        if node.type in ("import_statement", "export_statement") and source is not None:
            clause = next((c for c in node.named_children if c.type == "import_clause"), None)
            return [Import(source, _import_names(clause), line(node), end_line(node))]
        if node.type == "call_expression" and text(node.child_by_field_name("function")) in (
            "require",
            "import",
        ):
            module = first_string_argument(node)
            if module is not None:
                return [Import(module, (), line(node), end_line(node))]
        return []

    def callee(self, node: Node) -> str | None:
        if node.type != "call_expression":
            return None
        function = node.child_by_field_name("function")
        if function is not None and function.type == "member_expression":
            receiver = function.child_by_field_name("object")
            simple = receiver is not None and receiver.type in ("this", "identifier")
            name = text(receiver) if simple else "?"
            return f"{name}.{text(function.child_by_field_name('property'))}"
        return text(function) if function is not None and function.type == "identifier" else None

    def boundary(self, node: Node, parent: str | None) -> Boundary | None:
        if node.type in ("member_expression", "subscript_expression"):
            target = node.child_by_field_name("object")
            if text(target) == "process.env":
                key = node.child_by_field_name("property") or node.child_by_field_name("index")
                name = string_value(key) if key is not None and "string" in key.type else text(key)
                return make_boundary("env_var", name, node) if name else None
            return None
        if node.type != "call_expression":
            return None
        function = node.child_by_field_name("function")
        first = first_string_argument(node)
        if function is None or first is None:
            return None
        method = text(function).rsplit(".", 1)[-1]
        is_member = function.type == "member_expression"
        if is_member and method in HTTP_METHODS | {"route", "use"} and first.startswith("/"):
            verb = method.upper() if method in HTTP_METHODS else "ANY"
            return make_boundary("http_route", f"{verb} {first}", node)
        if method == "command" and function.type == "member_expression":
            return make_boundary("cli_entry", f"command {first.split()[0] if first else ''}", node)
        if method in FILE_READERS and names_config_file(first):
            return make_boundary("config_file", first, node)
        return None


def javascript_extractor() -> JavaScriptExtractor:
    """Extractor for ``.js``/``.jsx``/``.mjs``/``.cjs`` files."""
    return JavaScriptExtractor("javascript", Language(tree_sitter_javascript.language()))


def typescript_extractor() -> JavaScriptExtractor:
    """Extractor for ``.ts`` files."""
    language = Language(tree_sitter_typescript.language_typescript())
    return JavaScriptExtractor("typescript", language)


def tsx_extractor() -> JavaScriptExtractor:
    """Extractor for ``.tsx`` files."""
    return JavaScriptExtractor("tsx", Language(tree_sitter_typescript.language_tsx()))
