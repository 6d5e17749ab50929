"""Decisions and conventions round-trip through a real Oxigraph store in a fixed order."""

from __future__ import annotations

import pytest

from semspec.core.errors import InputError
from semspec.graph.store import GraphStore
from semspec.vocabulary import semspec_terms as st
from semspec.vocabulary.namespaces import plan_iri
from semspec.workflow.knowledge import (
    Convention,
    Decision,
    conventions_for,
    decisions_for,
    record_convention,
    record_decision,
)


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
        Convention("semspec", "cli-json", ("semspec/cli/*.py",), "Offer --json.", "r2"),
        Convention("semspec", "typed-errors", ("*.py",), "Raise typed errors.", "r1"),
    ]
    assert conventions_for(store, ["README.md"]) == []


def test_empty_fields_are_refused_with_the_field_named(store: GraphStore) -> None:
    with pytest.raises(InputError, match="title"):
        record_decision(store, "t1", "p1", " ", "text", [])
    with pytest.raises(InputError, match="applies_to"):
        record_convention(store, "p", "n", [], "d", "r")
