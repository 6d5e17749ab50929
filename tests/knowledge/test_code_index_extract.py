"""Extraction of facts from sample sources: Python, Go, JavaScript, TypeScript, Rust, Java."""

from __future__ import annotations

import pytest

from semspec.knowledge.code_index import FileFacts, SourceSyntaxError, extract_facts
from tests.support.code_samples import FIXTURES


def facts_of(name: str) -> FileFacts:
    return extract_facts(name, (FIXTURES / name).read_bytes())


def line_text(name: str, line: int) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()[line - 1]


@pytest.mark.parametrize(
    "name", ["service.py", "server.go", "app.js", "shapes.ts", "lib.rs", "Inventory.java"]
)
def test_every_symbol_starts_on_a_line_that_names_it(name: str) -> None:
    facts = facts_of(name)
    assert facts.symbols
    for symbol in facts.symbols:
        assert symbol.name in line_text(name, symbol.start_line), symbol
        assert symbol.end_line >= symbol.start_line


@pytest.mark.parametrize(
    "name", ["service.py", "server.go", "app.js", "shapes.ts", "lib.rs", "Inventory.java"]
)
def test_every_import_points_at_a_line_naming_its_module(name: str) -> None:
    facts = facts_of(name)
    assert facts.imports
    for imp in facts.imports:
        last_part = imp.module.replace("::", ".").replace("/", ".").rsplit(".", 1)[-1]
        assert last_part in line_text(name, imp.line), imp


def test_python_symbols_carry_signatures_with_annotations_and_defaults() -> None:
    symbols = {s.qualname: s for s in facts_of("service.py").symbols}
    assert symbols["Store"].kind == "class"
    assert symbols["Store.__init__"].signature == (
        "def __init__(self, root: Path, limit: int=10) -> None"
    )
    assert symbols["Store.load"].kind == "method"
    assert symbols["fetch"].signature == (
        "async def fetch(store: Store, *names: str, verbose: bool=False) -> list[str]"
    )
    assert (symbols["helper"].start_line, symbols["helper"].end_line) == (41, 42)


def test_python_imports_keep_module_and_names() -> None:
    imports = {(i.module, i.names) for i in facts_of("service.py").imports}
    assert ("pathlib", ("Path",)) in imports
    assert ("flask", ("Flask",)) in imports
    assert ("os", ()) in imports


def test_python_boundaries_cover_cli_routes_env_vars_and_config_files() -> None:
    found = {(b.kind, b.detail, b.line) for b in facts_of("service.py").boundaries}
    assert found == {
        ("env_var", "SERVICE_PORT", 13),
        ("config_file", "settings.yaml", 27),
        ("http_route", "GET,POST /items", 36),
        ("env_var", "API_TOKEN", 37),
        ("env_var", "SUFFIX", 42),
        ("cli_entry", "command serve", 46),
        ("cli_entry", "__main__", 50),
    }


def test_python_calls_within_the_file_resolve_to_their_symbols() -> None:
    calls = {(c.caller, c.callee) for c in facts_of("service.py").calls}
    assert calls == {("Store.load", "Store._read"), ("items", "helper"), ("serve", "helper")}


def test_go_extracts_types_methods_functions_and_boundaries() -> None:
    facts = facts_of("server.go")
    kinds = {(s.qualname, s.kind) for s in facts.symbols}
    assert ("Server", "class") in kinds
    assert ("Handler", "class") in kinds
    assert ("Server.Start", "method") in kinds
    assert ("main", "function") in kinds
    assert {i.module for i in facts.imports} == {"fmt", "net/http", "os"}
    boundaries = {(b.kind, b.detail) for b in facts.boundaries}
    assert boundaries == {
        ("cli_entry", "func main"),
        ("env_var", "LISTEN_ADDR"),
        ("http_route", "ANY /health"),
    }
    assert [(c.caller, c.callee) for c in facts.calls] == [("main", "newServer")]


def test_go_boundaries_point_at_their_lines() -> None:
    boundaries = facts_of("server.go").boundaries
    assert len(boundaries) == 3  # main, the env var and the route: none is left unchecked
    for boundary in boundaries:
        text = line_text("server.go", boundary.line)
        assert boundary.detail.split()[-1].removeprefix("func ") in text, boundary


