"""The reviewer's context assembler on a real Oxigraph store: matching, shares, cut order,
determinism and the budget error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from processors.sources.sync import SOP_DIR, sync_sources
from semspec.config.models import GraphConfig
from semspec.errors import ContextBudgetError
from vocabulary.store import GraphStore, open_store
from workflow.context.assembler import AssemblyRequest, assemble_review_context
from workflow.context.assembler_sops import MatchedSop, allocate_chunks
from workflow.knowledge import record_convention, record_decision


def words(text: str) -> int:
    """A predictable token counter: one token per word."""
    return len(text.split())


def sop(applies_to: str, severity: str, body: str, sop_id: str) -> str:
    return (
        f"---\nid: {sop_id}\ncategory: sop\napplies_to: {applies_to}\nseverity: {severity}\n---\n"
        f"# {sop_id}\n\n{body}\n"
    )


def request(files: list[str], window: int, **extra: object) -> AssemblyRequest:
    # Reserve nothing so the whole window is the context budget.
    return AssemblyRequest(
        task_files=tuple(files),
        window_tokens=window,
        system_prompt_tokens=0,
        working_memory_tokens=0,
        output_tokens=0,
        safety_margin=0.0,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    sops = {
        "py.md": sop("'*.py'", "error", "Python files raise typed errors.", "py-errors"),
        "src.md": sop("['src/*.py', 'lib/*.rs']", "warning", "Source logs.", "src-logging"),
        "docs.md": sop("'docs/*.md'", "info", "Docs are short.", "docs-style"),
        "go.md": sop("'src/*.go'", "error", "Go wraps errors.", "go-errors"),
    }
    for name, text in sops.items():
        path = root / SOP_DIR / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def store(tmp_path: Path, repo: Path) -> Iterator[GraphStore]:
    opened = open_store(GraphConfig(), tmp_path / "store")
    sync_sources(opened, repo)
    try:
        yield opened
    finally:
        opened.close()


def test_sops_match_task_files_by_glob_on_path_or_basename_and_by_list(
    store: GraphStore,
) -> None:
    context = assemble_review_context(store, request(["src/app.py"], 10_000), words)
    assert context.sections[0].items == ["py-errors", "src-logging"]
    context = assemble_review_context(store, request(["docs/guide.md"], 10_000), words)
    assert context.sections[0].items == ["docs-style"]
    context = assemble_review_context(store, request(["lib/x.rs", "README"], 10_000), words)
    assert context.sections[0].items == ["src-logging"]


def test_sections_appear_in_order_sops_decisions_summaries_conventions(store: GraphStore) -> None:
    record_decision(store, "t1", "p1", "Use typed errors", "Decided in review.", ["src/app.py"])
    record_convention(store, "demo", "json-flag", "*.py", "Commands take --json.", "r1")
    context = assemble_review_context(
        store,
        request(["src/app.py"], 10_000, plan_id="p1", file_summaries={"src/app.py": "def main()"}),
        words,
    )
    headings = [line for line in context.text.splitlines() if line.startswith("## ")]
    assert headings == ["## SOPs", "## Decisions", "## File summaries", "## Conventions"]
    assert [s.name for s in context.sections] == [
        "sops",
        "decisions",
        "file_summaries",
        "conventions",
    ]
    assert context.used_tokens <= context.budget_tokens


def _sops(*severities: str, chunks: int = 10) -> list[MatchedSop]:
    nine_words = "one two three four five six seven eight nine"
    return [
        MatchedSop(f"{sev}-{i}", sev, "parent", [nine_words] * chunks)
        for i, sev in enumerate(severities)
    ]


def test_chunks_share_the_sop_budget_fifty_thirty_five_fifteen() -> None:
    sops = _sops("error", "warning", "info")
    used = allocate_chunks(sops, 100, words)
    assert [s.taken for s in sops] == [5, 3, 2]
    assert used == 100


def test_an_unused_share_flows_to_the_next_severity() -> None:
    sops = _sops("error", "info")
    allocate_chunks(sops, 100, words)
    assert [s.taken for s in sops] == [5, 5]


def test_what_info_leaves_goes_back_to_the_most_severe_sops() -> None:
    sops = _sops("error", "info", chunks=10)
    sops[1].chunks = sops[1].chunks[:1]
    allocate_chunks(sops, 100, words)
    assert [s.taken for s in sops] == [9, 1]


def test_under_a_small_budget_conventions_drop_first_then_summaries_are_trimmed(
    store: GraphStore,
) -> None:
    record_decision(store, "t1", "p1", "Keep it", "A decision that must stay.", ["src/app.py"])
    record_convention(store, "demo", "long", "*.py", "word " * 40, "r1")
    summary = "\n".join(f"def f{i}(a, b, c) -> int" for i in range(40))
    big = request(["src/app.py"], 10_000, plan_id="p1", file_summaries={"src/app.py": summary})
    full = assemble_review_context(store, big, words)
    assert all(not s.dropped and not s.trimmed for s in full.sections)
    needed = full.used_tokens
    # Just too small for the convention: it goes, everything else stays whole.
    tight = assemble_review_context(
        store,
        request(["src/app.py"], needed - 5, plan_id="p1", file_summaries=big.file_summaries),
        words,
    )
    by_name = {s.name: s for s in tight.sections}
    assert by_name["conventions"].dropped == ["demo/long"]
    assert by_name["file_summaries"].trimmed == []
    # Smaller still: the file summary is trimmed, decisions and SOP summaries stay.
    small = assemble_review_context(
        store,
        request(["src/app.py"], needed - 100, plan_id="p1", file_summaries=big.file_summaries),
        words,
    )
    by_name = {s.name: s for s in small.sections}
    assert by_name["conventions"].dropped == ["demo/long"]
    assert by_name["file_summaries"].trimmed == ["src/app.py"]
    assert by_name["decisions"].items == ["t1: Keep it"]
    assert by_name["sops"].items == ["py-errors", "src-logging"]
    assert "conventions are dropped first" in " ".join(small.notes)
    assert small.used_tokens <= small.budget_tokens


def test_the_same_graph_and_request_give_byte_identical_text(
    store: GraphStore, tmp_path: Path, repo: Path
) -> None:
    record_decision(store, "t1", "p1", "B", "second", ["src/app.py"])
    record_decision(store, "t0", "p1", "A", "first", ["src/app.py"])
    req = request(["src/app.py", "docs/a.md"], 10_000, plan_id="p1")
    first = assemble_review_context(store, req, words)
    second = assemble_review_context(store, req, words)
    assert first.text.encode() == second.text.encode()
    assert first.text.index("### A") < first.text.index("### B")
    rebuilt = open_store(GraphConfig(), tmp_path / "rebuilt")
    try:
        record_decision(rebuilt, "t0", "p1", "A", "first", ["src/app.py"])
        sync_sources(rebuilt, repo)
        record_decision(rebuilt, "t1", "p1", "B", "second", ["src/app.py"])
        assert assemble_review_context(rebuilt, req, words).text == first.text
    finally:
        rebuilt.close()


def test_sop_summaries_that_do_not_fit_raise_a_context_budget_error(store: GraphStore) -> None:
    with pytest.raises(ContextBudgetError) as caught:
        assemble_review_context(store, request(["src/app.py"], 10), words)
    assert caught.value.available == 10
    assert caught.value.needed > 10
    assert "2 matching SOP(s)" in caught.value.message


def test_the_diff_and_reserved_parts_come_out_of_the_budget(store: GraphStore) -> None:
    req = AssemblyRequest(task_files=("src/app.py",), diff="+ x " * 50, window_tokens=20_000)
    context = assemble_review_context(store, req, words)
    assert context.budget_tokens == 20_000 - 2_000 - 6_000 - 1_000 - 100 - 3_000


def test_file_summaries_come_from_the_code_graph_when_the_caller_gives_none(
    store: GraphStore,
) -> None:
    from rdflib import Literal

    from vocabulary import code as C
    from vocabulary.namespaces import RDF

    path = "src/app.py"
    node, symbol, ev = C.file_iri(path), C.fact_iri(path, "sym:main"), C.fact_iri(path, "ev:main")
    store.replace_graph(
        C.code_graph(path),
        [
            (node, RDF.type, C.FILE),
            (node, C.PATH, Literal(path)),
            (node, C.LANGUAGE, Literal("python")),
            (node, C.DEFINES, symbol),
            (symbol, C.SIGNATURE, Literal("def main() -> int")),
            (symbol, C.EVIDENCE, ev),
            (ev, C.START_LINE, Literal(3)),
        ],
    )
    context = assemble_review_context(store, request([path], 10_000), words)
    assert "### src/app.py\nsrc/app.py (python)\n  L3 def main() -> int" in context.text
    assert context.sections[2].items == [path]
