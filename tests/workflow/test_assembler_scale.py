"""Selecting the SOPs that apply to a task out of 20,000 in the real Oxigraph store, checked
against ``pathspec``'s gitignore matching of every SOP's globs (the reference the vocabulary
follows), and reading each matched SOP's chunks back in order whatever their text."""

from __future__ import annotations

from collections.abc import Iterator

import pathspec
import pytest

from semspec.core.config.models import GraphConfig
from semspec.graph.access import open_store
from semspec.graph.store import GraphStore, replace_graph_update
from semspec.knowledge.sources.sop_document import SopDocument
from semspec.knowledge.sources.sop_markdown import Chunk
from semspec.knowledge.sources.sop_triples import sop_triples
from semspec.vocabulary.namespaces import sop_graph
from semspec.workflow.context.assembler_sops import matching_sops

SOPS = 20_000
MODULES = 1_000
BATCH = 500
TASKS = [
    ("src/mod_3/file_3.py", "src/mod_17/a/b.py", "src/mod_300/file_1.py", "README.md"),
    ("docs/guide/intro.md", "src/mod_10/file_7.py"),
    ("src/mod_999/deep/er/x.md", "lib/other.rs"),
]


def globs_of(i: int) -> tuple[str, ...]:
    """A deterministic mix: one module's files, its folder, prefixes shared with other
    modules (``mod_1*``), decoys for another extension, and a few repository-wide globs."""
    k = i % MODULES
    globs = [f"src/mod_{k}/*.py"]
    for step, glob in (
        (7, f"src/mod_{k}/**"),
        (11, f"src/mod_{k}*/*.py"),
        (13, f"src/mod_{k}/*.md"),
        (101, f"**/file_{k % 10}.py"),
        (103, f"src/mod_{k}/file_?.py"),
        (997, "*.py"),
        (1009, "README*"),
        (1013, "docs/**/*.md"),
    ):
        if i % step == 0:
            globs.append(glob)
    return tuple(globs)


def document(i: int, chunks: tuple[Chunk, ...] = ()) -> SopDocument:
    return SopDocument(
        sop_id=f"sop-{i:05d}",
        path=f".semspec/sources/docs/sops/sop-{i:05d}.md",
        source_hash=f"{i:064x}",
        title=f"Practice {i}",
        category="sop",
        applies_to=globs_of(i),
        severity=("error", "warning", "info")[i % 3],
        summary=f"Practice {i}.",
        requirements=(f"Do {i}",),
        chunks=chunks,
    )


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
    """20,000 SOPs in one Oxigraph store, written in batches of graph replacements."""
    store = open_store(GraphConfig(), tmp_path_factory.mktemp("sops"))
    try:
        for first in range(0, SOPS, BATCH):
            updates = [
                replace_graph_update(sop_graph(f"sop-{i:05d}"), sop_triples(document(i)))
                for i in range(first, min(first + BATCH, SOPS))
            ]
            store.update(" ;\n".join(updates))
        yield store
    finally:
        store.close()


def expected(files: tuple[str, ...]) -> set[str]:
    """The SOPs one of whose globs ``pathspec`` matches with one of ``files``."""
    hits: dict[str, bool] = {}

    def hit(glob: str) -> bool:
        if glob not in hits:
            spec = pathspec.PathSpec.from_lines("gitignore", [glob])
            hits[glob] = any(spec.match_file(f) for f in files)
        return hits[glob]

    return {f"sop-{i:05d}" for i in range(SOPS) if any(hit(g) for g in globs_of(i))}


@pytest.mark.slow  # a 20,000-SOP store
@pytest.mark.parametrize("files", TASKS)
def test_a_20000_sop_store_selects_exactly_the_sops_whose_applies_to_match(
    big_store: GraphStore, files: tuple[str, ...]
) -> None:
    want = expected(files)
    got = [sop.sop_id for sop in matching_sops(big_store, files)]
    assert len(got) == len(set(got))
    assert set(got) == want
    assert 0 < len(want) < SOPS // 20


def test_chunks_come_back_in_order_whatever_characters_they_hold(store: GraphStore) -> None:
    texts = [f'part {n}: a:b::c 12:3:x é 𝄞 "quoted" \\ {"x" * n}' for n in range(12)]
    texts[5] = ""
    texts[7] = "7:99:"
    chunks = tuple(Chunk(f"Part {n}", text) for n, text in enumerate(texts))
    store.replace_graph(sop_graph("sop-00003"), sop_triples(document(3, chunks)))
    [sop] = matching_sops(store, ["src/mod_3/a.py"])
    assert sop.chunks == texts
