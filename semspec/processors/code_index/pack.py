"""The meaning pack: a compact, deterministic text encoding of a file set's facts for agents.

Seed 004's cognitive pack: a header and dictionary, then one section per file of node, edge
and evidence lines::

    MP1 files=1 claims=8 evidenced=8
    D d0 src/app                           dictionary: repeated folders, names, parameters
    D d1 settings: AppSettings             (each only where it saves tokens in cl100k)
    F n0 d0/main.py python 120L            file node: opens the file's section
    N n1 fn load(path: str, d1) -> Config  node: id, kind, name + signature or detail
    N n2 class Service(Base)
     N n3 m run() -> None                  member of the class above it (one more space)
    N n4 fn serve(port: int) [cli: command serve]   a CLI entry or route is a facet of its function
    N n5 env PORT
    N n6 imports yaml,.models              imported modules (Python's standard library left out)
    E e0 n3 calls n1                       edge: id, from, relation, to
    EV #1a2b3c4d 1-120 10-25 30-80 35-40 90-99 12 1-3 38

Every node and edge is a claim. The evidence line closing a section gives the first 8 hex
digits of the file's source hash, then one line span per claim of the section in order (a
single number is a one-line span): claim ``n1`` above is backed by
``src/app/main.py:10-25#1a2b3c4d``, and a different hash on disk means the evidence is stale.
``pack_evidence`` expands a pack into those pointers. By default only the public surface is
packed (no ``_private`` names), because an agent onboarding needs the map, not every helper;
``private=True`` packs everything.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from semspec.graph.store import GraphStore
from semspec.model.tokens import count_tokens
from semspec.processors.code_index.facts import FileFacts, Symbol
from semspec.processors.code_index.graph_read import read_facts

KIND_LABELS = {"function": "fn", "class": "class", "method": "m"}
BOUNDARY_LABELS = {"cli_entry": "cli", "http_route": "http", "env_var": "env", "config_file": "cfg"}


@dataclass(frozen=True)
class Pack:
    """The pack text and how many of its claims carry an evidence pointer."""

    text: str
    claims: int
    claims_with_evidence: int


def short_signature(symbol: Symbol) -> str | None:
    """A Python signature without what the node line already says (keyword, name, ``self``).

    ``None`` for signatures of other languages, which are written as they are.
    """
    for prefix in ("async def ", "def ", "class "):
        if symbol.signature.startswith(prefix + symbol.name):
            rest = symbol.signature[len(prefix + symbol.name) :]
            if symbol.name == "__init__":
                rest = rest.removesuffix(" -> None")
            return rest.replace("(self, ", "(").replace("(self)", "()").replace("(cls, ", "(")
    return None


def split_parameters(short: str) -> tuple[list[str], str] | None:
    """``(a: int, b: str=...) -> T`` as ``(["a: int", "b: str=..."], " -> T")``.

    Commas inside brackets or quotes do not split. None unless the text opens with a balanced
    parameter list written ``, ``-separated (so joining the parts gives the text back); callers
    leave such a signature as it is.
    """
    if not short.startswith("("):
        return None
    depth, quote, escaped, start, params = 0, "", False, 1, []
    for index, char in enumerate(short):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                if char != ")":
                    return None  # mismatched brackets: not a parameter list
                params.append(short[start:index])
                inner, tail = short[1:index], short[index + 1 :]
                parts = [p.strip() for p in params] if inner else []
                return (parts, tail) if ", ".join(parts) == inner else None
        elif char == "," and depth == 1:
            params.append(short[start:index])
            start = index + 1
    return None


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def grouped_modules(facts: FileFacts) -> str:
    """Imported modules in order, siblings folded: ``a.b.{c,d}``.

    Python's standard library is left out: it says little about what the system is, and the
    summary (and the import block's evidence) still lists it.
    """
    groups: dict[str, list[str]] = {}
    for imp in facts.imports:
        top = imp.module.split(".", 1)[0]
        if facts.language == "python" and (top in sys.stdlib_module_names or top == "__future__"):
            continue
        head, _, tail = (
            imp.module.rpartition(".") if "." in imp.module.lstrip(".") else ("", "", imp.module)
        )
        members = groups.setdefault(head, [])
        if tail not in members:
            members.append(tail)
    parts = []
    for head, tails in groups.items():
        if not head:
            parts.extend(tails)
        elif len(tails) == 1:
            parts.append(f"{head}.{tails[0]}")
        else:
            parts.append(f"{head}.{{{','.join(tails)}}}")
    return ",".join(parts)


def _public(symbol: Symbol) -> bool:
    parts = symbol.qualname.split(".")
    return not any(part.startswith("_") and not part.startswith("__") for part in parts) and (
        not symbol.name.startswith("__") or symbol.name == "__init__"
    )


class _PackWriter:
    def __init__(self, files: list[FileFacts], private: bool) -> None:
        self.private = private
        self.words: dict[str, str] = {}
        self.body: list[str] = []
        self.nodes = 0
        self.edges = 0
        self.claims = 0
        self.evidenced = 0
        self._plan_dictionary(files)

    def _plan_dictionary(self, files: list[FileFacts]) -> None:
        # Shared folders, symbol names and parameters (``ctx: typer.Context``) repeated across
        # the set are candidates; one becomes an entry only when its uses save more tokens
        # than its ``D`` line costs, so a short name (one token, like its id) stays inline.
        uses: Counter[str] = Counter(_folder(f.path) for f in files if "/" in f.path)
        for facts in files:
            for symbol in self._symbols(facts):
                uses[symbol.name] += 1
                short = short_signature(symbol)
                split = split_parameters(short) if short is not None else None
                uses.update(split[0] if split is not None else [])
        repeated = [text for text, count in uses.items() if count > 1]
        for text in sorted(repeated, key=lambda t: (-uses[t] * count_tokens(t), t)):
            ident = f"d{len(self.words)}"
            entry_cost = count_tokens(f"D {ident} {text}\n")
            if uses[text] * (count_tokens(text) - count_tokens(ident)) > entry_cost:
                self.words[text] = ident

    def _symbols(self, facts: FileFacts) -> list[Symbol]:
        return [s for s in facts.symbols if self.private or _public(s)]

    def _claim(self, line: str, spans: list[str], start: int, end: int) -> str:
        """Add a node (``N``/``F``) or edge (``E``) line; ``@`` in it becomes the new id."""
        if line.lstrip().startswith("E "):
            ident, self.edges = f"e{self.edges}", self.edges + 1
        else:
            ident, self.nodes = f"n{self.nodes}", self.nodes + 1
        self.body.append(line.replace(" @ ", f" {ident} ", 1))
        spans.append(str(start) if start == end else f"{start}-{end}")
        self.claims += 1
        self.evidenced += 1
        return ident

    def add_file(self, facts: FileFacts) -> None:
        spans: list[str] = []
        folder = _folder(facts.path)
        path = (
            f"{self.words[folder]}/{facts.path[len(folder) + 1 :]}"
            if folder in self.words
            else facts.path
        )
        header = f"F @ {path} {facts.language} {facts.line_count}L"
        self._claim(header, spans, 1, max(facts.line_count, 1))
        symbols = self._symbols(facts)
        # A CLI command or route spanning exactly a packed function is a facet of its node.
        spans_of = {(s.start_line, s.end_line) for s in symbols}
        facets: dict[tuple[int, int], list[str]] = {}
        boundaries = []
        for boundary in facts.boundaries:
            span = (boundary.line, boundary.end_line)
            if boundary.kind in ("cli_entry", "http_route") and span in spans_of:
                facets.setdefault(span, []).append(
                    f" [{BOUNDARY_LABELS[boundary.kind]}: {boundary.detail}]"
                )
            else:
                boundaries.append(boundary)
        symbol_ids: dict[str, str] = {}
        depth: dict[str, int] = {}
        for symbol in symbols:
            # A member is indented one step under its class (the line above it at lower depth);
            # a member whose class is not packed (another file, private) says so with ``in=``.
            level = depth[symbol.parent] + 1 if symbol.parent in depth else 0
            member = f" in={symbol.parent}" if symbol.parent and symbol.parent not in depth else ""
            label = f"{KIND_LABELS[symbol.kind]} {self.symbol_label(symbol)}"
            extra = "".join(facets.pop((symbol.start_line, symbol.end_line), []))
            line = f"{' ' * level}N @ {label}{member}{extra}"
            ident = self._claim(line, spans, symbol.start_line, symbol.end_line)
            symbol_ids.setdefault(symbol.qualname, ident)
            depth.setdefault(symbol.qualname, level)
        for boundary in boundaries:
            line = f"N @ {BOUNDARY_LABELS[boundary.kind]} {boundary.detail}"
            self._claim(line, spans, boundary.line, boundary.end_line)
        modules = grouped_modules(facts)
        if modules:
            # One claim for the import block: the modules in order, names left to evidence.
            first = min(i.line for i in facts.imports)
            last = max(i.end_line for i in facts.imports)
            self._claim(f"N @ imports {modules}", spans, first, last)
        seen: set[tuple[str, str]] = set()
        for call in facts.calls:
            source = symbol_ids.get(call.caller or "")
            target = symbol_ids.get(call.callee)
            if source is None or target is None or (source, target) in seen:
                continue  # one edge per packed pair; its evidence is the first call site
            seen.add((source, target))
            self._claim(f"E @ {source} calls {target}", spans, call.line, call.line)
        self.body.append(f"EV #{facts.source_hash[:8]} {' '.join(spans)}")

    def symbol_label(self, symbol: Symbol) -> str:
        """Name and signature, the name written once (through the dictionary if it is there)."""
        short = short_signature(symbol)
        if short is not None:
            is_async = symbol.signature.startswith("async ")
            split = split_parameters(short)
            if split is not None:
                params, tail = split
                short = f"({', '.join(self.word(p) for p in params)}){tail}"
            return ("async " if is_async else "") + self.word(symbol.name) + short
        sig = symbol.signature
        match = re.search(rf"(?<![\w$]){re.escape(symbol.name)}(?![\w$])", sig)
        if match is None:
            return f"{self.word(symbol.name)} {sig}"
        return sig[: match.start()] + self.word(symbol.name) + sig[match.end() :]

    def word(self, text: str) -> str:
        return self.words.get(text, text)

    def text(self, files: int) -> str:
        header = f"MP1 files={files} claims={self.claims} evidenced={self.evidenced}"
        dictionary = [f"D {ident} {text}" for text, ident in self.words.items()]
        return "\n".join([header, *dictionary, *self.body]) + "\n"


def pack_facts(facts: Iterable[FileFacts], *, private: bool = False) -> Pack:
    """The meaning pack of already extracted facts (files in path order)."""
    files = sorted(facts, key=lambda f: f.path)
    writer = _PackWriter(files, private)
    for file_facts in files:
        writer.add_file(file_facts)
    return Pack(writer.text(len(files)), writer.claims, writer.evidenced)


def meaning_pack(
    source: GraphStore | Mapping[str, FileFacts], paths: Iterable[str], *, private: bool = False
) -> Pack:
    """The meaning pack of ``paths``, read from the store (or taken from a facts mapping).

    Paths that are not indexed are left out; the header's ``files=`` counts those packed.
    """
    wanted = sorted(set(paths))
    if isinstance(source, Mapping):
        return pack_facts((source[p] for p in wanted if p in source), private=private)
    return pack_facts(read_facts(source, wanted).values(), private=private)
