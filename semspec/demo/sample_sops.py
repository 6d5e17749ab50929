"""The SOPs the demo's sample repository carries under ``.semspec/sources/docs/sops/``.

One applies to the calculator's Python files (its requirements reach both agents and the
reviewer cites it); the other applies to Markdown pages only, so it stays out of the tasks'
context: the demo shows that ``applies_to`` selects.
"""

from __future__ import annotations

from pathlib import PurePosixPath

SOPS_DIR = PurePosixPath(".semspec/sources/docs/sops")

CALC_SOP_ID = "calc-functions"
CALC_REQUIREMENTS = (
    "Every public function has a docstring saying what it returns.",
    "Functions take numbers and return numbers; no printing, no file access.",
)
DOCS_SOP_ID = "docs-pages"
DOCS_REQUIREMENTS = ("Every page starts with a level-one heading.",)


def _sop(
    sop_id: str, severity: str, globs: list[str], title: str, summary: str, reqs: tuple[str, ...]
) -> str:
    listed = "\n".join(f"{n}. {r}" for n, r in enumerate(reqs, 1))
    return (
        f"---\nid: {sop_id}\ncategory: sop\napplies_to: [{', '.join(repr(g) for g in globs)}]\n"
        f"severity: {severity}\nsummary: {summary}\n---\n\n# {title}\n\n"
        f"## Requirements\n{listed}\n"
    )


SAMPLE_SOPS: dict[str, str] = {
    str(SOPS_DIR / f"{CALC_SOP_ID}.md"): _sop(
        CALC_SOP_ID,
        "error",
        ["**/*.py"],
        "Calculator functions",
        "Calculator functions are pure and say what they return.",
        CALC_REQUIREMENTS,
    ),
    str(SOPS_DIR / f"{DOCS_SOP_ID}.md"): _sop(
        DOCS_SOP_ID,
        "warning",
        ["**/*.md"],
        "Documentation pages",
        "Pages are easy to scan.",
        DOCS_REQUIREMENTS,
    ),
}
"""Repo-relative path → file text (YAML front matter and a ``## Requirements`` list)."""
