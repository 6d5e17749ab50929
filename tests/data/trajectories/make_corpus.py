"""Writes the labelled corpus of recorded agent runs for ``semspec monitor replay``.

Every run is written here by hand, in three formats: OpenAI-style chat logs with tool calls
(``*.chat.json``), mini-swe-agent's text protocol (``*.traj.json``: fenced shell blocks,
``<returncode>`` observations) and semspec's own step events (``*.steps.jsonl``). ``labels.json``
names, per file, the rule that should fire first on it, or ``healthy``.

Stuck runs loop until the developer's step limit (40 model calls), as they would without the
step rules; healthy ones are the cases a naive detector gets wrong: polling with changing
output, waiting between checks, retries that make progress, reading many files, patterns that
stop one step short of a threshold. Run ``python tests/data/trajectories/make_corpus.py`` to
write the files again (the output is deterministic).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAX_STEPS = 40
SYSTEM = (
    "You are a careful software engineer working in a git repository. Use the tools to read, "
    "search, edit and test the code. Submit when the acceptance criteria hold."
)
TASK = (
    "Task: make `parse_duration('1h30m')` return 5400 and reject negative durations with "
    "ValueError. Files: src/timeparse/duration.py, tests/test_duration.py."
)
NUDGE = "You answered without calling a tool. Use a tool to act, or submit when you are done."
FORMAT_ERROR = (
    "Please always provide EXACTLY ONE action in triple backticks, found 0 actions. "
    "If you want to end the task, please issue: echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
)
WINDOW_ERROR = {
    "code": "context_length_exceeded",
    "message": "This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 131877 tokens. Please reduce the length of the messages.",
}
PYTEST_FAIL = """============================= test session starts ==============================
collected 6 items

tests/test_duration.py ..F...                                            [100%]

=================================== FAILURES ===================================
___________________________ test_hours_and_minutes ____________________________
    def test_hours_and_minutes():
>       assert parse_duration("1h30m") == 5400
E       AssertionError: assert 1800 == 5400
tests/test_duration.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_duration.py::test_hours_and_minutes - AssertionError
========================= 1 failed, 5 passed in {t}s ==========================="""
PYTEST_PASS = "tests/test_duration.py ......   [100%]\n6 passed in 0.21s"
DURATION_PY = """import re

_PART = re.compile(r"(\\d+)([hms])")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    total = 0
    for number, unit in _PART.findall(text):
        total = int(number) * _SECONDS[unit]
    return total
