"""Each gate output reader on real tool output (issue 29, item 3).

The ruff, mypy, pytest, cargo clippy and cargo test samples in ``tests/data/gate_output/`` were
printed by the tools on this machine (ruff 0.17, mypy 2.4 and pytest on the ``six`` library,
cargo 1.9x on a two-test crate), with the folder they ran in replaced by ``/repo``. eslint,
golangci-lint and go are not installed here: their samples below are written from the formats
their documentation gives (eslint's "json" formatter, golangci-lint's JSON printer, ``go help
test2json``).
"""

from __future__ import annotations

import json
from pathlib import Path

from semspec.workflow.gates.parsers import FORMATS, Paths
from semspec.workflow.gates.types import GateItem

SAMPLES = Path(__file__).parents[1] / "data" / "gate_output"
REPO = Paths(root=Path("/repo"), cwd=Path("/repo"))


def read(fmt: str, text: str, paths: Paths = REPO) -> list[GateItem] | None:
    return FORMATS[fmt].read(text, paths)


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def test_ruff_json_gives_file_line_rule_and_message_relative_to_the_worktree() -> None:
    items = read("ruff-json", sample("ruff.json"))
    assert items is not None and len(items) == 4
    assert [(i.path, i.line, i.rule) for i in items] == [
        ("six.py", 49, "F821"),
        ("six.py", 50, "F821"),
        ("six.py", 52, "F821"),
        ("six.py", 254, "E501"),
    ]
    assert all(item.message and not item.test for item in items)


def test_ruff_usage_error_is_not_read_as_no_findings() -> None:
    assert read("ruff-json", "error: unexpected argument '--bogus' found\n") is None


def test_mypy_text_lines_give_each_error_with_its_code_and_skip_notes() -> None:
    items = read("mypy", sample("mypy.txt"))
    assert items is not None
    assert [(i.line, i.rule) for i in items] == [
        (77, "assignment"),
        (141, "var-annotated"),
        (547, "misc"),
        (555, "misc"),
        (979, "var-annotated"),
        (993, "attr-defined"),
    ]
    assert items[-1] == GateItem(
        "six.py", 993, "attr-defined", '"MetaPathFinderProtocol" has no attribute "name"'
    )


def test_mypy_json_output_reads_as_the_text_does() -> None:
    items = read("mypy", sample("mypy.jsonl"))
    assert items is not None
    assert [(i.path, i.line, i.rule) for i in items][:2] == [
        ("six.py", 77, "assignment"),
        ("six.py", 141, "var-annotated"),
    ]


def test_mypy_crash_without_summary_is_unreadable() -> None:
    assert read("mypy", "mypy: can't read file 'nope.py': No such file or directory\n") is None


def test_pytest_summary_gives_each_failing_test_by_id() -> None:
    items = read("pytest", sample("pytest.txt"))
    assert items == [
        GateItem(
            "test_six.py",
            0,
            "failed",
            "ModuleNotFoundError: No modul...",
            test="test_six.py::test_move_items[dbm_ndbm]",
        )
    ]


def test_pytest_run_with_no_failures_reads_as_no_items_and_a_crash_as_unreadable() -> None:
    assert read("pytest", "........ [100%]\n8 passed in 0.12s\n") == []
    assert read("pytest", "ImportError while loading conftest '/repo/conftest.py'.\n") is None


def test_pytest_collection_errors_are_items_too() -> None:
    text = (
        "==== short test summary info ====\n"
        "ERROR tests/test_a.py - SyntaxError: invalid syntax\n"
        "!!!! Interrupted: 1 error during collection !!!!\n"
    )
    items = read("pytest", text)
    assert items == [
        GateItem("tests/test_a.py", 0, "error", "SyntaxError: invalid syntax", "tests/test_a.py")
    ]


def test_cargo_clippy_json_gives_compiler_and_clippy_lints() -> None:
    items = read("cargo-json", sample("clippy.jsonl"))
    assert items is not None
    assert [(i.path, i.line, i.rule) for i in items] == [
        ("src/lib.rs", 2, "unused_variables"),
        ("src/lib.rs", 3, "clippy::needless_return"),
    ]


def test_cargo_test_text_gives_the_failing_test_and_where_it_panicked() -> None:
    items = read("cargo-test", sample("cargo-test.txt"))
    assert items == [
        GateItem("src/lib.rs", 10, "failed", "assertion `left == right` failed", "tests::adds")
    ]


def test_eslint_json_from_its_documented_format() -> None:
    text = json.dumps(
        [
            {
                "filePath": "/repo/src/app.js",
                "messages": [
                    {
                        "ruleId": "no-unused-vars",
                        "severity": 2,
                        "message": "'x' is assigned a value but never used.",
                        "line": 3,
                        "column": 7,
                    }
                ],
                "errorCount": 1,
                "warningCount": 0,
            },
            {"filePath": "/repo/src/ok.js", "messages": [], "errorCount": 0},
        ]
    )
    assert read("eslint-json", text) == [
        GateItem("src/app.js", 3, "no-unused-vars", "'x' is assigned a value but never used.")
    ]


def test_golangci_json_from_its_documented_format() -> None:
    text = json.dumps(
        {
            "Issues": [
                {
                    "FromLinter": "errcheck",
                    "Text": "Error return value of `f.Close` is not checked",
                    "Pos": {"Filename": "pkg/io.go", "Line": 12, "Column": 9},
                }
            ],
            "Report": {"Linters": []},
        }
    )
    assert read("golangci-json", text) == [
        GateItem("pkg/io.go", 12, "errcheck", "Error return value of `f.Close` is not checked")
    ]


def test_go_test_json_from_test2json_events() -> None:
    events = [
        {"Action": "run", "Package": "example.com/calc", "Test": "TestAdd"},
        {
            "Action": "output",
            "Package": "example.com/calc",
            "Test": "TestAdd",
            "Output": "    calc_test.go:9: add(2, 3) = -1, want 5\n",
        },
        {"Action": "fail", "Package": "example.com/calc", "Test": "TestAdd", "Elapsed": 0},
        {"Action": "pass", "Package": "example.com/calc", "Test": "TestSub", "Elapsed": 0},
        {"Action": "fail", "Package": "example.com/calc", "Elapsed": 0.01},
        {"Action": "output", "Package": "example.com/io", "Output": "FAIL [build failed]\n"},
        {"Action": "fail", "Package": "example.com/io", "Elapsed": 0},
    ]
    text = "\n".join(json.dumps(e) for e in events)
    assert read("go-test-json", text) == [
        GateItem(
            "example.com/calc/calc_test.go",
            9,
            "failed",
            "add(2, 3) = -1, want 5",
            test="example.com/calc.TestAdd",
        ),
        GateItem("example.com/io", 0, "failed", "package failed", test="example.com/io"),
    ]


def test_paths_outside_the_worktree_stay_as_printed_and_messages_are_bounded() -> None:
    text = json.dumps(
        [
            {
                "filename": "/elsewhere/x.py",
                "code": "E501",
                "location": {"row": 1},
                "message": "long " * 200,
            }
        ]
    )
    (item,) = read("ruff-json", text) or []
    assert item.path == "/elsewhere/x.py"
    assert len(item.message) <= 300 and item.message.endswith("...")


def test_file_names_relative_to_a_gate_working_dir_are_shown_from_the_worktree() -> None:
    paths = Paths(root=Path("/repo"), cwd=Path("/repo/sub"))
    items = read("mypy", "pkg/a.py:3: error: Name 'x' is not defined  [name-defined]\n", paths)
    assert items == [GateItem("sub/pkg/a.py", 3, "name-defined", "Name 'x' is not defined")]
