"""Interface-only definitions in a meaning pack: their parameters by name, types left to the span.

A stub (``.pyi``), a ``Protocol`` or an abstract base class is all signature: read verbatim it
is already close to what a pack would write, so issue 31 measured such files saving under
0.70 (cryptography's ``x509.pyi`` 0.47, ``kdf.pyi`` 0.53). What a reviewer needs of such a
file first is which operations exist, what they take and what they give back; the types a
parameter takes are one span away. So in these definitions each parameter is written by name
(``name?`` when it has a default, ``*``, ``/``, ``*args`` and ``**kwargs`` as they are) and
the return type is kept, each name in it by its last dotted part (``x509.Name`` as ``Name``,
``datetime.datetime`` as ``datetime``): the module is in the file's imports claim and the
span. Definitions with a body of their own keep their whole signature.

Their definitions, however many lines each spans, are one run and, when a class holds them,
one claim with the class (``grouped_members``): each return type written once, members
declared exactly as a class above declares them named in a ``^`` group. Issue 31's
``x509.pyi``, some 60 properties of five classes that share a dozen of them, saves 0.70 so.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from semspec.knowledge.code_index.facts import FileFacts, Symbol
from semspec.knowledge.code_index.pack_names import folded_names, folded_runs

INTERFACE_BASES = frozenset(
    {"Protocol", "typing.Protocol", "ABC", "abc.ABC", "metaclass=ABCMeta", "metaclass=abc.ABCMeta"}
)
"""Bases (as a class signature writes them) that make every method of the class interface."""
_CLASS_BASES = re.compile(r"class \w+\((?P<bases>.*)\)$")
_QUALIFIED = re.compile(r"'[^']*'|\"[^\"]*\"|(?<![\w.])(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")
"""A quoted string (kept) or the dotted qualifier of a name (``x509.`` of ``x509.Name``)."""


def interface_facts(facts: FileFacts) -> FileFacts:
    """``facts`` with the signatures of its interface-only definitions written by parameter
    names: every function of a ``.pyi`` stub, every method of a Protocol or ABC."""
    if facts.language != "python":
        return facts
    stub = facts.path.endswith(".pyi")
    interfaces = interface_classes(facts)
    if not stub and not interfaces:
        return facts
    symbols = [
        replace(s, signature=named_parameters(s))
        if s.kind != "class" and (stub or (s.parent in interfaces and s.name != "__init__"))
        else s
        for s in facts.symbols
    ]
    return replace(facts, symbols=symbols)


def interface_classes(facts: FileFacts) -> frozenset[str]:
    """The qualified names of ``facts``' Protocol and abstract classes (Python only)."""
    if facts.language != "python":
        return frozenset()
    return frozenset(s.qualname for s in facts.symbols if s.kind == "class" and _is_interface(s))


def _is_interface(cls: Symbol) -> bool:
    match = _CLASS_BASES.match(cls.signature)
    if match is None:
        return False
    bases = {b.strip() for b in match["bases"].split(",")}
    return bool(bases & INTERFACE_BASES) or any(
        b.startswith(("Protocol[", "typing.Protocol[")) for b in bases
    )


def named_parameters(symbol: Symbol) -> str:
    """``symbol``'s signature with each parameter by its name alone; the signature as it is
    when Python cannot parse it as a definition."""
    try:
        tree = ast.parse(f"{symbol.signature}: ...")
    except SyntaxError:
        return symbol.signature
    function = tree.body[0] if tree.body else None
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return symbol.signature
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaulted = len(positional) - len(arguments.defaults)
    names = [f"{a.arg}?" if i >= defaulted else a.arg for i, a in enumerate(positional)]
    if arguments.posonlyargs:
        names.insert(len(arguments.posonlyargs), "/")
    if arguments.vararg is not None:
        names.append(f"*{arguments.vararg.arg}")
    elif arguments.kwonlyargs:
        names.append("*")
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        names.append(f"{argument.arg}?" if default is not None else argument.arg)
    if arguments.kwarg is not None:
        names.append(f"**{arguments.kwarg.arg}")
    head = symbol.signature[: symbol.signature.index("(")]
    returns = _QUALIFIED.sub(_unqualified, _return_text(symbol.signature))
    return f"{head}({', '.join(names)}){returns}"


def _unqualified(match: re.Match[str]) -> str:
    return match[0] if match[0][:1] in "'\"" else ""


def _return_text(signature: str) -> str:
    """`` -> T`` as the signature writes it (after its parameter list's closing bracket)."""
    depth = 0
    for index, char in enumerate(signature):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0 and char == ")":
                return signature[index + 1 :]
    return ""


@dataclass(frozen=True)
class StubMember:
    """An interface definition as a grouped run writes it: its name (``+N`` when overloads
    follow), its parameters by name as written between the brackets (``""`` for none), and its
    return type (``""`` when it has none)."""

    name: str
    params: str
    returns: str
    entry: str = ""
    """The dictionary id of the whole label, when it has one (a label several classes share):
    then the member is written as that id, a group of its own."""
    again: bool = False
    """Declared alike (parameters, return type) by an earlier class of the file: named in the
    run's ``^`` group unless the run writes its return type anyway."""


def grouped_members(members: list[StubMember]) -> str:
    """A run of interface definitions with each return type written once, after a colon as an
    annotation (``a(x),b,c: bytes; d: int``; in cl100k ``: `` costs less than `` -> ``), groups
    in order of first use, then ``names ^`` for members declared as a class above declares
    them. A definition without parameters (a property, as stubs mostly declare them) is its
    name alone; members with the same parameters share them when their names fold
    (``load_{pem,der}_crl(data, backend?)``)."""
    typed = {m.returns for m in members if not (m.again or m.entry)}
    groups: dict[tuple[str, str], list[StubMember]] = {}
    for member in members:
        if member.entry:
            key = ("entry", member.entry)
        elif member.again and member.returns not in typed:
            key = ("again", "")
        else:
            key = ("returns", member.returns)  # a type the run writes anyway: no ``^`` needed
        groups.setdefault(key, []).append(member)
    return "; ".join(_group(kind, value, group) for (kind, value), group in groups.items())


def _group(kind: str, value: str, members: list[StubMember]) -> str:
    if kind == "entry":
        return value
    if kind == "again":
        return f"{folded_runs([m.name for m in members])} ^"
    by_params: dict[str, list[str]] = {}
    for member in members:
        by_params.setdefault(member.params, []).append(member.name)
    labels = []
    for params, names in by_params.items():
        if not params:
            labels.append(folded_runs(names))
            continue
        folded = folded_names(names)
        if "{" in folded or len(names) == 1:
            labels.append(f"{folded}({params})")
        else:  # ``a,b(x)`` would read as if only ``b`` took ``x``
            labels += [f"{name}({params})" for name in names]
    return ",".join(labels) + (f": {value}" if value else "")
