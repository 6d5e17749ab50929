"""The meaning pack and file summaries: deterministic, compact, every claim backed by evidence."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.errors import InputError, NotFoundError
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index import (
    extract_facts,
    file_summaries,
    file_summary,
    index_repository,
    meaning_pack,
    pack_evidence,
    pack_facts,
)
from semspec.knowledge.code_index.pack import split_parameters
from tests.support.code_samples import FIXTURES, SOURCES, sample_repo

PATHS = [f"src/{n}" for n in SOURCES]
pytestmark = pytest.mark.usefixtures("fresh_logging")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return sample_repo(tmp_path / "repo")


@pytest.fixture
def store(store: GraphStore, repo: Path) -> GraphStore:
    """The shared empty store with ``repo`` indexed into it."""
    index_repository(store, repo)
    return store


def claim_lines(text: str) -> dict[str, str]:
    """Claim id (``n0``, ``n1``, … in order) → its line: a file line or a line opening with a
    span, without its indentation."""
    claims = [
        line.strip()
        for line in text.splitlines()
        if line.startswith("F ") or line.strip()[:1].isdigit()
    ]
    return {f"n{i}": line for i, line in enumerate(claims)}


def unfolded(label: str) -> str:
    """``visit_{a,b}_expr`` written out as ``visit_a_expr visit_b_expr``."""
    return re.sub(
        r"([\w$]*)\{([\w$,]+)\}([\w$]*)",
        lambda m: " ".join(f"{m[1]}{middle}{m[3]}" for middle in m[2].split(",")),
        label,
    )


def test_every_claim_of_the_pack_has_an_evidence_pointer(store: GraphStore) -> None:
    pack = meaning_pack(store, PATHS, private=True)
    pointers = pack_evidence(pack.text)
    assert pack.claims == len(claim_lines(pack.text)) > 40
    assert pack.claims_with_evidence == pack.claims
    assert set(pointers) == set(claim_lines(pack.text))


def test_evidence_pointers_resolve_to_lines_naming_the_symbol(
    repo: Path, store: GraphStore
) -> None:
    pack = meaning_pack(store, PATHS, private=True)
    words = dict(line.split(" ", 1) for line in pack.text.splitlines() if re.match(r"d\d+ ", line))
    pointers = pack_evidence(pack.text)
    checked = 0
    for claim, line in claim_lines(pack.text).items():
        span, label = line.split(" ", 1)
        if span == "F" or label.split(" ", 1)[0] in ("env", "cfg", "http", "cli", "imports"):
            continue
        path, _, span_hash = pointers[claim].partition(":")
        span, _, digest = span_hash.partition("#")
        start, end = (int(n) for n in span.split("-"))
        data = (repo / path).read_bytes()
        assert hashlib.sha256(data).hexdigest().startswith(digest)
        # The span starts at a symbol the claim names, on the pointed line, and ends where a
        # symbol ends (a run or family of small definitions spans them all).
        symbols = extract_facts(path, data).symbols
        symbol = next(s for s in symbols if s.start_line == start and s.end_line <= end)
        assert any(s.end_line == end for s in symbols if s.start_line >= start), (claim, line)
        expanded = " ".join(words.get(part, part) for part in re.split(r"([\w$]+)", label))
        expanded = unfolded(expanded)
        assert symbol.name in expanded, (claim, line)
        assert symbol.name in data.decode().splitlines()[start - 1]
        checked += 1
    assert checked > 25


def test_the_pack_is_deterministic_whatever_the_order_of_paths(store: GraphStore) -> None:
    first = meaning_pack(store, PATHS)
    second = meaning_pack(store, list(reversed(PATHS)) + PATHS[:2])
    assert first == second


def test_the_pack_from_the_store_equals_the_pack_from_extracted_facts(
    repo: Path, store: GraphStore
) -> None:
    facts = {p: extract_facts(p, (repo / p).read_bytes()) for p in PATHS}
    assert meaning_pack(store, PATHS) == meaning_pack(facts, PATHS)


def test_private_names_are_left_out_unless_asked_for(store: GraphStore) -> None:
    public = meaning_pack(store, ["src/service.py"])
    everything = meaning_pack(store, ["src/service.py"], private=True)
    assert "_read" not in public.text
    assert "_read" in everything.text
    assert " helper(value: str) -> str\n" in public.text


def test_the_pack_carries_boundaries_imports_and_call_edges(store: GraphStore) -> None:
    text = meaning_pack(store, ["src/service.py"]).text
    # A call is part of its caller's claim, whose span holds the call.
    assert "\n36+2 items() -> str [http: GET,POST /items] calls helper\n" in text
    assert "\n46+1 serve(port: int=8080) -> None [cli: command serve] calls helper\n" in text
    assert "\n37 env API_TOKEN\n" in text and "\n27 cfg settings.yaml\n" in text
    assert "\n50+1 cli __main__\n" in text
    assert "\n3+6 imports typer,flask\n" in text  # the standard library is left out


def test_repeated_names_and_parameters_go_to_the_dictionary_when_that_saves_tokens() -> None:
    source = b""
    for cls in ("Alpha", "Beta", "Gamma", "Delta"):
        source += f"class {cls}:\n".encode()
        source += f"    def run_{cls.lower()}(self, ctx: typer.Context) -> int:\n".encode()
        source += b"        return 1\n\n"
        source += b"    def reconcile_pending_escalations(self, value: int, ctx: typer.Context)"
        source += f" -> {cls}:\n        return 2\n\n".encode()
    text = pack_facts([extract_facts("m.py", source)]).text
    entries = [line.split(" ", 1) for line in text.splitlines() if re.match(r"d\d+ ", line)]
    words = {entry[1]: entry[0] for entry in entries}
    name, param = "reconcile_pending_escalations", "ctx: typer.Context"
    assert set(words) == {name, param}
    assert text.count(name) == 1 and text.count(param) == 1
    assert text.count(f" {words[name]}(value: int, {words[param]}) -> ") == 4
    # ``value: int`` is as cheap as an id: an entry would only cost its line.
    assert text.count(f" run_alpha({words[param]}) -> int\n") == 1


def test_parameter_lists_split_only_where_the_text_is_rebuilt_exactly() -> None:
    split = split_parameters("(a: int, b: dict[str, int]=..., c: str=', ') -> T")
    assert split == (["a: int", "b: dict[str, int]=...", "c: str=', '"], " -> T")
    assert split_parameters("() -> None") == ([], " -> None")
    assert split_parameters("(a,b)") is None  # would not come back as written
    assert split_parameters("(unbalanced") is None
    # Escaped quotes stay inside their string; a list must close with ")".
    assert split_parameters("(a='\\'', b='}', c=1) -> int") == (
        ["a='\\''", "b='}'", "c=1"],
        " -> int",
    )
    assert split_parameters("(a=1] -> x") is None


def test_a_file_summary_lists_symbols_with_signatures_and_lines(store: GraphStore) -> None:
    summary = file_summary(store, "src/service.py")
    lines = summary.splitlines()
    assert lines[0].startswith("src/service.py (python, 51 lines, #")
    assert "imports: __future__ (annotations); os; pathlib (Path); typer; flask (Flask)" in lines
    assert "  http_route GET,POST /items L36-38" in lines
    assert "  L16-28 class Store" in lines
    assert "    L23-24 def load(self, name: str) -> str" in lines
    assert file_summary(store, "src/service.py") == summary


def test_file_summaries_leave_out_files_that_are_not_indexed(store: GraphStore) -> None:
    found = file_summaries(store, ["src/server.go", "src/missing.py"])
    assert list(found) == ["src/server.go"]
    assert "L30-36 func main()" in found["src/server.go"]


def test_a_file_summary_of_an_unindexed_file_says_to_index(store: GraphStore) -> None:
    with pytest.raises(NotFoundError) as caught:
        file_summary(store, "src/missing.py")
    assert caught.value.hint is not None and "semspec index" in caught.value.hint


def test_the_index_command_reports_counts_as_json(repo: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["--repo", str(repo), "index", "--json"])
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["indexed"] == sorted(PATHS)
    again = runner.invoke(app, ["--repo", str(repo), "index", "--json"])
    assert json.loads(again.stdout)["unchanged"] == sorted(PATHS)


def test_the_pack_command_prints_the_pack_of_the_named_files(repo: Path) -> None:
    runner = CliRunner()
    runner.invoke(app, ["--repo", str(repo), "index"])
    result = runner.invoke(
        app, ["--repo", str(repo), "index", "pack", "--file", str(repo / "src/server.go"), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["files"] == ["src/server.go"]
    assert data["claims"] == data["claims_with_evidence"] > 5
    assert "\nF src/server.go go 36L #" in data["text"]


def test_the_pack_command_refuses_a_file_outside_the_repository(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    result = CliRunner().invoke(app, ["--repo", str(repo), "index", "pack", "--file", str(outside)])
    assert isinstance(result.exception, InputError)
    assert "outside the repository" in str(result.exception)
    assert result.exception.exit_code == 2


def test_the_pack_command_names_files_that_are_not_indexed(repo: Path) -> None:
    runner = CliRunner()
    runner.invoke(app, ["--repo", str(repo), "index"])
    (repo / "src" / "new.py").write_text("def fresh() -> None:\n    pass\n")
    result = runner.invoke(
        app, ["--repo", str(repo), "index", "summary", "--file", str(repo / "src/new.py")]
    )
    assert isinstance(result.exception, NotFoundError)
    assert "src/new.py" in str(result.exception)


def test_the_cli_exits_2_with_a_hint_for_a_file_that_is_not_indexed(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), "index", "pack", "-f", "nope.py"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "error: indexed file 'nope.py' not found" in done.stderr
    assert "hint: run `semspec index` first" in done.stderr


def test_the_index_command_names_syntax_errors_with_file_and_line(repo: Path) -> None:
    shutil.copy(FIXTURES / "broken.py", repo / "src" / "broken.py")
    result = CliRunner().invoke(app, ["--repo", str(repo), "index"])
    assert result.exit_code == 0, result.output
    assert "indexed 6, unchanged 0, removed 0, skipped 1, failed 1" in result.stdout
    assert "error: src/broken.py:5: invalid syntax" in result.stderr
