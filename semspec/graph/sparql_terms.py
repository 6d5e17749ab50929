"""How data gets into SPARQL text: the one place that writes rdflib terms as SPARQL, and the
``VALUES`` block that binds query variables to them.

Callers never format data (a path, an SOP id, a task id) into a query; they pass terms in
``bindings`` and the store puts them here. Every IRI is checked against the characters SPARQL's
``IRIREF`` excludes, every literal is escaped by the rules of ``STRING_LITERAL2`` (one line, so no
long-string edge cases), language tags and blank node labels are checked by their grammar, and
anything else is refused. rdflib's ``n3()`` is not used because it writes a literal's datatype IRI
unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rdflib.namespace import XSD
from rdflib.term import BNode, Literal, Node, URIRef

from semspec.core.errors import InputError

Bindings = Mapping[str, Node | Sequence[Node]]
"""Variable name (without ``?``) → one term, or several (one solution each)."""

# IRIREF ::= '<' ([^<>"{}|^`\]-[#x00-#x20])* '>'
_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_LANGUAGE = re.compile(r"[A-Za-z]+(?:-[A-Za-z0-9]+)*\Z")
_BLANK_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_-])?\Z")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WHERE = re.compile(r"\bWHERE\s*\{", re.IGNORECASE)
_XSD_STRING = str(XSD.string)


def iri_text(iri: str) -> str:
    """``<iri>``, or ``InputError`` when ``iri`` holds a character SPARQL does not allow."""
    if not iri or _IRI_FORBIDDEN.search(iri):
        raise InputError(
            f"{iri!r} is not a valid IRI",
            hint='IRIs may not hold spaces, control characters or any of <>"{}|^`\\',
        )
    return f"<{iri}>"


def literal_text(literal: Literal, *, escapes_first: bool = False) -> str:
    """``literal`` as a one-line SPARQL literal with its language tag or datatype.

    ``escapes_first`` is for a parser that expands ``\\uXXXX`` over the whole text before it
    parses (rdflib does, as SPARQL 1.1 section 19.2 allows; Oxigraph expands them inside
    literals only): a backslash is then written as two escaped ones so that a value holding
    ``\\u0022`` keeps it. Either way a doubled backslash cannot end the literal early.
    """
    backslash = "\\u005C\\u005C" if escapes_first else "\\\\"
    lexical = (
        str(literal)
        .replace("\\", backslash)
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )
    if literal.language:
        if not _LANGUAGE.match(literal.language):
            raise InputError(f"{literal.language!r} is not a language tag", hint="e.g. en, en-GB")
        return f'"{lexical}"@{literal.language}'
    datatype = literal.datatype
    if datatype is None or str(datatype) == _XSD_STRING:
        return f'"{lexical}"'
    return f'"{lexical}"^^{iri_text(str(datatype))}'


def term_text(term: object, *, blank_nodes: bool = True, escapes_first: bool = False) -> str:
    """An IRI, literal or (where SPARQL takes one) blank node as SPARQL text."""
    if isinstance(term, URIRef):
        return iri_text(str(term))
    if isinstance(term, Literal):
        return literal_text(term, escapes_first=escapes_first)
    if isinstance(term, BNode) and blank_nodes:
        if not _BLANK_LABEL.match(str(term)):
            raise InputError(f"{str(term)!r} is not a blank node label", hint="use [A-Za-z0-9_-]")
        return f"_:{term}"
    raise InputError(
        f"cannot write {term!r} into SPARQL: only IRIs and literals are allowed",
        hint="pass rdflib URIRef or Literal values",
    )


def values_block(bindings: Bindings, *, escapes_first: bool = False) -> str:
    """One ``VALUES`` clause per variable (their cross product is what the query sees)."""
    clauses = []
    for name, value in bindings.items():
        if not _VARIABLE.match(name):
            raise InputError(f"{name!r} is not a SPARQL variable name", hint="use [A-Za-z0-9_]")
        # A str is a Sequence too; taking it letter by letter would bind the wrong thing.
        if isinstance(value, Node | str):
            terms: Sequence[object] = [value]
        else:
            terms = value
        # VALUES takes no blank nodes (DataBlockValue is an IRI, a literal or UNDEF).
        rendered = " ".join(
            term_text(t, blank_nodes=False, escapes_first=escapes_first) for t in terms
        )
        clauses.append(f"VALUES ?{name} {{ {rendered} }}")
    return "\n".join(clauses)


def bind(sparql: str, bindings: Bindings | None, *, escapes_first: bool = False) -> str:
    """``sparql`` with ``bindings`` as ``VALUES`` at the start of its (first) ``WHERE`` group,
    so they constrain every pattern of the query as if the variables were bound beforehand
    (``escapes_first`` as in ``literal_text``)."""
    if not bindings:
        return sparql
    where = _WHERE.search(sparql)
    if where is None:
        raise InputError(
            "a query with bindings needs a WHERE { ... } group to put them in",
            hint="write the query as SELECT ... WHERE { ... }",
        )
    block = values_block(bindings, escapes_first=escapes_first)
    return f"{sparql[: where.end()]}\n{block}\n{sparql[where.end() :]}"