"""


class Chat:
    """An OpenAI-style chat log with tool calls."""

    def __init__(self, model: str = "gpt-4o") -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]
        self.model = model
        self.calls = 0

    @property
    def model_calls(self) -> int:
        return sum(1 for m in self.messages if m["role"] == "assistant")

    def call(self, tool: str, args: dict[str, Any], output: str, think: str = "") -> None:
        self.calls += 1
        call_id = f"call_{self.calls:03d}"
        function = {"name": tool, "arguments": json.dumps(args)}
        self.messages.append(
            {
                "role": "assistant",
                "content": think,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})

    def bash(self, command: str, output: str, think: str = "") -> None:
        self.call("bash", {"command": command}, output, think)

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})
        self.messages.append({"role": "user", "content": NUDGE})

    def window_error(self) -> None:
        self.messages.append({"role": "assistant", "content": None, "error": WINDOW_ERROR})
        self.messages.append({"role": "user", "content": "The request failed; try again."})

    def document(self) -> Any:
        return {"model": self.model, "messages": self.messages}


class MiniSwe:
    """A mini-swe-agent ``.traj.json``: one fenced shell block per reply, observations as text."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": TASK},
        ]

    @property
    def model_calls(self) -> int:
        return sum(1 for m in self.messages if m["role"] == "assistant")

    def bash(self, command: str, output: str, returncode: int = 0, think: str = "") -> None:
        reply = f"THOUGHT: {think or 'Next step.'}\n\n```bash\n{command}\n```"
        observed = f"<returncode>{returncode}</returncode>\n<output>\n{output}\n</output>"
        self.messages.append({"role": "assistant", "content": reply})
        self.messages.append({"role": "user", "content": observed})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})
        self.messages.append({"role": "user", "content": FORMAT_ERROR})

    def document(self, cost: float) -> Any:
        return {
            "info": {
                "exit_status": "LimitsExceeded",
                "model_stats": {"instance_cost": cost, "api_calls": self.model_calls},
                "config": {"model": {"model_name": "claude-sonnet-4-5"}},
            },
            "messages": self.messages,
            "trajectory_format": "mini-swe-agent-1",
        }


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class Steps:
    """semspec's own ``step`` events (and the loop events around them), as published."""

    def __init__(self, task: str, role: str = "developer") -> None:
        self.task = task
        self.role = role
        self.lines: list[dict[str, Any]] = []
        self.iteration = 0
        self.step = 0
        self.context = 0
        self.model_calls = 0
        self.new_iteration()

    def _event(self, kind: str, data: dict[str, Any], suffix: str = "") -> None:
        event_id = f"task-{self.task}/run-1/{self.iteration}/{kind}"
        self.lines.append(
            {
                "event_id": f"{event_id}/{suffix}" if suffix else event_id,
                "kind": kind,
                "task_id": self.task,
                "run_id": "run-1",
                "iteration": self.iteration,
                "plan_id": None,
                "at": f"2026-11-20T10:{len(self.lines) // 60:02d}:{len(self.lines) % 60:02d}Z",
                "data": data,
            }
        )

    def new_iteration(self) -> None:
        self.iteration += 1
        self.step = 0
        self.context = 2_400  # system prompt and task
        if self.role == "developer":
            self._event("iteration", {"phase": "developer", "retries": self.iteration - 1})

    def _step(self, **data: Any) -> None:
        self.step += 1
        base = {"role": self.role, "step": self.step, "tool": None, "error": False}
        self._event("step", {**base, **data}, suffix=f"{self.role}-{self.step}")

    def model(
        self, asks: list[tuple[str, Any]], text: str = "", error_kind: str | None = None
    ) -> None:
        self.model_calls += 1
        output = 40 + len(text) // 4 + 30 * len(asks)
        action = _digest(json.dumps(asks, sort_keys=True)) if asks else ""
        self._step(
            kind="model",
            action_hash=action,
            observation_hash=_digest(text or str(error_kind)),
            error=error_kind is not None,
            error_kind=error_kind,
            model="claude-sonnet-4-5",
            input_tokens=self.context,
            output_tokens=0 if error_kind else output,
            cached_tokens=max(0, self.context - 1_200),
            cost_usd=round((self.context * 3 + output * 15) / 1_000_000, 6),
            duration_ms=1_800.0,
        )
        self.context += output

    def tool(
        self, tool: str, args: Any, output: str, error: bool = False, wait: bool = False
    ) -> None:
        self._step(
            kind="tool",
            tool=tool,
            action_hash=_digest(json.dumps([tool, args], sort_keys=True)),
            observation_hash=_digest(output),
            error=error,
            wait=wait,
            duration_ms=120.0,
        )
        self.context += 20 + len(output) // 4

    def call(
        self, tool: str, args: Any, output: str, error: bool = False, wait: bool = False
    ) -> None:
        self.model([(tool, args)], "")
        self.tool(tool, args, output, error, wait)

    def finished(self, outcome: str = "approved") -> None:
        self._event("finished", {"outcome": outcome, "commit": None, "reason": None})

    def text(self) -> str:
        return "".join(json.dumps(line, sort_keys=True) + "\n" for line in self.lines)


def explore_chat(chat: Chat) -> None:
    chat.bash("ls -R src tests", "src:\ntimeparse\n\nsrc/timeparse:\n__init__.py\nduration.py")
    chat.call("read_file", {"path": "src/timeparse/duration.py"}, DURATION_PY)


