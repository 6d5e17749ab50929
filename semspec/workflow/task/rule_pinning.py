"""Rules pinned to the base commit, as the review step applies them: notes for the reviewer when
a change edits a rule file, and findings checked against the rules the reviewer was given.

The reviewer's context reads rule files from the task's base commit
(``knowledge.sources.pinned``), so a change cannot weaken the rules it is judged by; these
notes tell the reviewer such an edit is there and that it is judged as code, and a rule file
that is not among the task's files is also scope creep (``scope.out_of_scope`` never lets
``scope.allow`` cover one). A finding citing a rule the reviewer was not given (cut for the
budget, or not one that applies) is marked, since the reviewer cannot have read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from semspec.agents.protocol import ReviewVerdict
from semspec.knowledge.sources.rule_kinds import kind_of
from semspec.workflow.task.messages import ReviewContextUse
from semspec.workflow.task.review_context import MAX_LISTED_ITEMS

RULE_FILE_CHANGED = "rule_file_changed"
"""The note's reason code."""


def changed_rule_files(files: Iterable[str], kinds: Sequence[str]) -> list[str]:
    """The changed paths that are rule files of the enabled ``kinds``."""
    return sorted(p for p in set(files) if kind_of(p, kinds) is not None)


def rule_change_notes(
    files: Iterable[str], task_files: Iterable[str], kinds: Sequence[str], base_commit: str
) -> list[str]:
    """One note per changed rule file for the reviewer's flags."""
    declared = set(task_files)
    notes: list[str] = []
    for path in changed_rule_files(files, kinds):
        kind = kind_of(path, kinds)
        assert kind is not None
        note = (
            f"{RULE_FILE_CHANGED}: {path} ({kind.name}) is a rule file this change edits; you "
            f"are given its text on the base commit {base_commit[:12]}, not the change's, so "
            "judge the edit itself as part of the diff"
        )
        if path not in declared:
            note += "; it is not among the task's files: scope creep on a protected path"
        notes.append(note)
    return notes


def check_citations(verdict: ReviewVerdict, used: ReviewContextUse | None) -> ReviewVerdict:
    """``verdict`` with each finding that cites a rule the reviewer was not given marked."""
    if used is None or not any(f.sop_id for f in verdict.findings):
        return verdict
    given = {r.rule_id: r.given for r in used.rules}
    findings = []
    for finding in verdict.findings:
        status = given.get(finding.sop_id) if finding.sop_id else "full"
        if status == "left_out":
            note = f"cites {finding.sop_id}, which was left out of the reviewer's context"
            finding = replace(finding, citation=note)
        elif status is None and len(used.rules) < MAX_LISTED_ITEMS:
            # Past the bound the record lists only part of the rules: an unlisted id may
            # have been given.
            note = f"cites {finding.sop_id}, which is no SOP or rule that applies to the task"
            finding = replace(finding, citation=note)
        findings.append(finding)
    return replace(verdict, findings=findings)
