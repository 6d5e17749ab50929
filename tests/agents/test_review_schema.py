"""One reviewer-answer schema: a script and a model reply are held to the same fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from semspec.agents.protocol import ReviewRequest, TurnUsage
from semspec.agents.review_schema import VerdictFormatError, parse_verdict
from semspec.agents.scripted import ScriptedReviewer, load_script
from semspec.core.errors import ScriptError

REQUEST = ReviewRequest("t1", "Add sub", "", [], ["calc.py"], "", iteration=1)


def script(tmp_path: Path, reviewer: Mapping[str, object]) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"iterations": [{"reviewer": reviewer}]}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("finding", "field"),
    [
        pytest.param({"message": ""}, "iterations.0.reviewer.findings.0.message", id="no message"),
        pytest.param(
            {"message": "m", "line": 0}, "iterations.0.reviewer.findings.0.line", id="line 0"
        ),
        pytest.param(
            {"message": "m", "severity": "fatal"},
            "iterations.0.reviewer.findings.0.severity",
            id="unknown severity",
        ),
    ],
)
def test_a_finding_a_model_could_not_send_is_refused_in_a_script_too(
    tmp_path: Path, finding: dict[str, object], field: str
) -> None:
    reviewer = {"verdict": "request_changes", "findings": [finding]}
    with pytest.raises(VerdictFormatError):
        parse_verdict(json.dumps(reviewer))
    with pytest.raises(ScriptError) as caught:
        load_script(script(tmp_path, reviewer))
    assert caught.value.field == field


def test_a_script_still_refuses_keys_a_model_reply_may_add(tmp_path: Path) -> None:
    reviewer = {"verdict": "request_changes", "findings": [{"message": "m", "note": "typo?"}]}
    assert parse_verdict(json.dumps(reviewer)).findings[0].message == "m"
    with pytest.raises(ScriptError) as caught:
        load_script(script(tmp_path, reviewer))
    assert caught.value.field == "iterations.0.reviewer.findings.0.note"


async def test_a_scripted_and_a_parsed_answer_become_the_same_verdict(tmp_path: Path) -> None:
    answer = {
        "verdict": "request_changes",
        "summary": "sub is missing",
        "findings": [{"message": "no sub", "file": "calc.py", "line": 3, "severity": "warning"}],
        "noted_patterns": [{"name": "small", "description": "one job per function"}],
    }
    scripted = await ScriptedReviewer(load_script(script(tmp_path, answer))).review(REQUEST)
    parsed = parse_verdict(json.dumps(answer)).to_verdict(
        reviewer="scripted-reviewer", tokens_used=0
    )
    # The same verdict; only the scripted reviewer's own step (priced at nothing) is counted.
    assert replace(scripted, usage=TurnUsage()) == parsed
    assert (scripted.usage.steps, scripted.usage.cost_usd) == (1, 0.0)
