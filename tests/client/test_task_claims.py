"""The claims folder that decides which earlier tasks a submitted task waits for: which claims
overlap, what a plan task leaves out, and that a claim file a local user broke or planted is
skipped rather than trusted (the stack-backed behaviour is in
``tests/scenarios/test_tasks_on_one_file_wait.py``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace
from pathlib import Path

from semspec.client.task_claims import (
    CLAIMS_DIR,
    Claim,
    _ancestors,
    _write,
    claim_of,
    overlapping,
    read_claims,
)
from semspec.core.owner_key import OwnerKey, digest
from semspec.workflow.plan.messages import PlanInput, PlanTask
from semspec.workflow.task.messages import (
    TASK_START,
    RoleSpec,
    TaskInput,
    TaskSpec,
    _without_unset,
    signed_start,
    start_fields,
)

SCRIPTED = RoleSpec("scripted", "scripted")


def task(task_id: str, files: list[str], repo: str = "/r", base: str = "main") -> TaskInput:
    spec = TaskSpec(
        task_id=task_id,
        title=task_id,
        repo_path=repo,
        task_files=files,
        base_branch=base,
        developer=SCRIPTED,
        reviewer=SCRIPTED,
    )
    return TaskInput(spec=spec, gates=[], run_dir="/run")


def test_a_task_waits_for_earlier_claims_on_its_files_in_their_order() -> None:
    claims = [
        claim_of(task("c", ["b.py"]), 3),
        claim_of(task("a", ["a.py", "b.py"]), 1),
        claim_of(task("x", ["x.py"]), 2),
        claim_of(task("other-repo", ["b.py"], repo="/elsewhere"), 4),
        claim_of(task("other-base", ["b.py"], base="release"), 5),
    ]
    assert overlapping(claims, task("new", ["b.py", "z.py"])) == ["a", "c"]
    assert overlapping(claims, task("new", ["z.py"])) == []
    assert overlapping(claims, task("a", ["a.py"])) == []  # never itself


def test_a_plan_task_leaves_out_its_dependencies_direct_or_not() -> None:
    plan = PlanInput(
        "p",
        "p",
        [
            PlanTask(task("one", ["f.py"])),
            PlanTask(task("two", ["f.py"]), ["one"]),
            PlanTask(task("three", ["f.py"]), ["two"]),
            PlanTask(task("four", ["f.py"])),
        ],
    )
    assert _ancestors(plan, "three") == {"one", "two"}
    assert _ancestors(plan, "four") == set()


def test_claims_are_read_back_in_order(tmp_path: Path) -> None:
    _write(tmp_path, claim_of(task("b", ["f.py"]), 2))
    _write(tmp_path, claim_of(task("a", ["f.py"]), 1))
    assert [c.task_id for c in read_claims(tmp_path)] == ["a", "b"]
    assert read_claims(tmp_path / "none") == []
    # The run folder's entries are its owner's alone (README, docs/security.md).
    assert (tmp_path / CLAIMS_DIR).stat().st_mode & 0o777 == 0o700


def test_a_broken_or_planted_claim_is_skipped(tmp_path: Path) -> None:
    _write(tmp_path, claim_of(task("good", ["f.py"]), 1))
    folder = tmp_path / CLAIMS_DIR
    good = asdict(Claim("x", ["f.py"], "/r", "main", 2))
    (folder / "text.json").write_text("not json")
    (folder / "list.json").write_text("[1, 2]")
    (folder / "renamed.json").write_text(json.dumps(good))  # names another task
    (folder / "y.json").write_text(json.dumps({**good, "task_id": "y", "files": "f.py"}))
    (folder / "z.json").write_text(json.dumps({**good, "task_id": "z", "order": "1"}))
    (folder / "extra.json").write_text(json.dumps({**good, "task_id": "extra", "more": 1}))
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({**good, "task_id": "link"}))
    (folder / "link.json").symlink_to(secret)
    os.mkfifo(folder / "fifo.json")
    assert [c.task_id for c in read_claims(tmp_path)] == ["good"]


def test_an_empty_wait_list_signs_as_an_input_from_before_the_field() -> None:
    owner = OwnerKey.generate()
    plain = signed_start(owner, TASK_START, "task-t", task("t", ["f.py"]))
    fields = start_fields("task-t", plain)
    # An empty list is left out of the digest: an input signed before the field existed (and a
    # recorded history) verifies as it did.
    body = _without_unset(asdict(plain))
    assert "wait_for" not in body and "wait_for" in asdict(plain)
    body.pop("start_signature")
    assert fields["input"] == digest(body)
    waiting = replace(plain, wait_for=["a"])
    assert start_fields("task-t", waiting) != fields  # a set list is covered