def explore_swe(swe: MiniSwe) -> None:
    swe.bash("ls -R src tests | head -20", "src:\ntimeparse\n\nsrc/timeparse:\nduration.py")
    swe.bash("cat src/timeparse/duration.py", DURATION_PY)


def explore_steps(steps: Steps) -> None:
    steps.call("search", {"query": "parse_duration"}, "src/timeparse/duration.py:7")
    steps.call("read", {"path": "src/timeparse/duration.py"}, DURATION_PY)


def pytest_fail(n: int) -> str:
    return PYTEST_FAIL.replace("{t}", f"0.{10 + n % 7}")


# --- stuck runs ----------------------------------------------------------------------------


def stuck_ls_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    while chat.model_calls < MAX_STEPS:
        chat.bash("ls src/timeparse", "__init__.py\nduration.py", "Where is the parser?")
    return chat.document()


def stuck_git_status_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    chat.call("edit_file", {"path": "src/timeparse/duration.py", "patch": "..."}, "applied")
    while chat.model_calls < MAX_STEPS:
        chat.bash("git status --short", " M src/timeparse/duration.py", "Did it apply?")
    return chat.document()


def stuck_cat_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    while swe.model_calls < MAX_STEPS:
        swe.bash("cat src/timeparse/duration.py", DURATION_PY, think="Let me look again.")
    return swe.document(1.84)


def stuck_read_steps() -> str:
    steps = Steps("read-loop")
    explore_steps(steps)
    while steps.model_calls < MAX_STEPS:
        steps.call("read", {"path": "tests/test_duration.py", "start": 1}, "def test_...")
    return steps.text()


def stuck_pytest_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    n = 0
    while chat.model_calls < MAX_STEPS:
        n += 1
        chat.bash("python -m pytest -q tests/test_duration.py", pytest_fail(n) + "\n\nexit code 1")
    return chat.document()


def stuck_pip_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    error = (
        "ERROR: Could not find a version that satisfies the requirement timeparse-extras==2.0\n"
        "ERROR: No matching distribution found for timeparse-extras==2.0"
    )
    while swe.model_calls < MAX_STEPS:
        swe.bash("pip install timeparse-extras==2.0", error, returncode=1)
    return swe.document(1.31)


def stuck_edit_steps() -> str:
    steps = Steps("edit-refused")
    explore_steps(steps)
    patch = {"path": "src/timeparse/duration.py", "old": "total = int", "new": "total += int"}
    while steps.model_calls < MAX_STEPS:
        steps.call("edit", patch, "error: old text not found in src/timeparse/duration.py", True)
    return steps.text()


def stuck_npm_chat() -> Any:
    chat = Chat()
    chat.bash("cat package.json", '{"scripts": {"test": "jest"}}')
    while chat.model_calls < MAX_STEPS:
        chat.bash("npm test", "sh: 1: jest: not found\nnpm ERR! Test failed.  exit code 127")
    return chat.document()


def stuck_talk_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    n = 0
    while chat.model_calls < MAX_STEPS:
        n += 1
        chat.say(f"I will now fix the loop so it adds each part (attempt {n}).")
    return chat.document()


def stuck_talk_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    n = 0
    while swe.model_calls < MAX_STEPS:
        n += 1
        swe.say(f"The fix is to use += instead of = in the loop. Done, step {n}.")
    return swe.document(0.97)


def stuck_talk_steps() -> str:
    steps = Steps("talking")
    explore_steps(steps)
    n = 0
    while steps.model_calls < MAX_STEPS:
        n += 1
        steps.model([], f"The change is ready; I believe the tests would pass now ({n}).")
    return steps.text()


def stuck_flipflop_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    to_plus = {"path": "src/timeparse/duration.py", "old": "total = int", "new": "total += int"}
    back = {"path": "src/timeparse/duration.py", "old": "total += int", "new": "total = int"}
    while chat.model_calls < MAX_STEPS:
        chat.call("edit_file", to_plus, "applied 1 change")
        chat.call("edit_file", back, "applied 1 change")
    return chat.document()


