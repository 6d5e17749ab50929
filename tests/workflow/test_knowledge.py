"""Decisions and conventions round-trip through a real Oxigraph store in a fixed order."""

from __future__ import annotations

from pathlib import Path

import pytest

from semspec.core.errors import InputError
from semspec.graph.store import GraphStore
from semspec.vocabulary import semspec_terms as st
from semspec.vocabulary.namespaces import plan_iri
from semspec.workflow.knowledge import (
    Convention,
    ConventionApproval,
    Decision,
    conventions_for,
    decisions_for,
    record_convention,
    record_decision,
)
from tests.support.knowledge_page import render_knowledge
from tests.support.repos import make_repo


def test_decisions_are_found_by_task_plan_or_file_in_a_fixed_order(store: GraphStore) -> None:
    record_decision(store, "t2", "p1", "Use VALUES", "One query.", ["src/b.py", "src/a.py"])
    record_decision(store, "t1", "p1", "Keep sha256", "Stable hashes.", [])
    record_decision(store, "t9", "p2", "Other plan", "Unrelated.", ["docs/x.md"])
    by_plan = decisions_for(store, None, "p1", [])
    assert by_plan == [
        Decision("t1", "p1", "Keep sha256", "Stable hashes.", ()),
        Decision("t2", "p1", "Use VALUES", "One query.", ("src/a.py", "src/b.py")),
    ]
    assert [d.title for d in decisions_for(store, "t9", None, [])] == ["Other plan"]
    assert [d.title for d in decisions_for(store, None, None, ["src/a.py"])] == ["Use VALUES"]
    assert decisions_for(store, None, None, []) == []


def test_a_decision_is_derived_from_its_plan_with_prov(store: GraphStore) -> None:
    record_decision(store, "t1", "plan-7", "Title", "Text", [])
    rows = store.select(
        f"SELECT ?d WHERE {{ GRAPH ?g {{ ?d <{st.WAS_DERIVED_FROM}> <{plan_iri('plan-7')}> }} }}"
    )
    assert len(rows) == 1


def test_recording_the_same_decision_again_replaces_it(store: GraphStore) -> None:
    record_decision(store, "t1", "p1", "Title", "first", ["a.py"])
    record_decision(store, "t1", "p1", "Title", "second", ["b.py"])
    assert decisions_for(store, "t1", None, []) == [
        Decision("t1", "p1", "Title", "second", ("b.py",))
    ]


def test_conventions_match_files_by_glob_and_come_back_ordered(store: GraphStore) -> None:
    record_convention(store, "semspec", "typed-errors", "*.py", "Raise typed errors.", "r1")
    record_convention(store, "semspec", "cli-json", ["semspec/cli/*.py"], "Offer --json.", "r2")
    record_convention(store, "semspec", "go-wrap", "*.go", "Wrap errors.", "r3")
    found = conventions_for(store, ["semspec/cli/app.py"])
    assert found == [
        Convention(
            "semspec", "cli-json", ("semspec/cli/*.py",), "Offer --json.", "r2",
            (ConventionApproval("r2"),),
        ),
        Convention(
            "semspec", "typed-errors", ("*.py",), "Raise typed errors.", "r1",
            (ConventionApproval("r1"),),
        ),
    ]  # fmt: skip
    assert conventions_for(store, ["README.md"]) == []


def test_empty_fields_are_refused_with_the_field_named(store: GraphStore) -> None:
    with pytest.raises(InputError, match="title"):
        record_decision(store, "t1", "p1", " ", "text", [])
    with pytest.raises(InputError, match="applies_to"):
        record_convention(store, "p", "n", [], "d", "r")


def test_a_convention_applies_to_the_glob_its_approvals_files_share(store: GraphStore) -> None:
    # The reviewer noted the default "*": the scope is still the folder the change touched.
    record_convention(
        store, "p", "typed-errors", "*", "Raise typed errors.", "task t1 reviewed by r",
        files=["src/api/users.py", "src/api/v2/orders.py"], recorded_at="2026-01-01T00:00:00+00:00",
    )  # fmt: skip
    (learned,) = conventions_for(store, ["src/api/v3/new.py"])
    assert learned.applies_to == ("src/api/**/*.py",)
    assert learned.approvals == (
        ConventionApproval(
            "task t1 reviewed by r",
            ("src/api/users.py", "src/api/v2/orders.py"),
            "2026-01-01T00:00:00+00:00",
        ),
    )
    assert conventions_for(store, ["src/web/page.py"]) == []
    assert conventions_for(store, ["src/api/users.txt"]) == []


def test_a_second_approval_widens_the_scope_to_what_both_share_and_is_listed(
    store: GraphStore,
) -> None:
    first = ["src/api/users.py"]
    record_convention(store, "p", "n", "*", "First.", "task t1", first, "2026-01-01T00:00:00Z")
    record_convention(store, "p", "n", "*", "Second.", "task t2", ["src/web/a.py"], "2026-01-02")
    # The same approval recorded again (an activity retried) replaces only itself.
    record_convention(store, "p", "n", "*", "First.", "task t1", first, "2026-01-01T00:00:00Z")
    (learned,) = conventions_for(store, ["src/cli/x.py"])
    assert learned.applies_to == ("src/**/*.py",)
    assert [(a.review, a.files) for a in learned.approvals] == [
        ("task t1", ("src/api/users.py",)),
        ("task t2", ("src/web/a.py",)),
    ]
    assert (learned.description, learned.source_review) == ("Second.", "task t2")


def test_a_reviewer_glob_picks_the_evidence_among_the_changed_files(store: GraphStore) -> None:
    changed = ["src/api/users.py", "docs/api.md", "tests/test_users.py"]
    record_convention(store, "p", "n", "src/**", "Typed.", "task t1", changed)
    (learned,) = conventions_for(store, ["src/api/orders.py"])
    assert learned.applies_to == ("src/api/**/*.py",)
    assert learned.approvals[0].files == ("src/api/users.py",)
    assert conventions_for(store, ["docs/other.md"]) == []


def test_the_knowledge_page_shows_a_conventions_scope_and_its_approvals(
    store: GraphStore, tmp_path: Path
) -> None:
    files = {"src/api/users.py": "x = 1\n", "src/api/v2/orders.py": "y = 2\n", "b.py": ""}
    repo = tmp_path / "repo"
    make_repo(repo, files)
    record_convention(
        store, "p", "typed-errors", "*", "Raise typed errors.", "task t1 reviewed by r",
        ["src/api/users.py"], "2026-01-01T00:00:00+00:00",
    )  # fmt: skip
    record_convention(
        store, "p", "typed-errors", "*", "Raise typed errors.", "task t2 reviewed by r",
        ["src/api/v2/orders.py"],
    )  # fmt: skip
    html = render_knowledge(store, repo)
    row = html.split('data-convention="typed-errors"', 1)[1].split("</tr>", 1)[0]
    assert "<code>src/api/**/*.py</code>" in row
    assert "<td>2</td>" in row  # the two tracked files under src/api
    # When it was recorded: an age, with the exact time on hover (issue 30 item 6).
    assert (
        '<li data-approval="task t1 reviewed by r">task t1 reviewed by r '
        '(<time datetime="2026-01-01T00:00:00+00:00" title="2026-01-01 00:00:00 UTC" data-ago>'
    ) in row
    assert "</time>): <code>src/api/users.py</code></li>" in row
    assert '<li data-approval="task t2 reviewed by r">' in row