def test_javascript_extracts_functions_classes_imports_and_boundaries() -> None:
    facts = facts_of("app.js")
    assert {s.qualname for s in facts.symbols} == {"loadConfig", "greet", "Router", "Router.mount"}
    assert {i.module for i in facts.imports} == {"express", "fs", "path"}
    assert {(b.kind, b.detail) for b in facts.boundaries} == {
        ("config_file", "config.json"),
        ("env_var", "APP_NAME"),
        ("http_route", "GET /greet"),
    }


def test_typescript_extracts_interfaces_classes_methods_functions_and_imports() -> None:
    facts = facts_of("shapes.ts")
    names = {s.qualname: s.kind for s in facts.symbols}
    assert names["Shape"] == "class"
    assert names["Circle.area"] == "method"
    assert names["totalArea"] == "function"
    assert {i.module for i in facts.imports} == {"./logger", "fs"}


def test_rust_extracts_structs_impl_methods_functions_uses_and_boundaries() -> None:
    facts = facts_of("lib.rs")
    names = {s.qualname: s.kind for s in facts.symbols}
    assert names == {
        "Cache": "class",
        "Cache.new": "method",
        "Cache.get": "method",
        "config_dir": "function",
        "main": "function",
    }
    assert {(i.module, i.names) for i in facts.imports} == {
        ("std::collections", ("HashMap",)),
        ("std", ("env", "fs")),
    }
    assert ("env_var", "CONFIG_DIR") in {(b.kind, b.detail) for b in facts.boundaries}
    assert [(c.caller, c.callee) for c in facts.calls] == [("main", "Cache.new")]


def test_java_extracts_classes_methods_imports_and_main() -> None:
    facts = facts_of("Inventory.java")
    names = {s.qualname: s.kind for s in facts.symbols}
    assert names["Inventory"] == "class"
    assert names["Inventory.count"] == "method"
    assert names["Inventory.main"] == "method"
    assert {(i.module, i.names) for i in facts.imports} == {
        ("java.util", ("List",)),
        ("java.util", ("Map",)),
    }
    assert {(b.kind, b.detail) for b in facts.boundaries} == {
        ("cli_entry", "main Inventory"),
        ("env_var", "REGION"),
    }


def test_a_python_syntax_error_names_the_file_and_line() -> None:
    with pytest.raises(SourceSyntaxError) as caught:
        facts_of("broken.py")
    assert caught.value.path == "broken.py"
    assert caught.value.line == 5
    assert "broken.py:5" in caught.value.message


@pytest.mark.parametrize(
    ("name", "source", "line"),
    [
        ("bad.go", b"package main\n\nfunc main() {\n\tx := \n}\n", 4),
        ("bad.ts", b"export function f(a: number {\n  return a;\n}\n", 1),
        ("bad.rs", b"fn main() {\n    let x = ;\n}\n", 2),
    ],
)
def test_a_tree_sitter_syntax_error_names_the_file_and_line(
    name: str, source: bytes, line: int
) -> None:
    with pytest.raises(SourceSyntaxError) as caught:
        extract_facts(name, source)
    assert (caught.value.path, caught.value.line) == (name, line)


def test_the_source_hash_is_the_sha256_of_the_bytes() -> None:
    import hashlib

    data = (FIXTURES / "service.py").read_bytes()
    assert facts_of("service.py").source_hash == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("name", "source", "line"),
    [
        (
            "main.go",
            'package main\n\nimport "os"\n\nfunc load() {\n\tos.ReadFile("app.yaml")\n}\n',
            6,
        ),
        (
            "Main.java",
            'class Main {\n  void load() {\n    new FileReader(Paths.get("app.yaml"));\n  }\n}\n',
            3,
        ),
        ("lib.rs", 'fn load() {\n    let _ = std::fs::read_to_string("app.yaml");\n}\n', 2),
    ],
)
def test_a_config_file_read_is_a_boundary_in_every_tree_sitter_language(
    name: str, source: str, line: int
) -> None:
    found = {(b.kind, b.detail, b.line) for b in extract_facts(name, source.encode()).boundaries}
    assert ("config_file", "app.yaml", line) in found