def stuck_two_files_steps() -> str:
    steps = Steps("two-files")
    explore_steps(steps)
    while steps.model_calls < MAX_STEPS:
        steps.call("read", {"path": "src/timeparse/duration.py"}, DURATION_PY)
        steps.call("read", {"path": "tests/test_duration.py"}, "def test_hours_and_minutes(): ...")
    return steps.text()


def stuck_checkout_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    while swe.model_calls < MAX_STEPS:
        swe.bash("git stash", "Saved working directory and index state WIP on main: 1a2b3c4")
        swe.bash("git stash pop", "On branch main\nChanges not staged for commit: duration.py")
    return swe.document(2.05)


def stuck_window_steps() -> str:
    steps = Steps("window")
    for _ in range(4):  # each iteration reads everything again and overflows
        explore_steps(steps)
        steps.call("read", {"path": "docs/big-spec.md"}, "x" * 20_000)
        steps.context = 130_000
        steps.model([], error_kind="context_window")
        steps.new_iteration()
    return steps.text()


def stuck_window_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    chat.bash("cat logs/*.log", "2026-11-20 10:00:01 INFO start\n" * 3_000)
    while chat.model_calls < MAX_STEPS:
        chat.window_error()
    return chat.document()


def stuck_window_retry_steps() -> str:
    steps = Steps("window-retry")
    explore_steps(steps)
    steps.call("read", {"path": "data/fixtures.json"}, "[" + "{},\n" * 6_000 + "]")
    steps.context = 129_000
    while steps.model_calls < 12:
        steps.model([], error_kind="context_window")
    return steps.text()


# --- healthy runs --------------------------------------------------------------------------


def healthy_poll_chat() -> Any:
    chat = Chat()
    chat.bash("gh run watch 42 --exit-status=false", "queued")
    for n in range(1, 15):
        chat.bash("gh run view 42 --json status,jobs", f"in_progress: {n}/14 jobs done")
    chat.bash("gh run view 42 --json conclusion", "success")
    chat.call("submit", {"summary": "CI is green"}, "submitted")
    return chat.document()


def healthy_wait_server_chat() -> Any:
    chat = Chat()
    chat.bash("nohup python -m http.server 8000 &", "[1] 4242")
    for _ in range(6):
        chat.bash("sleep 2", "")
        chat.bash("curl -s localhost:8000/health", "curl: (7) Failed to connect: refused")
    chat.bash("curl -s localhost:8000/health", "ok")
    chat.call("submit", {"summary": "server answers"}, "submitted")
    return chat.document()


def healthy_wait_tool_steps() -> str:
    steps = Steps("wait-tool")
    explore_steps(steps)
    for _ in range(20):
        steps.call("wait_for_gate", {"gate": "test", "timeout_s": 30}, "still running", wait=True)
    steps.call("wait_for_gate", {"gate": "test", "timeout_s": 30}, "passed", wait=True)
    steps.call("submit", {"summary": "done"}, "submitted")
    steps.finished()
    return steps.text()


def healthy_progress_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    for left in (5, 4, 2, 1):
        chat.call("edit_file", {"path": "src/timeparse/duration.py", "n": left}, "applied")
        chat.bash("python -m pytest -q", f"{left} failed, {6 - left} passed in 0.3s\nexit code 1")
    chat.bash("python -m pytest -q", PYTEST_PASS)
    chat.call("submit", {"summary": "fixed"}, "submitted")
    return chat.document()


def healthy_progress_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    errors = [
        "ModuleNotFoundError: No module named 'timeparse'",
        "ImportError: cannot import name 'parse_duration'",
        "AssertionError: assert 1800 == 5400",
        "AssertionError: ValueError not raised",
    ]
    for error in errors:
        swe.bash("python -m pytest -q tests/test_duration.py", error, returncode=1)
        swe.bash("sed -i 's/x/y/' src/timeparse/duration.py", "", think="Fix that error.")
    swe.bash("python -m pytest -q tests/test_duration.py", PYTEST_PASS)
    swe.bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "")
    return swe.document(0.42)


