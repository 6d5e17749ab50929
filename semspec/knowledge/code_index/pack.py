"""The meaning pack: a compact, deterministic text encoding of a file set's facts for agents.

Seed 004's cognitive pack: a header and dictionary, then one section per file, each line a
claim that opens with its evidence span::

    MP2 files=1 claims=12 evidenced=12
    d0 src/app                             dictionary: repeated folders, labels, names,
    d1 settings: AppSettings               parameters, annotations, return types (each only
    d2 async aclose() -> None              where it saves tokens in cl100k)
    F d0/main.py python 120L #1a2b3c4d     file: path, language, lines, source hash
    10+15 load(path: str, d1) -> Config    ``start+more``: lines 10-25; then name + signature
    30+50 class Service(Base)
     35+5 run(key?: str) -> None calls load    a member (one more space); ``key?: str`` is
     41+3 stop ^                                ``key: str | None=None``; ``^``: the signature
     45+9 d2                                    of the line above; calls name packed callees
     55+20 get(key: int) -> int +2             ``+2``: two more definitions of ``get`` in the
    90+9 serve(port: int) [cli: command serve]  span (overloads, a property's setter)
    100+30 class Markup(str)
     104+9 overrides str: upper,lower -> Markup  methods overriding a builtin base's
                                                 (its parameters): names by return type
    130+20 class Key: d4; sign(data) -> bytes  a class whose members are one run of small
                                                 definitions: one claim (``pack_classes``)
    151+40 class Cert(ABC): sign(key),serial: bytes; issuer: Name?; version ^
                                           an abstract class's (or a stub's) members: names by
                                           return type; ``^``: declared so by a class above
    12 env PORT                            a boundary: env var, config file, CLI entry, route
    1+3 imports yaml,.{models,db}          imported modules (Python's and Go's standard
                                           library left out)

Every line but the header and the dictionary is a claim; claim ``n0`` is the file line,
``n1`` the next, and so on. A claim's evidence is its span in the file whose hash its section
names: the ``load`` line above is backed by ``src/app/main.py:10-25#1a2b3c4d`` (a file line by
the whole file), and a different hash on disk means the evidence is stale. A call is part of
its caller's claim, whose span holds the call. ``pack_evidence`` expands a pack into those
pointers. Long string literals in a signature are written ``...`` and long ``Literal[...]``
lists keep their first values (the span leads to the rest); the definitions of stubs,
Protocols and abstract classes write their parameters by name and are grouped by return type
(``pack_stubs``); a return type ``T | None`` is ``T?``. By default only the public surface is
packed (no ``_private`` names), because an agent onboarding needs the map, not every helper;
``private=True`` packs everything.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from semspec.graph.store import GraphStore
from semspec.knowledge.code_index.facts import FileFacts, Symbol
from semspec.knowledge.code_index.graph_read import read_facts
from semspec.knowledge.code_index.pack_classes import fold_class_runs
from semspec.knowledge.code_index.pack_names import folded_names
from semspec.knowledge.code_index.pack_stubs import (
    StubMember,
    grouped_members,
    interface_classes,
    interface_facts,
)
from semspec.model.tokens import count_tokens

HASH_DIGITS = 8
MAX_STRING = 24
"""A string literal in a signature longer than this (quotes included) is written ``...``
unless it is a type (a forward reference)."""
LITERAL_ITEMS = 5
"""A ``Literal[...]`` list keeps this many values, then ``...``."""
MIN_FAMILY = 3
"""Consecutive siblings alike enough to share one claim (see ``_PackWriter._families``)."""
MIN_STUB_RUN = 1
"""A run of this many stub definitions at one depth is one claim grouped by return type."""
STUB_ENTRY = 3
"""A stub's method label used this often is a dictionary entry; less often, it is written in its
return type's group (or named again, ``^``)."""
LONG_SIGNATURE = 5
"""A signature with more parameters than this writes its optional ones by name alone."""
SMALL_LINES = 1
"""A definition spanning no more lines than this (or any in a ``.pyi`` stub, whose bodies are
``...``) is small: a run of them shares one claim."""
_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_OPTIONAL = re.compile(
    r"(?P<name>\w+): (?:(?P<union>[^=]+) \| None|Optional\[(?P<optional>[^=]+)\])=None"
)
_OPTIONAL_RETURN = re.compile(r"^( -> [\w.]+(?:\[[^|]*\])?) \| None$")
"""`` -> T | None`` for one type ``T``, written `` -> T?`` as an optional parameter is."""
_IDENT = re.compile(r"(?<![\w.])d\d+(?!\w)")
"""A dictionary id where it stands as a word."""
_PARAMETER = re.compile(r"(?P<name>\*{0,2}\w+\??): (?P<annotation>.+)")
_TIDY = re.compile(r"(\()\s+|,?\s+(\))")
BOUNDARY_LABELS = {"cli_entry": "cli", "http_route": "http", "env_var": "env", "config_file": "cfg"}


@dataclass(frozen=True)
class Pack:
    """The pack text and how many of its claims carry an evidence pointer."""

    text: str
    claims: int
    claims_with_evidence: int


