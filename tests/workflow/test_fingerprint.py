"""Evidence fingerprints are canonical: order never matters, content always does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from semspec.workflow.fingerprint import canonical_json, evidence_fingerprint

finding = st.fixed_dictionaries({"message": st.text(max_size=20), "file": st.text(max_size=10)})


@given(st.lists(finding, max_size=5), st.randoms())
def test_fingerprint_ignores_the_order_of_findings(findings: list[dict[str, str]], rnd) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(findings)
    rnd.shuffle(shuffled)
    assert evidence_fingerprint("d", [], findings) == evidence_fingerprint("d", [], shuffled)


def test_fingerprint_changes_when_the_diff_changes() -> None:
    assert evidence_fingerprint("a", [], []) != evidence_fingerprint("b", [], [])


def test_fingerprint_changes_when_a_gate_failure_changes() -> None:
    one = evidence_fingerprint("a", [{"name": "test", "output": "x"}], [])
    two = evidence_fingerprint("a", [{"name": "test", "output": "y"}], [])
    assert one != two


def test_canonical_json_sorts_keys_and_nested_arrays() -> None:
    assert canonical_json({"b": [3, 1], "a": {"d": 1, "c": 2}}) == '{"a":{"c":2,"d":1},"b":[1,3]}'
