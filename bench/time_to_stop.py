"""Time to stop: model calls and tokens a looping developer spends before the step rules stop
it, against the same run with the step rules turned off.

Two embedded stacks (``semspec up``: NATS, the Temporal dev server, the worker and the real risk
monitor), one with the default config and one with every ``risk.steps`` rule disabled, each run
one task on a copy of real third-party code (``tests/support/mdurl_project.py``). Its LLM
developer talks to the fake OpenAI-compatible server, which answers every call with the same
``list_dir`` of a folder that does not exist (every tool step fails the same way), ``DELAY_S``
late, billing a prompt that grows with the conversation (``tests/support/looping_developer.py``:
1,800 tokens plus 120 per message sent, 60 out). The developer's step limit is the default
``max_steps``.

With the rules, ``repeated_failure`` pauses the turn after its third failing call; the task goes
on in a fresh run, loops again, and is halted (ADR 0006). Without them, the turn runs to its step
limit and the task escalates. Everything is counted at the fake server (one request = one model
call = one step of the loop, the tokens its reply billed); the clock is shown, not compared.

Run: ``python bench/time_to_stop.py``. The last line is one JSON object: ``steps_with_rules``,
``steps_without_rules`` (model calls until the task waited for a human), ``tokens_with_rules``,
``tokens_without_rules``, ``tokens_saved`` (the fraction not spent), ``threshold``,
``max_steps``, ``steps_past_threshold`` (per stopped turn: calls made after the threshold's
call, before the stop reached the agent), ``calls_per_turn`` and ``delay_s``. ``--quick`` (a step
limit of 8, what a test runs) only checks that the bench still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from semspec.core.config.models import RoleModel, StepRulesConfig
from tests.support.looping_developer import LoopRun, run_looping_developer, without_step_rules
from tests.support.stack import check_gate, running_stack, sample_config

DELAY_S = 0.5
"""How late each fake model reply comes (a fast hosted model's short reply)."""
MAX_STEPS = RoleModel.model_fields["max_steps"].default
THRESHOLD = int(StepRulesConfig().repeated_failure.threshold)


def measure(root: Path, name: str, risk: dict[str, Any] | None) -> LoopRun:
    """One looping task on a stack of its own (``risk`` replaces the default section)."""
    sections = {"risk": risk} if risk is not None else {}
    with running_stack(root / name, sample_config([check_gate()], **sections)) as stack:
        return run_looping_developer(stack, name, MAX_STEPS, DELAY_S)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-time-to-stop-") as tmp:
        watched = measure(Path(tmp), "with-rules", None)
        unwatched = measure(Path(tmp), "without-rules", without_step_rules())
    for label, run in (("with step rules", watched), ("without step rules", unwatched)):
        escalation = run.status["pending_escalation"] or {}
        print(
            f"{label:>19}: {run.model_calls:3d} model calls {run.calls_per_turn}, "
            f"{run.tokens:7,d} tokens, {run.seconds:5.1f} s, then "
            f"{escalation.get('source')}/{escalation.get('reason')}"
        )
    result = {
        "steps_with_rules": watched.model_calls,
        "steps_without_rules": unwatched.model_calls,
        "tokens_with_rules": watched.tokens,
        "tokens_without_rules": unwatched.tokens,
        "tokens_saved": round(1 - watched.tokens / unwatched.tokens, 3),
        "threshold": THRESHOLD,
        "max_steps": MAX_STEPS,
        "steps_past_threshold": [calls - THRESHOLD for calls in watched.calls_per_turn],
        "calls_per_turn": watched.calls_per_turn,
        "delay_s": DELAY_S,
        "seconds_with_rules": round(watched.seconds, 1),
        "seconds_without_rules": round(unwatched.seconds, 1),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # The step limit stays over the threshold, so the rules still pause and halt the loop.
    parser.add_argument("--quick", action="store_true", help="8 steps, replies 0.05 s late")
    if parser.parse_args().quick:
        MAX_STEPS, DELAY_S = 8, 0.05
    main()