@lru_cache(maxsize=65_536)
def short_signature(symbol: Symbol) -> str | None:
    """A Python signature without what the node line already says (keyword, name, ``self``).

    ``None`` for signatures of other languages, which are written as they are.
    """
    for prefix in ("async def ", "def ", "class "):
        if symbol.signature.startswith(prefix + symbol.name):
            rest = abridged(symbol.signature[len(prefix + symbol.name) :])
            if symbol.name == "__init__":
                rest = rest.removesuffix(" -> None")
            rest = rest.replace("(self, /)", "()").replace("(self)", "()").replace("(cls)", "()")
            for receiver in ("(self, /, ", "(self, ", "(cls, "):
                rest = rest.replace(receiver, "(")
            split = split_parameters(rest)
            if split is None:
                return rest
            params = [_optional(p) for p in split[0]]
            if len(params) > LONG_SIGNATURE:
                params = [_name_only(p) for p in params]
            returns = _OPTIONAL_RETURN.sub(r"\1?", split[1])
            return f"({', '.join(params)}){returns}"
    return None


def _name_only(parameter: str) -> str:
    """An optional parameter of a long signature as ``name?``: its type and default are in the
    evidence, and a caller of a long signature needs first which options exist."""
    name = parameter.partition(":")[0]
    if name.endswith("?") and name[:-1].isidentifier():
        return name
    try:  # a default, told apart from an ``=`` inside an annotation by Python's own parser
        function = ast.parse(f"def f({parameter}): pass").body[0]
    except SyntaxError:
        return parameter
    assert isinstance(function, ast.FunctionDef)
    arguments = function.args
    if arguments.defaults or any(d is not None for d in arguments.kw_defaults):
        return f"{[*arguments.args, *arguments.kwonlyargs][0].arg}?"
    return parameter


def _optional(parameter: str) -> str:
    """``x: T | None=None`` (or ``Optional[T]=None``) as ``x?: T``, as TypeScript writes it."""
    match = _OPTIONAL.fullmatch(parameter)
    if match is None:
        return parameter
    return f"{match['name']}?: {match['union'] or match['optional']}"


def abridged(signature: str) -> str:
    """``signature`` with long string literals other than types written ``...`` and long
    ``Literal[...]`` lists cut to their first items.

    Text in an annotation (``Annotated[str, Doc("...")]``) or a long list of allowed values says
    little about the interface for many tokens; the claim's evidence span still leads to it.
    """
    signature = _STRING.sub(lambda m: "..." if _prose(m[0]) else m[0], signature)
    at = signature.find("Literal[")
    while at >= 0:
        found = _items(signature, at + len("Literal"))
        if found is not None and len(found[0]) > LITERAL_ITEMS:
            kept = ", ".join([*(i.strip() for i in found[0][:LITERAL_ITEMS]), "..."])
            signature = f"{signature[: at + len('Literal[')]}{kept}{signature[found[1] :]}"
        at = signature.find("Literal[", at + 1)
    return signature


def _prose(literal: str) -> bool:
    """A quoted string longer than ``MAX_STRING`` that is not a type written as a string (a
    forward reference such as ``'dict[str, Graph]'`` parses as an expression; prose does not)."""
    if len(literal) <= MAX_STRING:
        return False
    try:
        ast.parse(literal[1:-1], mode="eval")
    except (SyntaxError, ValueError):
        return True
    return False


def _items(text: str, start: int) -> tuple[list[str], int] | None:
    """The comma-separated items of the bracket opening at ``text[start]`` and the index of the
    bracket closing it; commas inside nested brackets or quotes do not split. None when the
    bracket is not closed by its match."""
    closing = {"(": ")", "[": "]", "{": "}"}
    stack, quote, escaped, begin, items = [], "", False, start + 1, []
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in closing:
            stack.append(closing[char])
        elif char in ")]}":
            if not stack or stack.pop() != char:
                return None  # mismatched brackets
            if not stack:
                items.append(text[begin:index])
                return items, index
        elif char == "," and len(stack) == 1:
            items.append(text[begin:index])
            begin = index + 1
    return None


def split_parameters(short: str) -> tuple[list[str], str] | None:
    """``(a: int, b: str=...) -> T`` as ``(["a: int", "b: str=..."], " -> T")``.

    Commas inside brackets or quotes do not split. None unless the text opens with a balanced
    parameter list written ``, ``-separated (so joining the parts gives the text back); callers
    leave such a signature as it is.
    """
    found = _items(short, 0) if short.startswith("(") else None
    if found is None or short[found[1]] != ")":
        return None
    params, end = found
    inner, tail = short[1:end], short[end + 1 :]
    parts = [p.strip() for p in params] if inner else []
    return (parts, tail) if ", ".join(parts) == inner else None