def healthy_read_many_chat() -> Any:
    chat = Chat()
    chat.bash("git ls-files 'src/**.py'", "\n".join(f"src/pkg/mod{n}.py" for n in range(30)))
    for n in range(30):
        chat.call("read_file", {"path": f"src/pkg/mod{n}.py"}, f"def f{n}():\n    return {n}\n")
    chat.call("submit", {"summary": "no change needed"}, "submitted")
    return chat.document()


def healthy_read_many_swe() -> Any:
    swe = MiniSwe()
    for n in range(25):
        swe.bash(f"sed -n 1,80p src/pkg/mod{n}.py", f"# module {n}\nVALUE = {n}\n")
    swe.bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "")
    return swe.document(0.35)


def healthy_read_many_steps() -> str:
    steps = Steps("read-many")
    for n in range(35):
        steps.call("read", {"path": f"src/pkg/mod{n}.py"}, f"VALUE = {n}")
    steps.call("submit", {"summary": "read all"}, "submitted")
    steps.finished()
    return steps.text()


def healthy_fix_steps() -> str:
    steps = Steps("plain-fix")
    explore_steps(steps)
    steps.call("edit", {"path": "src/timeparse/duration.py", "old": "=", "new": "+="}, "applied")
    steps.call("run_tests", {"path": "tests/test_duration.py"}, "6 passed")
    steps.call("submit", {"summary": "sum every part"}, "submitted")
    steps.finished()
    return steps.text()


def healthy_reviewer_steps() -> str:
    steps = Steps("reviews", role="reviewer")
    for _ in range(5):  # the same files read in every review: separate turns
        steps.call("read", {"path": "src/timeparse/duration.py"}, DURATION_PY)
        steps.call("read", {"path": "tests/test_duration.py"}, "def test_...")
        steps.call("read", {"path": "src/timeparse/duration.py"}, DURATION_PY)
        steps.model([], '{"verdict": "request_changes"}')
        steps.new_iteration()
    return steps.text()


def healthy_one_window_error_steps() -> str:
    steps = Steps("window-once")
    explore_steps(steps)
    steps.context = 129_000
    steps.model([], error_kind="context_window")
    steps.new_iteration()
    explore_steps(steps)
    steps.call("submit", {"summary": "done after a fresh context"}, "submitted")
    steps.finished()
    return steps.text()


def healthy_short_of_thresholds_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    chat.say("Let me think about the units first.")
    chat.say("Hours are 3600 seconds, minutes 60.")
    chat.bash("python -m pytest -q", pytest_fail(1) + "\nexit code 1")
    chat.bash("python -m pytest -q", pytest_fail(2) + "\nexit code 1")
    chat.call("edit_file", {"path": "src/timeparse/duration.py", "fix": 1}, "applied")
    for _ in range(3):
        chat.bash("git diff --stat", " src/timeparse/duration.py | 2 +-")
    chat.bash("python -m pytest -q", PYTEST_PASS)
    chat.call("submit", {"summary": "fixed"}, "submitted")
    return chat.document()


def healthy_alternating_short_swe() -> Any:
    swe = MiniSwe()
    explore_swe(swe)
    for _ in range(2):
        swe.bash("git stash", "Saved working directory")
        swe.bash("git stash pop", "On branch main")
    swe.bash("git stash", "Saved working directory")
    swe.bash("python -m pytest -q", PYTEST_PASS)
    swe.bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "")
    return swe.document(0.21)


def healthy_edit_and_reread_chat() -> Any:
    chat = Chat()
    explore_chat(chat)
    for n in range(6):
        chat.call("edit_file", {"path": "src/timeparse/duration.py", "step": n}, "applied")
        read = {"path": "src/timeparse/duration.py"}
        chat.call("read_file", read, DURATION_PY + f"# revision {n}\n")
    chat.call("submit", {"summary": "done"}, "submitted")
    return chat.document()


def healthy_log_tail_swe() -> Any:
    swe = MiniSwe()
    swe.bash("make build > build.log 2>&1 &", "")
    for n in range(10):
        swe.bash("tail -n 1 build.log", f"[{10 * (n + 1)}%] Building CXX object src/part{n}.o")
    swe.bash("tail -n 1 build.log", "[100%] Built target app")
    swe.bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "")
    return swe.document(0.12)


