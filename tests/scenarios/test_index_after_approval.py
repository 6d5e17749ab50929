"""Scenario: the code graph follows an approved task without anyone running ``semspec index``.

The project (a copy of mdurl) is indexed once; a task adds ``format_without_hash`` to
``mdurl/_format.py`` and is approved. The worker re-indexes the files the commit changed, so
the file's summary and meaning pack name the new function straight away, and the next
``semspec index`` of the (unmerged) checkout puts the checkout's own content back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.mdurl_project import FORMAT_PY, make_project, project_config, with_new_function
from tests.support.scenario_tasks import APPROVE, EXIT_APPROVED, entries, new_id, submit
from tests.support.stack import Stack

ADD_FUNCTION = [{"developer": {"write": {FORMAT_PY: with_new_function()}}, "reviewer": APPROVE}]


@pytest.fixture(scope="module")
def project(stack: Stack) -> Iterator[Path]:
    yield make_project(stack, "index-follows", project_config(stack, "index-follows"))


def test_an_approved_task_puts_its_new_function_in_the_graph(stack: Stack, project: Path) -> None:
    first = stack.cli_json("index", repo=project)
    assert FORMAT_PY in first["indexed"]
    code, status = submit(stack, project, new_id("index-follows"), [FORMAT_PY], ADD_FUNCTION)
    assert code == EXIT_APPROVED, json.dumps(status)[-3000:]
    assert entries(status, "index") == ["code graph updated: 1 indexed, 0 removed, 0 failed"], (
        status["log"]
    )

    summary = stack.cli_json("index", "summary", "--file", FORMAT_PY, repo=project)
    assert "format_without_hash" in summary[FORMAT_PY]
    pack = stack.cli_json("index", "pack", "--file", FORMAT_PY, repo=project)
    assert "format_without_hash" in pack["text"]

    # The checkout still has the old file (the branch is not merged): indexing it reads that
    # one file again and gives the graph the checkout's content back.
    again = stack.cli_json("index", repo=project)
    assert again["indexed"] == [FORMAT_PY]
    assert again["baseline"] == "record"
    summary = stack.cli_json("index", "summary", "--file", FORMAT_PY, repo=project)
    assert "format_without_hash" not in summary[FORMAT_PY]
