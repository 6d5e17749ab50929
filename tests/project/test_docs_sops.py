"""docs/sops.md says what the code does: every row of its glob table holds for
``glob_matches``, and its complete example is an SOP the real parser accepts as described."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from semspec.knowledge.sources.sop_document import parse_sop
from semspec.vocabulary.applies_to import glob_matches

DOC = Path(__file__).resolve().parents[2] / "docs" / "sops.md"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (yes|no) \|$")


def _rows() -> list[tuple[str, str, bool]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match.group(1), match.group(2), match.group(3) == "yes"))
    return rows


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## A complete example") :]
    return section[section.index("```markdown\n") + 12 : section.index("\n```\n")] + "\n"


def test_the_doc_has_a_glob_table_with_both_outcomes() -> None:
    rows = _rows()
    assert len(rows) >= 20
    assert {matches for _, _, matches in rows} == {True, False}


@pytest.mark.parametrize(("pattern", "path", "matches"), _rows())
def test_each_row_of_the_glob_table_holds(pattern: str, path: str, matches: bool) -> None:
    assert glob_matches(pattern, path) is matches


def test_the_example_sop_parses_as_the_doc_describes() -> None:
    doc = parse_sop(
        _example(),
        default_id="python/db-queries",
        path=".semspec/sources/docs/sops/python/db-queries.md",
        source_hash="0" * 64,
    )
    assert doc.sop_id == "python/db-queries"
    assert (doc.category, doc.severity) == ("sop", "error")
    assert doc.applies_to == ("**/db/**/*.py", "**/queries.py")
    assert doc.title == "Database queries"
    assert doc.summary == "Database code binds every value and names the table it touches."
    assert len(doc.requirements) == 3
    assert doc.requirements[2] == (
        "Keep each query in one function whose name says what it returns, "
        "so a reviewer can find it from the call site."
    )
    assert [c.heading for c in doc.chunks] == [
        "Database queries",
        "Requirements",
        "Examples",
        "Why",
    ]
    assert doc.chunks[1].content == "## Requirements\n\nAsk the data team before adding a table."
    assert glob_matches(doc.applies_to[0], "app/db/queries.py")
