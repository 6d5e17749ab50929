"""The reviewer's context assembler on a real Oxigraph store: matching, shares, cut order,
determinism and the budget error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from semspec.core.config.models import GraphConfig
from semspec.core.errors import ContextBudgetError
from semspec.graph.access import open_store
from semspec.graph.store import GraphStore
from semspec.knowledge.code_index import file_summary, index_repository
from semspec.knowledge.sources.catalog import show_sop
from semspec.knowledge.sources.sync import SOP_DIR, sync_sources
from semspec.workflow.context.assembler import AssemblyRequest, assemble_review_context
from semspec.workflow.context.assembler_sops import MatchedSop
from semspec.workflow.context.sop_budget import SopSelection
from semspec.workflow.knowledge import record_convention, record_decision


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
def store(store: GraphStore, repo: Path) -> GraphStore:
    """The shared empty store with the SOPs of ``repo`` synced into it."""
    sync_sources(store, repo)
    return store


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


def test_each_included_item_records_the_tokens_it_took_and_they_add_up_to_its_section(
    store: GraphStore,
) -> None:
    record_decision(store, "t1", "p1", "Use typed errors", "Decided in review.", ["src/app.py"])
    record_convention(store, "demo", "json-flag", "*.py", "Commands take --json.", "r1")
    context = assemble_review_context(
        store,
        request(["src/app.py"], 10_000, plan_id="p1", file_summaries={"src/app.py": "def main()"}),
        words,
    )
    for section in context.sections:
        assert list(section.item_tokens) == section.items
        assert all(tokens > 0 for tokens in section.item_tokens.values())
        assert sum(section.item_tokens.values()) == section.tokens, section.name
    assert sum(s.tokens for s in context.sections) == context.used_tokens


NINE_WORDS = "one two three four five six seven eight nine"


def _selection(*severities: str, chunks: int = 3) -> SopSelection:
    return SopSelection(
        [
            MatchedSop(
                f"{sev}-{i}",
                sev,
                title="t",
                requirements=[f"must {i}"],
                chunks=[NINE_WORDS] * chunks,
            )
            for i, sev in enumerate(severities)
        ]
    )


def _take(selection: SopSelection, budget: int) -> SopSelection:
    left = budget - selection.take_error_cores(words)
    left -= selection.take_error_summaries(left, words)
    selection.take_the_rest(left, words)
    return selection


def _kept(selection: SopSelection) -> list[tuple[str, str | None, int]]:
    return [(s.sop_id, selection.forms.get(s.sop_id), s.taken) for s in selection.sops]


def test_a_roomy_window_keeps_every_sop_whole() -> None:
    selection = _take(_selection("error", "warning", "info"), 1_000)
    assert _kept(selection) == [
        ("error-0", "parent", 3),
        ("warning-1", "parent", 3),
        ("info-2", "parent", 3),
    ]
    assert selection.cuts == []


def test_a_tight_window_cuts_info_sops_first_then_warning_sops_then_error_sections() -> None:
    full = _take(_selection("error", "warning", "info"), 1_000).tokens
    info_sections = 3 * 10
    info_parent = words(_selection("info").sops[0].parent) + 1
    # Just short of everything: the info SOP loses a section and nothing else changes.
    assert _kept(_take(_selection("error", "warning", "info"), full - 1))[2] == (
        "info-2",
        "parent",
        2,
    )
    # Short of the info SOP's whole text: it goes, warning and error stay whole.
    tight = _take(_selection("error", "warning", "info"), full - info_sections - info_parent + 1)
    assert _kept(tight) == [
        ("error-0", "parent", 3),
        ("warning-1", "parent", 3),
        ("info-2", None, 0),
    ]
    assert any("info-2: info SOP left out" in cut for cut in tight.cuts)
    # Tighter: warning sections go, then the warning SOP, before any error section.
    tighter = _take(_selection("error", "warning", "info"), full - info_sections - info_parent - 1)
    assert _kept(tighter)[:2] == [("error-0", "parent", 3), ("warning-1", "parent", 2)]
    error_only = _take(_selection("error"), 1_000).tokens
    no_warning = _take(_selection("error", "warning", "info"), error_only)
    assert _kept(no_warning) == [
        ("error-0", "parent", 3),
        ("warning-1", None, 0),
        ("info-2", None, 0),
    ]
    # Tightest: error sections are cut last, and the requirements stay.
    bare = _take(_selection("error", "warning", "info"), error_only - 1)
    assert _kept(bare) == [("error-0", "parent", 2), ("warning-1", None, 0), ("info-2", None, 0)]
    assert "must 0" in (bare.block(bare.sops[0]) or "")
    assert any("error-0: 1 of 3 section(s) left out" in cut for cut in bare.cuts)


def test_error_summaries_give_way_before_error_requirements() -> None:
    selection = _selection("error")
    selection.sops[0].summary = "a long summary " * 10
    core = selection.core_tokens(words)
    _take(selection, core)
    assert selection.forms == {"error-0": "core"}
    assert (
        selection.block(selection.sops[0]) == "### SOP error-0: t (error)\nRequirements:\n1. must 0"
    )
    assert selection.cuts[0].startswith("error-0: summary left out")


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


def test_error_requirements_that_do_not_fit_raise_a_context_budget_error_naming_tokens(
    store: GraphStore,
) -> None:
    with pytest.raises(ContextBudgetError) as caught:
        assemble_review_context(store, request(["src/app.py"], 3), words)
    # "### SOP py-errors: py-errors (error)" is five words, plus one for the separator.
    assert (caught.value.needed, caught.value.available) == (6, 3)
    assert "error-severity SOP(s) py-errors" in caught.value.message
    assert caught.value.message.endswith("needs 6 tokens, 3 available")


def test_a_window_that_holds_only_the_error_requirements_cuts_the_rest_and_says_why(
    store: GraphStore,
) -> None:
    context = assemble_review_context(store, request(["src/app.py"], 6), words)
    sops = context.sections[0]
    assert (sops.items, sops.trimmed, sops.dropped) == (
        ["py-errors"],
        ["py-errors"],
        ["src-logging"],
    )
    assert "error requirements are never cut" in sops.reason
    assert [c.split(":")[0] for c in sops.cuts] == ["py-errors", "src-logging", "py-errors"]
    assert "src-logging: warning SOP left out" in " ".join(sops.cuts)


def test_the_diff_and_reserved_parts_come_out_of_the_budget(store: GraphStore) -> None:
    req = AssemblyRequest(task_files=("src/app.py",), diff="+ x " * 50, window_tokens=20_000)
    context = assemble_review_context(store, req, words)
    assert context.budget_tokens == 20_000 - 2_000 - 6_000 - 1_000 - 100 - 3_000


def test_file_summaries_come_from_the_code_index_when_the_caller_gives_none(
    store: GraphStore, repo: Path
) -> None:
    path = "src/app.py"
    (repo / "src").mkdir()
    (repo / path).write_text('"""App."""\n\n\ndef main() -> int:\n    return 0\n')
    index_repository(store, repo)
    context = assemble_review_context(store, request([path], 10_000), words)
    assert f"### {path}\n{file_summary(store, path)}" in context.text
    assert "\n  L4-5 def main() -> int" in context.text
    assert context.sections[2].items == [path]


def test_each_requirement_of_a_real_synced_sop_appears_once(tmp_path: Path) -> None:
    root = tmp_path / "own"
    shutil.copytree(Path(__file__).resolve().parents[2] / SOP_DIR, root / SOP_DIR)
    opened = open_store(GraphConfig(), tmp_path / "own-store")
    try:
        sync_sources(opened, root)
        detail = show_sop(opened, "python-errors")
        context = assemble_review_context(opened, request(["calc.py"], 100_000))
    finally:
        opened.close()
    assert len(detail.requirements) == 4
    for requirement in detail.requirements:
        assert context.text.count(requirement) == 1, requirement
    # The Requirements section holds only the items, so no chunk repeats it; "Why" stays.
    assert not any("## Requirements" in chunk for chunk in detail.chunks)
    assert "## Why" in context.text
