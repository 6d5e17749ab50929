"""Interface-only definitions in a meaning pack: their parameters by name, types left to the span.

A stub (``.pyi``), a ``Protocol`` or an abstract base class is all signature: read verbatim it
is already close to what a pack would write, so issue 31 measured such files saving under
0.70 (cryptography's ``x509.pyi`` 0.47, ``kdf.pyi`` 0.53). What a reviewer needs of such a
file first is which operations exist, what they take and what they give back; the types a
parameter takes are one span away. So in these definitions each parameter is written by name
(``name?`` when it has a default, ``*``, ``/``, ``*args`` and ``**kwargs`` as they are) and
the return type is kept. Definitions with a body of their own keep their whole signature.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from semspec.knowledge.code_index.facts import FileFacts, Symbol

INTERFACE_BASES = frozenset(
    {"Protocol", "typing.Protocol", "ABC", "abc.ABC", "metaclass=ABCMeta", "metaclass=abc.ABCMeta"}
)
"""Bases (as a class signature writes them) that make every method of the class interface."""
_CLASS_BASES = re.compile(r"class \w+\((?P<bases>.*)\)$")


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
    returns = _return_text(symbol.signature)
    return f"{head}({', '.join(names)}){returns}"


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
