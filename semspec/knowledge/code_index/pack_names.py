"""Names of a folded claim written once where they share a beginning or an ending.

``visit_int_expr`` and ``visit_str_expr`` are ``visit_{int,str}_expr``; ``TimeoutError`` and
``ClosedError`` are ``{Timeout,Closed}Error``. A cut falls only at a word boundary (after
``_``, before a capital), so each name can be read back whole.
"""

from __future__ import annotations


def folded_names(names: list[str]) -> str:
    """``names`` joined by commas; a beginning or an ending all share, cut at a ``_`` or a
    capital, is written once: ``visit_{int_expr,str_expr}``, ``{Timeout,Closed}Error``."""
    if len(names) < 2:
        return ",".join(names)
    head = _shared(names)
    tail = _shared_end([n[len(head) :] for n in names])
    if tail and any(len(n) == len(head) + len(tail) for n in names):
        tail = ""  # a name would be empty inside the braces
    if not head and not tail:
        return ",".join(names)
    middles = [n[len(head) : len(n) - len(tail)] for n in names]
    return f"{head}{{{','.join(middles)}}}{tail}"


def _shared(names: list[str]) -> str:
    """The longest beginning of every name that ends at a word boundary (after ``_``, or
    before a capital), short of the whole of any name."""
    prefix = names[0]
    for name in names[1:]:
        while not name.startswith(prefix):
            prefix = prefix[:-1]
    for cut in range(min(len(prefix), min(len(n) for n in names) - 1), 0, -1):
        if prefix[cut - 1] == "_" or (
            all(n[cut].isupper() for n in names) and not prefix[cut - 1].isupper()
        ):
            return prefix[:cut]
    return ""


def _shared_end(names: list[str]) -> str:
    """The longest ending of every name that starts at a word boundary (a capital after a
    lower-case letter, or after ``_``), short of the whole of any name."""
    suffix = names[0]
    for name in names[1:]:
        while not name.endswith(suffix):
            suffix = suffix[1:]
    for size in range(min(len(suffix), min(len(n) for n in names) - 1), 0, -1):
        starts = [len(n) - size for n in names]
        if all(
            n[at] == "_" or (n[at].isupper() and n[at - 1].islower())
            for n, at in zip(names, starts, strict=True)
        ):
            return suffix[-size:]
    return ""


def folded_runs(names: list[str]) -> str:
    """``names`` in order, each stretch of neighbours that share a beginning folded as
    ``folded_names`` folds it: ``signature,tbs_{certificate,precertificate}_bytes``."""
    whole = folded_names(names)
    if "{" in whole:
        return whole
    stretches: list[list[str]] = []
    for name in names:
        if stretches and _shared([*stretches[-1], name]):
            stretches[-1].append(name)
        else:
            stretches.append([name])
    return ",".join(folded_names(stretch) for stretch in stretches)
