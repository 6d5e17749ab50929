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
    interfaces = {s.qualname for s in facts.symbols if s.kind == "class" and _is_interface(s)}
    if not stub and not interfaces:
        return facts
    symbols = [
        replace(s, signature=named_parameters(s))
        if s.kind != "class" and (stub or (s.parent in interfaces and s.name != "__init__"))
        else s
        for s in facts.symbols
    ]
    return replace(facts, symbols=symbols)


_INTERFACES: dict[int, tuple[FileFacts, frozenset[str]]] = {}


def interface_classes(facts: FileFacts) -> frozenset[str]:
    """The qualified names of ``facts``' Protocol and abstract classes (Python only)."""
    cached = _INTERFACES.get(id(facts))
    if cached is not None and cached[0] is facts:
        return cached[1]
    found = frozenset(
        s.qualname
        for s in facts.symbols
        if facts.language == "python" and s.kind == "class" and _is_interface(s)
    )
    if len(_INTERFACES) > 256:
        _INTERFACES.clear()
    _INTERFACES[id(facts)] = (facts, found)
    return found


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
    """A stub definition as a grouped run writes it: its name (``+N`` when overloads follow),
    its parameters by name as written between the brackets (``""`` for none), and its return
    type (``""`` when it has none)."""

    name: str
    params: str
    returns: str
    entry: str = ""
    """The dictionary id of the whole label, when it has one (a label several classes share):
    then the member is written as that id, a group of its own."""
    again: bool = False
    """Declared alike (parameters, return type) by an earlier class of the file: written by
    name in the run's ``^`` group."""


def grouped_members(members: list[StubMember]) -> str:
    """A run of stub definitions with each return type written once: ``a(x),b,c -> bytes;
    d -> int``, groups in order of first use. A definition without parameters (a property, as
    stubs mostly declare them) is its name alone; members with the same parameters share them
    when their names fold (``load_{pem,der}_crl(data, backend?)``)."""
    typed = {f" {m.returns}" for m in members if not (m.again or m.entry)}
    by_returns: dict[str, list[StubMember]] = {}
    for member in members:
        key = member.entry or f" {member.returns}"
        if member.again and key not in typed:
            key = "^"  # a type the run writes anyway costs nothing more to name
        by_returns.setdefault(key, []).append(member)
    groups = []
    for key, group in by_returns.items():
        if key == "^":
            groups.append(f"{folded_runs([m.name for m in group])} ^")
            continue
        if not key.startswith(" "):
            groups.append(key)
            continue
        returns = key[1:]
        by_params: dict[str, list[str]] = {}
        for member in group:
            by_params.setdefault(member.params, []).append(member.name)
        labels = []
        for params, names in by_params.items():
            if not params:
                labels.append(folded_runs(names))
                continue
            folded = folded_names(names)
            if "{" in folded or len(names) == 1:
                labels.append(f"{folded}({params})")
            else:
                labels += [f"{name}({params})" for name in names]
        groups.append(",".join(labels) + (f": {returns}" if returns else ""))
    return "; ".join(groups)