def healthy_usage_chat() -> Any:
    chat = Chat(model="gpt-4o-mini")
    explore_chat(chat)
    chat.bash("python -m pytest -q", PYTEST_PASS)
    chat.call("submit", {"summary": "already fixed"}, "submitted")
    for n, message in enumerate(m for m in chat.messages if m["role"] == "assistant"):
        message["usage"] = {
            "prompt_tokens": 1_500 + 400 * n,
            "completion_tokens": 90,
            "prompt_tokens_details": {"cached_tokens": 1_024},
        }
    return chat.document()


RUNS: dict[str, tuple[str, Any]] = {
    "ls-loop.chat.json": ("repeated_action", stuck_ls_chat),
    "git-status-loop.chat.json": ("repeated_action", stuck_git_status_chat),
    "cat-loop.traj.json": ("repeated_action", stuck_cat_swe),
    "read-loop.steps.jsonl": ("repeated_action", stuck_read_steps),
    "pytest-same-failure.chat.json": ("repeated_failure", stuck_pytest_chat),
    "pip-same-failure.traj.json": ("repeated_failure", stuck_pip_swe),
    "edit-refused.steps.jsonl": ("repeated_failure", stuck_edit_steps),
    "npm-missing-jest.chat.json": ("repeated_failure", stuck_npm_chat),
    "talks-no-tools.chat.json": ("no_tool_call", stuck_talk_chat),
    "talks-no-block.traj.json": ("no_tool_call", stuck_talk_swe),
    "talks.steps.jsonl": ("no_tool_call", stuck_talk_steps),
    "edit-flipflop.chat.json": ("alternating_actions", stuck_flipflop_chat),
    "two-files.steps.jsonl": ("alternating_actions", stuck_two_files_steps),
    "stash-pop.traj.json": ("alternating_actions", stuck_checkout_swe),
    "window-every-iteration.steps.jsonl": ("context_window_errors", stuck_window_steps),
    "window-logs.chat.json": ("context_window_errors", stuck_window_chat),
    "window-retry.steps.jsonl": ("context_window_errors", stuck_window_retry_steps),
    "ci-poll.chat.json": ("healthy", healthy_poll_chat),
    "server-wait.chat.json": ("healthy", healthy_wait_server_chat),
    "wait-tool.steps.jsonl": ("healthy", healthy_wait_tool_steps),
    "retry-progress.chat.json": ("healthy", healthy_progress_chat),
    "retry-progress.traj.json": ("healthy", healthy_progress_swe),
    "read-many.chat.json": ("healthy", healthy_read_many_chat),
    "read-many.traj.json": ("healthy", healthy_read_many_swe),
    "read-many.steps.jsonl": ("healthy", healthy_read_many_steps),
    "plain-fix.steps.jsonl": ("healthy", healthy_fix_steps),
    "reviewer-rereads.steps.jsonl": ("healthy", healthy_reviewer_steps),
    "window-once.steps.jsonl": ("healthy", healthy_one_window_error_steps),
    "short-of-thresholds.chat.json": ("healthy", healthy_short_of_thresholds_chat),
    "alternating-short.traj.json": ("healthy", healthy_alternating_short_swe),
    "edit-reread.chat.json": ("healthy", healthy_edit_and_reread_chat),
    "build-log-tail.traj.json": ("healthy", healthy_log_tail_swe),
    "with-usage.chat.json": ("healthy", healthy_usage_chat),
}


def main() -> None:
    for name, (_, make) in RUNS.items():
        made = make()
        text = made if isinstance(made, str) else json.dumps(made, indent=1) + "\n"
        (HERE / name).write_text(text)
    labels = {name: label for name, (label, _) in RUNS.items()}
    (HERE / "labels.json").write_text(json.dumps(labels, indent=2) + "\n")


if __name__ == "__main__":
    main()