def _folder(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def grouped_modules(facts: FileFacts) -> str:
    """Imported modules in order, siblings folded: ``a.b.{c,d}``.

    Python's standard library is left out: it says little about what the system is, and the
    summary (and the import block's evidence) still lists it. So is a module whose submodule
    is listed (``a.b`` beside ``a.b.c``): the longer name says it.
    """
    modules = {imp.module for imp in facts.imports}
    stub = facts.path.endswith(".pyi")
    groups: dict[str, list[str]] = {}
    for imp in facts.imports:
        if imp.module.strip(".") and any(m.startswith(f"{imp.module}.") for m in modules):
            continue
        top = (
            imp.module.split(".", 1)[0]
            or imp.module[: len(imp.module) - len(imp.module.lstrip("."))]
        )
        if stub and top not in groups:
            # A stub imports only for its annotations, whose types its claims write by their
            # last name: the packages it draws them from are what is news.
            if not (top in sys.stdlib_module_names or top == "__future__"):
                groups[top] = [""]
            continue
        if stub:
            continue
        if facts.language == "python" and (top in sys.stdlib_module_names or top == "__future__"):
            continue
        if facts.language == "go" and "." not in imp.module.split("/", 1)[0]:
            continue  # Go's standard library: no domain in the path's first element
        # Relative siblings fold too: ``.{users,invites}``, ``..abc.{x,y}``; what ``from .
        # import a`` takes is named as ``.a``.
        rest = imp.module.lstrip(".")
        dots = imp.module[: len(imp.module) - len(rest)]
        if rest:
            head, _, tail = rest.rpartition(".") if "." in rest else ("", "", rest)
            tails = [tail]
        else:
            head, tails = "", list(imp.names) or [""]
        members = groups.setdefault(dots + head, [])
        members += [t for t in tails if t not in members]
    parts = []
    for head, tails in groups.items():
        joint = "" if not head or head.endswith(".") else "."
        if not head:
            parts.extend(tails)
        elif tails == [""]:
            parts.append(head)
        elif len(tails) == 1:
            parts.append(f"{head}{joint}{tails[0]}")
        else:
            parts.append(f"{head}{joint}{{{','.join(tails)}}}")
    return ",".join(parts)


def _public(symbol: Symbol, language: str = "python") -> bool:
    # Go exports by a capital; a Rust function outside any impl or trait is private without
    # ``pub`` (a method may implement a trait, public without it, so methods stay).
    if language == "go" and not symbol.name[:1].isupper():
        return False
    if language == "rust" and symbol.kind == "function" and symbol.parent is None:
        return symbol.signature.startswith("pub")
    parts = symbol.qualname.split(".")
    return not any(part.startswith("_") and not part.startswith("__") for part in parts) and (
        not symbol.name.startswith("__") or symbol.name == "__init__"
    )


class _PackWriter:
    def __init__(self, files: list[FileFacts], private: bool) -> None:
        self.interfaces = {f.path: interface_classes(f) for f in files}
        """Each file's Protocol and abstract classes, whose methods are written as a stub's."""
        self.private = private
        self.words: dict[str, str] = {}
        self.body: list[str] = []
        self.claims = 0
        self.more: Counter[tuple[str, int]] = Counter()
        """How many more definitions of the same name a packed symbol's span holds."""
        self.overrides: dict[tuple[str, int], str] = {}
        """The builtin base each packed override of a builtin's method overrides."""
        self.families: dict[tuple[str, int], list[Symbol]] = {}
        """Families of near-identical siblings by their first member (see ``_families``)."""
        self.in_family: set[tuple[str, int]] = set()
        self._held: list[tuple[str, int, int, int, StubMember | None]] = []
        """Small definitions waiting to be written (``_small``)."""
        self.grouped: set[str] = set()
        """The text of each claim ``grouped_members`` wrote (a run, for ``fold_class_runs``)."""
        self.again: set[tuple[str, int]] = set()
        """Stub members declared alike by an earlier class of their file (``_declared_again``)."""
        self.label_uses = Counter(
            self.symbol_label(s) for f in files for s in self._symbols(f) if self._grouped(f, s)
        )
        for facts in files:
            self._families(facts)
            self._declared_again(facts)
        self._plan_dictionary(files)

    def _plan_dictionary(self, files: list[FileFacts]) -> None:
        # Whole labels first (they repeat where classes share an interface: ``aclose() ->
        # None``), then shared folders, names, callees, parameters (``ctx: typer.Context``) and
        # return types of the labels still written out. A candidate becomes an entry only when
        # its uses save more tokens than its ``D`` line costs, so a one-token name stays inline.
        # Last, the annotations of parameters still written out (``str | None``).
        self.ids: set[str] = set()
        signed = {f.path: self._signed(f) for f in files}
        labels = Counter(
            self.symbol_label(s)
            for f in files
            for s in signed[f.path]
            # A stub's property is written in its type's group, a member declared again by name.
            if not (self._grouped(f, s) and (_bare(s) or (f.path, s.start_line) in self.again))
        )
        stub_labels = {
            self.symbol_label(s) for f in files for s in signed[f.path] if self._grouped(f, s)
        }
        for label in stub_labels:
            if labels[label] < STUB_ENTRY:
                # Written whole, the label leaves its return type's group: worth an entry
                # only where it repeats more.
                del labels[label]
        self._choose(labels)
        uses: Counter[str] = Counter(_folder(f.path) for f in files if "/" in f.path)
        params: list[str] = []
        for facts in files:
            symbols = self._symbols(facts)
            # A stub's run writes each return type once per class (``grouped_members``).
            grouped = [
                s
                for s in symbols
                if self._grouped(facts, s)
                and self.symbol_label(s) not in self.ids
                and (facts.path, s.start_line) not in self.again
            ]
            uses.update(r for _parent, r in {(s.parent, _returns(s)) for s in grouped} if r)
            for symbol in symbols:
                if (facts.path, symbol.start_line) in self.again:
                    uses[symbol.name] += 1
                    continue
                if self._grouped(facts, symbol) and symbol not in grouped:
                    continue  # written as its label's entry
                if symbol in grouped:
                    uses[symbol.name] += 1
                    split = split_parameters(short_signature(symbol) or "")
                    if split is not None and len(split[0]) > 1:
                        uses[", ".join(split[0])] += 1  # a parameter list stubs repeat
                    continue
                if (facts.path, symbol.start_line) in self.in_family:
                    # Written in its family's claim, names folded; its return type (a
                    # stub's properties: ``x509.Name``) is written out each time.
                    uses[_returns(symbol)] += bool(_returns(symbol))
                    continue
                if symbol not in signed[facts.path]:
                    # An override is written by its name and return type only.
                    uses[symbol.name] += 1
                    uses[_returns(symbol)] += bool(_returns(symbol))
                    continue
                if self.symbol_label(symbol) in self.ids:
                    continue
                uses[symbol.name] += 1
                short = short_signature(symbol)
                split = split_parameters(short) if short is not None else None
                if split is not None:
                    params += split[0]
                    uses[split[1].removeprefix(" -> ")] += split[1].startswith(" -> ")
            for targets in _calls_by_caller(facts, symbols).values():
                uses.update(targets)
        uses.update(params)
        self._choose(uses)
        annotations = Counter(
            match["annotation"]
            for match in map(_PARAMETER.fullmatch, (p for p in params if p not in self.words))
            if match is not None
        )
        self._choose(annotations)

    def param(self, text: str) -> str:
        """A parameter through the dictionary: whole, else its annotation."""
        if text in self.words:
            return self.words[text]
        match = _PARAMETER.fullmatch(text)
        if match is not None and match["annotation"] in self.words:
            return f"{match['name']}: {self.words[match['annotation']]}"
        return text

    def _choose(self, uses: Counter[str]) -> None:
        repeated = [text for text, count in uses.items() if count > 1 and text not in self.words]
        for text in sorted(repeated, key=lambda t: (-uses[t] * count_tokens(t), t)):
            ident = f"d{len(self.words)}"
            entry_cost = count_tokens(f"{ident} {text}\n")
            if uses[text] * (count_tokens(text) - count_tokens(ident)) > entry_cost:
                self.words[text] = ident
                self.ids.add(ident)

    def _signed(self, facts: FileFacts) -> list[Symbol]:
        """The packed symbols written with their signature: all but overrides of a builtin
        base's methods (see ``_overridden``)."""
        symbols = self._symbols(facts)
        bases = {s.qualname: _builtin_bases(s) for s in symbols if s.kind == "class"}
        signed = []
        for symbol in symbols:
            if (facts.path, symbol.start_line) in self.in_family:
                continue
            base = _overridden(symbol, bases.get(symbol.parent or "", ()))
            if base is None or self.more[(facts.path, symbol.start_line)]:
                signed.append(symbol)
            else:
                self.overrides[(facts.path, symbol.start_line)] = base
        return signed

    def _symbols(self, facts: FileFacts) -> list[Symbol]:
        """The packed symbols; a run of definitions of one name (overloads, a property and its
        setter) is one symbol spanning them all, with the first one's signature."""
        packed: list[Symbol] = []
        runs: list[int] = []
        for symbol in facts.symbols:
            if not (self.private or _public(symbol, facts.language)):
                continue
            if packed and packed[-1].qualname == symbol.qualname:
                first = packed[-1]
                packed[-1] = replace(first, end_line=max(first.end_line, symbol.end_line))
                runs[-1] += 1
                continue
            packed.append(symbol)
            runs.append(0)
        for symbol, more in zip(packed, runs, strict=True):
            if more:
                self.more[(facts.path, symbol.start_line)] = more
        return packed

    def _grouped(self, facts: FileFacts, symbol: Symbol) -> bool:
        return _grouped_in_stub(facts, symbol, self.interfaces[facts.path])

    def _declared_again(self, facts: FileFacts) -> None:
        """Find the stub members whose name, parameters and return type are those of the last
        member of that name in an earlier class of the file (``x509.pyi``'s certificate, CRL
        and CSR classes share ``signature_algorithm_oid -> ObjectIdentifier``, ``extensions``
        and more): their claim names them and leaves the types to the first."""
        last: dict[str, tuple[str | None, str]] = {}
        for symbol in self._symbols(facts):
            if not self._grouped(facts, symbol) or symbol.parent is None:
                continue
            if not _bare(symbol) and self.label_uses[self.symbol_label(symbol)] >= STUB_ENTRY:
                continue  # a method many classes share goes to the dictionary whole
            # Compared as the pack writes them: what ``^`` stands for is what the reader
            # reads above.
            shape = symbol.signature
            before = last.get(symbol.name)
            alike = before is not None and before[0] != symbol.parent and before[1] == shape
            if alike and not self.more[(facts.path, symbol.start_line)]:
                self.again.add((facts.path, symbol.start_line))
            last[symbol.name] = (symbol.parent, shape)

    def _families(self, facts: FileFacts) -> None:
        """Find runs of ``MIN_FAMILY`` or more consecutive siblings that differ only in what a
        pattern can say once: functions with the same parameter names (a visitor's
        ``visit_x(o: nodes.X) -> T``, a stub's properties), or classes without packed members
        (an exception module's ``class XError(Error)``). Each run becomes one claim whose span
        runs from its first member to its last."""
        symbols = self._symbols(facts)
        parents = {s.parent for s in symbols if s.parent}
        run: list[Symbol] = []
        key: tuple[object, ...] | None = None
        for symbol in [*symbols, None]:
            interfaces = self.interfaces[facts.path]
            this = (
                None
                if symbol is None
                else _family_key(symbol, parents, facts, self.more, interfaces)
            )
            if this is not None and this == key:
                run.append(symbol)  # type: ignore[arg-type]
                continue
            if len(run) >= MIN_FAMILY:
                self.families[(facts.path, run[0].start_line)] = run
                self.in_family.update((facts.path, s.start_line) for s in run)
            run, key = ([symbol] if symbol is not None and this is not None else []), this

    def _family(
        self, members: list[Symbol], calls: Mapping[str, list[str]], depth: Mapping[str, int]
    ) -> int:
        """One claim for a family: a pattern, then the names grouped by what differs; the
        callees of all. Returns the claim's depth."""
        first = members[0]
        parent = first.parent or ""
        level = depth[parent] + 1 if parent in depth else 0
        member = f" in={parent}" if parent and parent not in depth else ""
        if first.kind == "class":
            by_bases: dict[str, list[str]] = {}
            for symbol in members:
                by_bases.setdefault(short_signature(symbol) or "", []).append(symbol.name)
            groups = "; ".join(f"{folded_names(names)}{bases}" for bases, names in by_bases.items())
            line = f"classes {groups}"
        else:
            splits = [split_parameters(short_signature(s) or "") for s in members]
            params = [split[0] if split else [] for split in splits]
            pattern = ", ".join(_common(column) for column in zip(*params, strict=True))
            is_async = "async " if first.signature.startswith("async ") else ""
            by_return: dict[str, list[str]] = {}
            for symbol in members:
                returns = f" -> {self.word(_returns(symbol))}" if _returns(symbol) else ""
                by_return.setdefault(returns, []).append(symbol.name)
            if len(by_return) == 1:
                returns, names = next(iter(by_return.items()))
                line = f"{is_async}{folded_names(names)}({pattern}){returns}"
            else:
                groups = "; ".join(
                    f"{folded_names(names)}{returns}" for returns, names in by_return.items()
                )
                line = f"{is_async}each({pattern}): {groups}"
        targets = list(dict.fromkeys(t for s in members for t in calls.get(s.qualname, [])))
        called = f" calls {','.join(self.word(t) for t in targets)}" if targets else ""
        self._claim(
            f"{line}{member}{called}",
            first.start_line,
            max(s.end_line for s in members),
            level,
        )
        return level

    def _small(
        self, line: str, start: int, end: int, level: int, stub: StubMember | None = None
    ) -> None:
        """Hold a small definition's line (and, for a stub's definition, its parts): a run of
        ``MIN_FAMILY`` or more at one depth is one claim (``_flush_small``)."""
        if self._held and self._held[-1][3] != level:
            self._flush_small()
        self._held.append((line, start, end, level, stub))

    def _stub_member(self, path: str, symbol: Symbol, variants: int) -> StubMember | None:
        """A stub definition's parts for ``grouped_members``, through the dictionary; None for
        one whose signature does not split (it keeps its label) or an ``async`` one."""
        split = split_parameters(short_signature(symbol) or "")
        if split is None or symbol.signature.startswith("async "):
            return None
        params, tail = split
        if tail and not tail.startswith(" -> "):
            return None
        name = self.word(symbol.name) + (f"+{variants}" if variants else "")
        returns = self.word(tail.removeprefix(" -> ")) if tail else ""
        written = ", ".join(params)
        if written not in self.words:
            written = ", ".join(self.param(p) for p in params)
        label = self.symbol_label(symbol)
        entry = label if label in self.ids and not variants else ""
        again = (path, symbol.start_line) in self.again
        return StubMember(name, self.word(written), returns, "" if again else entry, again)

    def _flush_small(self) -> None:
        """Write the held small definitions: one claim, labels joined by ``; `` and one span
        from the first to the last, when there are enough of them; else a claim each. A
        reviewer reads a one-line definition's span as fast as a run's, and a span and a
        line of its own cost a small definition as much as its label."""
        held, self._held = self._held, []
        stubs = [h[4] for h in held if h[4] is not None]
        if len(stubs) == len(held) >= MIN_STUB_RUN:
            # A stub's run: each return type once (issue 31: ``x509.pyi``'s classes of
            # properties, whose return types were most of their text).
            line = grouped_members(stubs)
            self.grouped.add(line)
            self._claim(line, held[0][1], max(h[2] for h in held), held[0][3])
            return
        if len(held) >= MIN_FAMILY:
            line = "; ".join(h[0] for h in held)
            self._claim(line, held[0][1], max(h[2] for h in held), held[0][3])
            return
        for line, start, end, level, _stub in held:
            self._claim(line, start, end, level)

    def _claim(self, line: str, start: int, end: int, level: int = 0) -> None:
        """Add a node line: indentation, its evidence span, then what it claims."""
        if self._held:
            self._flush_small()
        span = str(start) if start == end else f"{start}+{end - start}"
        self.body.append(f"{' ' * level}{span} {line}")
        self.claims += 1

    def add_file(self, facts: FileFacts) -> None:
        folder = _folder(facts.path)
        path = (
            f"{self.words[folder]}/{facts.path[len(folder) + 1 :]}"
            if folder in self.words
            else facts.path
        )
        # The file's own claim: its evidence is the whole file, which ``NL`` already says.
        self.body.append(
            f"F {path} {facts.language} {facts.line_count}L #{facts.source_hash[:HASH_DIGITS]}"
        )
        self.claims += 1
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
        calls = _calls_by_caller(facts, symbols)
        depth: dict[str, int] = {}
        above: dict[int, str] = {}  # the signature last written at each depth
        run: list[Symbol] = []  # consecutive overrides of a builtin base, written as one claim
        for symbol in symbols:
            family = self.families.get((facts.path, symbol.start_line))
            if (facts.path, symbol.start_line) in self.in_family:
                if run:
                    level = self._overrides(facts.path, run, calls, depth)
                    above = {k: v for k, v in above.items() if k < level}
                    run = []
                if family is not None:
                    level = self._family(family, calls, depth)
                    above = {k: v for k, v in above.items() if k < level}
                continue
            base = self.overrides.get((facts.path, symbol.start_line))
            opener = (facts.path, run[0].start_line) if run else None
            if opener and (symbol.parent, base) != (run[0].parent, self.overrides[opener]):
                # The line above is now the run's, so no ``^`` may refer past it.
                level = self._overrides(facts.path, run, calls, depth)
                above = {k: v for k, v in above.items() if k < level}
                run = []
            if base is not None:
                run.append(symbol)
                continue
            # A member is indented one step under its class (the line above it at lower depth);
            # a member whose class is not packed (another file, private) says so with ``in=``.
            level = depth[symbol.parent] + 1 if symbol.parent in depth else 0
            member = f" in={symbol.parent}" if symbol.parent and symbol.parent not in depth else ""
            extra = "".join(facets.pop((symbol.start_line, symbol.end_line), []))
            targets = calls.get(symbol.qualname, [])
            # The calls are part of the caller's claim: its span holds every call site.
            called = f" calls {','.join(self.word(t) for t in targets)}" if targets else ""
            label = self.symbol_label(symbol)
            # A sibling with the signature of the one above it is its name and ``^``.
            shape = _shape(symbol)
            if shape is not None and above.get(level) == shape and label not in self.ids:
                label = f"{self.word(symbol.name)} ^"
            above = {k: v for k, v in above.items() if k < level}
            if shape is not None:
                above[level] = shape
            variants = self.more[(facts.path, symbol.start_line)]
            line = f"{label}{f' +{variants}' if variants else ''}{member}{extra}{called}"
            # A constructor keeps a claim of its own: it is what a class is made with (in a
            # stub, where every definition is a signature, it joins its siblings' run).
            stub = facts.path.endswith(".pyi")
            interface = self._grouped(facts, symbol)
            if (
                symbol.kind != "class"
                and (symbol.name != "__init__" or stub)
                and (interface or symbol.end_line - symbol.start_line < SMALL_LINES)
            ):
                plain = not (member or extra or called)
                parts = (
                    self._stub_member(facts.path, symbol, variants) if interface and plain else None
                )
                self._small(line, symbol.start_line, symbol.end_line, level, parts)
            else:
                self._claim(line, symbol.start_line, symbol.end_line, level)
            depth.setdefault(symbol.qualname, level)
        if run:
            self._overrides(facts.path, run, calls, depth)
        for boundary in boundaries:
            line = f"{BOUNDARY_LABELS[boundary.kind]} {boundary.detail}"
            self._claim(line, boundary.line, boundary.end_line)
        modules = grouped_modules(facts)
        if modules:
            # One claim for the import block: the modules in order, names left to evidence.
            first = min(i.line for i in facts.imports)
            last = max(i.end_line for i in facts.imports)
            self._claim(f"imports {modules}", first, last)
        if self._held:
            self._flush_small()

    def _overrides(
        self,
        path: str,
        run: list[Symbol],
        calls: Mapping[str, list[str]],
        depth: Mapping[str, int],
    ) -> int:
        """One claim for a run of methods overriding a builtin base's: the base, then the
        names grouped by return type, then their callees; the span runs from the first to the
        last. Their parameters are the builtin's, so only a different return type is news.
        Returns the claim's depth."""
        parent = run[0].parent or ""
        level = depth[parent] + 1 if parent in depth else 0
        by_return: dict[str, list[str]] = {}
        for symbol in run:
            returns = f" -> {self.word(_returns(symbol))}" if _returns(symbol) else ""
            by_return.setdefault(returns, []).append(self.word(symbol.name))
        groups = "; ".join(f"{','.join(names)}{returns}" for returns, names in by_return.items())
        targets = list(dict.fromkeys(t for s in run for t in calls.get(s.qualname, [])))
        called = f" calls {','.join(self.word(t) for t in targets)}" if targets else ""
        member = f" in={parent}" if parent not in depth else ""
        base = self.overrides[(path, run[0].start_line)]
        line = f"overrides {base}: {groups}{member}{called}"
        self._claim(line, run[0].start_line, max(s.end_line for s in run), level)
        return level

    def symbol_label(self, symbol: Symbol) -> str:
        """Kind, name and signature, the name written once; the whole label, or its name,
        parameters and return type, through the dictionary where they are in it."""
        short = short_signature(symbol)
        if short is not None:
            is_async = symbol.signature.startswith("async ")
            kind = "class " if symbol.kind == "class" else "async " if is_async else ""
            if kind + symbol.name + short in self.words:
                return self.words[kind + symbol.name + short]
            split = split_parameters(short)
            if split is not None:
                params, tail = split
                returns = tail.removeprefix(" -> ")
                tail = f" -> {self.word(returns)}" if tail.startswith(" -> ") else tail
                short = f"({', '.join(self.param(p) for p in params)}){tail}"
            return kind + self.word(symbol.name) + short
        # Other languages' signatures name their kind themselves (``func``, ``interface``);
        # a parameter list written one per line leaves ``( a, b, )`` once joined.
        sig = _TIDY.sub(lambda m: m[1] or m[2], abridged(symbol.signature))
        if sig in self.words:
            return self.words[sig]
        match = re.search(rf"(?<![\w$]){re.escape(symbol.name)}(?![\w$])", sig)
        if match is None:
            return f"{self.word(symbol.name)} {sig}"
        return sig[: match.start()] + self.word(symbol.name) + sig[match.end() :]

    def _runs_to_dictionary(self) -> None:
        """A run of small definitions written alike in several places (classes that share an
        interface: ``derive; derive_into; verify``) goes to the dictionary as one entry, when
        that saves tokens; the entry's text may itself hold ``dN`` ids."""
        ran = Counter(_run_text(line) for line in self.body)
        del ran[""]
        known = set(self.words)
        self._choose(ran)
        new = {text: ident for text, ident in self.words.items() if text not in known}
        for index, line in enumerate(self.body):
            text = _run_text(line)
            if text in new:
                self.body[index] = line[: len(line) - len(text)] + new[text]
        self._run_endings_to_dictionary()

    def _run_endings_to_dictionary(self) -> None:
        """The same for the shared ending of runs that differ in their first labels (classes
        with their own constructors and a common ``derive; derive_into; verify``): the
        longest ending chosen replaces it in each run."""
        endings: Counter[str] = Counter()
        for line in self.body:
            labels = _run_text(line).split("; ")
            endings.update("; ".join(labels[cut:]) for cut in range(1, len(labels) - 1))
        before = dict(self.words)
        self._choose(endings)
        chosen = {text for text in self.words if text not in before}
        self.words = before  # only the endings a run ends with get an id, in order of use
        for index, line in enumerate(self.body):
            labels = _run_text(line).split("; ")
            for cut in range(1, len(labels) - 1):
                ending = "; ".join(labels[cut:])
                if ending in chosen:
                    if ending not in self.words:
                        self.words[ending] = f"d{len(self.words)}"
                        self.ids.add(self.words[ending])
                    self.body[index] = f"{line[: len(line) - len(ending)]}{self.words[ending]}"
                    break

    def _inline_single_uses(self) -> None:
        """Write in place each entry used once (its planned uses folded into a run's entry),
        and drop entries no longer used: their line would cost more than it saves. An id is
        counted wherever it stands as a word, so a name that reads like one keeps it. Each pass
        reads the text once; an entry used inside another entry waits for a pass of its own."""
        while True:
            uses: Counter[str] = Counter()
            lines: dict[str, int] = {}
            for index, line in enumerate(self.body):
                for found in _IDENT.finditer(line):
                    uses[found[0]] += 1
                    lines[found[0]] = index
            for text in self.words:
                uses.update(found[0] for found in _IDENT.finditer(text))
            single = {i: t for t, i in self.words.items() if uses[i] == 0 or i in lines}
            single = {i: t for i, t in single.items() if uses[i] <= 1}
            if not single:
                inside = [(t, i) for t, i in self.words.items() if uses[i] == 1]
                if not inside:
                    return
                text, ident = inside[0]  # used once, in another entry's text
                del self.words[text]
                word = re.compile(rf"(?<![\w.]){ident}(?!\w)")
                self.words = {_written(word, t, text): i for t, i in self.words.items()}
                self.ids.discard(ident)
                continue
            for ident, text in single.items():
                del self.words[text]
                self.ids.discard(ident)
                if ident in lines:
                    word = re.compile(rf"(?<![\w.]){ident}(?!\w)")
                    at = lines[ident]
                    self.body[at] = _written(word, self.body[at], text)

    def word(self, text: str) -> str:
        return self.words.get(text, text)

    def text(self, files: int) -> str:
        self._runs_to_dictionary()
        runs = frozenset(
            ident for text, ident in self.words.items() if "; " in text or text in self.grouped
        )
        self.body, merged = fold_class_runs(self.body, runs | self.grouped)
        self.claims -= merged
        self._inline_single_uses()
        header = f"MP2 files={files} claims={self.claims} evidenced={self.claims}"
        dictionary = [f"{ident} {text}" for text, ident in self.words.items()]
        return "\n".join([header, *dictionary, *self.body]) + "\n"


def _written(word: re.Pattern[str], line: str, text: str) -> str:
    """``line`` with the id ``word`` matches replaced by the entry's ``text`` (taken as it is,
    not as a replacement template)."""
    return word.sub(lambda _match: text, line)


def _run_text(line: str) -> str:
    """What a body line of a run of small definitions claims (after its span), else ``""``."""
    text = line.lstrip(" ").partition(" ")[2]
    return text if "; " in text and not line.startswith("F ") else ""


def _grouped_in_stub(facts: FileFacts, symbol: Symbol, interfaces: frozenset[str]) -> bool:
    """Whether ``symbol`` is written by ``grouped_members``: a plain definition of a stub, or
    a method of a Protocol or abstract class other than its constructor (all signature, as a
    stub's: see ``pack_stubs``)."""
    if symbol.kind == "class" or symbol.signature.startswith("async "):
        return False
    if facts.path.endswith(".pyi"):
        return True
    return symbol.name != "__init__" and symbol.parent in interfaces


def _bare(symbol: Symbol) -> bool:
    """Whether a Python definition takes no parameters (beyond ``self`` or ``cls``)."""
    split = split_parameters(short_signature(symbol) or "")
    return split is not None and not split[0]


def _family_key(
    symbol: Symbol,
    parents: set[str],
    facts: FileFacts,
    more: Counter[tuple[str, int]],
    interfaces: frozenset[str],
) -> tuple[object, ...] | None:
    """What the siblings of a family share, or None for a symbol that stands alone: a class
    with packed members, a definition with overloads, a signature of another language."""
    short = short_signature(symbol)
    if short is None or more[(facts.path, symbol.start_line)]:
        return None
    if symbol.kind == "class":
        return None if symbol.qualname in parents else (symbol.parent, "class")
    if _grouped_in_stub(facts, symbol, interfaces):
        return None  # a stub's run groups by return type itself
    split = split_parameters(short)
    if split is None or symbol.name == "__init__":
        return None
    names = tuple(p.split(":", 1)[0].split("=", 1)[0] for p in split[0])
    return (symbol.parent, symbol.signature.startswith("async "), names)


def _common(column: tuple[str, ...]) -> str:
    """One parameter of a family's pattern: as written when every member writes it alike,
    else what they share up to the first difference (cut after a ``.``), then ``…``."""
    if len(set(column)) == 1:
        return column[0]
    prefix = column[0]
    for text in column[1:]:
        while not text.startswith(prefix):
            prefix = prefix[:-1]
    dot = max(prefix.rfind("."), prefix.rfind(": ") + 1)
    return f"{prefix[: dot + 1].rstrip()}…" if dot >= 0 else "…"


def _builtin_bases(cls: Symbol) -> tuple[str, ...]:
    """The bases of a Python class that are builtin types (``str``, ``dict``, ``Exception``)."""
    short = short_signature(cls)
    split = split_parameters(short) if short else None
    if split is None:
        return ()
    return tuple(b for b in split[0] if isinstance(getattr(builtins, b, None), type))


def _overridden(symbol: Symbol, bases: tuple[str, ...]) -> str | None:
    """The builtin base whose method ``symbol`` overrides, if it is a plain Python method that
    does (``__init__`` keeps its signature: it is the class's own constructor)."""
    if symbol.kind == "class" or symbol.name == "__init__" or short_signature(symbol) is None:
        return None
    if symbol.signature.startswith("async "):
        return None
    return next((b for b in bases if hasattr(getattr(builtins, b), symbol.name)), None)


def _returns(symbol: Symbol) -> str:
    """A Python function's return annotation, or ``""``."""
    split = split_parameters(short_signature(symbol) or "")
    tail = split[1] if split is not None else ""
    return tail.removeprefix(" -> ") if tail.startswith(" -> ") else ""


def _shape(symbol: Symbol) -> str | None:
    """A Python function's signature without its name (``async (a: int) -> T``), else None."""
    short = short_signature(symbol)
    if short is None or symbol.kind == "class":
        return None
    return ("async " if symbol.signature.startswith("async ") else "") + short


def _calls_by_caller(facts: FileFacts, symbols: list[Symbol]) -> dict[str, list[str]]:
    """Packed callees of each packed caller, in first-call order, each named once.

    A callee is named by its name when no other packed symbol of the file has that name, else
    by its qualified name.
    """
    packed = {s.qualname for s in symbols}
    names = Counter(s.name for s in symbols)
    by_qualname = {s.qualname: s for s in symbols}
    found: dict[str, list[str]] = {}
    for call in facts.calls:
        if call.caller not in packed or call.callee not in packed:
            continue
        callee = by_qualname[call.callee]
        ref = callee.name if names[callee.name] == 1 else callee.qualname
        targets = found.setdefault(call.caller or "", [])
        if ref not in targets:
            targets.append(ref)
    return found


def pack_facts(facts: Iterable[FileFacts], *, private: bool = False) -> Pack:
    """The meaning pack of already extracted facts (files in path order)."""
    files = sorted((interface_facts(f) for f in facts), key=lambda f: f.path)
    writer = _PackWriter(files, private)
    for file_facts in files:
        writer.add_file(file_facts)
    return Pack(writer.text(len(files)), writer.claims, writer.claims)


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
