"""Secrets past the mask (issue 25, item 5): agent-written code that writes the worker's own key
into a file, and a gate that prints a ``gates.env`` value encoded.

On the embedded stack a command developer (the fake Claude Code, ``tests/fakes/claude_cli.py``)
writes the key its role gets (``api_key_env``) into a file, plain and in base64, and a gate
prints a ``gates.env`` value in base64, hex, reversed and cut by a line break. The reviewer's
model (the fake OpenAI-compatible server) approves; nothing it received, no file of the run
folder (Temporal's database, NATS's store, gate logs; the worktree aside), no event, no git
object and not the console's diff holds either value, and the task escalates
``secret_in_change`` naming the file and lines instead of committing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import string
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest
from temporalio.exceptions import ApplicationError

from semspec.console.task_diff import task_diff
from semspec.core.masking import MASK
from semspec.core.secret_scan import SecretScan
from semspec.workflow.gates.capture import OutputCapture
from semspec.workflow.gates.runner import GateFencing, run_gate
from semspec.workflow.gates.types import GateSpec
from semspec.workflow.git.worktree import ensure_worktree
from semspec.workflow.task.context_activities import checkpoint
from semspec.workflow.task.messages import CheckpointInput, TaskSpec, TaskStatus, Workspace
from semspec.workflow.task.secret_guard import refuse_secrets
from tests.fakes.llm_server import FakeLLMServer, FakeReply, call, text
from tests.fakes.llm_task import approve_reply, fake_model_entry
from tests.security.test_secrets_stay_out import files_holding, history_text
from tests.support.repos import make_repo
from tests.support.stack import running_stack, sample_config

CLI = Path(__file__).resolve().parents[1] / "fakes" / "claude_cli.py"
AGENT_KEY = "AGENT_LLM_KEY"
"""The command developer's key variable: named by ``api_key_env`` alone (no secret word)."""
HOOK = "CI_DEPLOY_HOOK"
"""A ``gates.env`` variable whose name says nothing secret."""
TASK_ID = "leaky"


def _token(size: int = 40) -> str:
    return "".join(secrets.choice(string.ascii_letters + string.digits + "+/") for _ in range(size))


def encoded(value: str) -> dict[str, str]:
    """The forms a leak may take, each a string that must not be stored anywhere."""
    raw = value.encode()
    return {
        "plain": value,
        "base64": base64.b64encode(raw).decode()[:-4],  # the padded end depends on nothing else
        "base64 after a prefix": base64.b64encode(b"hook=" + raw).decode()[8:-4],
        "hex": raw.hex(),
        "reversed": value[::-1],
    }


def holding(data: str, values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() if value in data]


FORMS_GATE = (
    f"{sys.executable} -c \"import os, base64; v = os.environ['{HOOK}']; "
    "print(base64.b64encode(v.encode()).decode()); "
    "print(base64.b64encode(('hook=' + v).encode()).decode()); "
    "print(v.encode().hex()); print(v[::-1]); print('cut: ' + v[:17]); print(v[17:] + ' end')\""
)
"""A gate printing its ``gates.env`` value in base64 (twice, at two alignments), hex, reversed
and cut in two by a line break."""


def test_a_gate_printing_encoded_forms_of_a_gates_env_value_keeps_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _token()
    monkeypatch.setenv(HOOK, value)
    spec = GateSpec(name="forms", command=FORMS_GATE, timeout_s=60)

    result = asyncio.run(
        run_gate(spec, tmp_path, tmp_path / "logs", 10_000, fencing=GateFencing(env_names=(HOOK,)))
    )

    log = Path(result.log_path).read_text(encoding="utf-8")
    assert result.passed, result.output
    assert holding(log, encoded(value)) == [] and holding(result.output, encoded(value)) == []
    assert holding(log.replace("\n", ""), {"cut": value}) == []
    assert log.count(MASK) >= 5 and "cut: ***" in log and log.rstrip().endswith("end")


def test_a_value_cut_by_line_breaks_across_separate_writes_is_masked_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _token(80)
    monkeypatch.setenv(HOOK, value)
    wrapped = base64.b64encode(value.encode()).decode()  # 108 characters: base64 wraps at 76
    lines = [f"key: {value[:30]}\n", f"{value[30:]}\n", f"{wrapped[:76]}\n", f"{wrapped[76:]}\n"]

    with OutputCapture(tmp_path / "g.log", 10_000, secret_names=(HOOK,)) as capture:
        for line in [*lines, "done\n"]:
            capture.write(line.encode())

    log = (tmp_path / "g.log").read_text(encoding="utf-8")
    joined = log.replace("\n", "")
    assert value not in joined and wrapped[4:-4] not in joined and value[40:60] not in log
    assert log.startswith("key: ***\n") and log.endswith("done\n") and capture.text() == log


def test_a_change_holding_the_workers_key_is_refused_naming_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _token()
    monkeypatch.setenv(AGENT_KEY, value)
    repo = make_repo(tmp_path / "r", {"a.py": "x = 1\n"})
    base = str(repo.head.target)
    config = {"models": {"developer": {"provider": "command", "api_key_env": AGENT_KEY}}}
    (tmp_path / "r" / ".semspec").mkdir()
    (tmp_path / "r" / ".semspec" / "config.yaml").write_text(json.dumps(config))
    leak = f"url = {value}\n{base64.b64encode(value.encode()).decode()}\nok = 2\n"
    (tmp_path / "r" / "leak.txt").write_text(leak, encoding="utf-8")

    with pytest.raises(ApplicationError) as refused:
        refuse_secrets(tmp_path / "r", tmp_path / "r", base)

    message = refused.value.message
    assert refused.value.type == "secret_in_change" and refused.value.non_retryable
    assert "leak.txt:1" in message and "leak.txt:2" in message and "leak.txt:3" not in message
    assert f"the value of {AGENT_KEY} (base64)" in message
    assert holding(message, encoded(value)) == []


def test_a_checkpoint_leaves_a_file_holding_the_workers_key_out_of_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = _token()
    monkeypatch.setenv("DEPLOY_TOKEN", value)
    make_repo(tmp_path / "r", {"a.py": "x = 1\n"})
    info = ensure_worktree(tmp_path / "r", "cp", "main", tmp_path / "worktrees")
    worktree = Path(info.path)
    (worktree / "a.py").write_text("x = 2\n", encoding="utf-8")
    (worktree / "leak.txt").write_text(base64.b64encode(value.encode()).decode() + "\n")
    ws = Workspace(path=info.path, branch=info.branch, base_commit=info.base_commit)
    spec = TaskSpec(task_id="cp", title="cp", repo_path=str(tmp_path / "r"))

    step = checkpoint(CheckpointInput(spec, ws, 1, "cp/1", ["a.py", "leak.txt"]))

    git = pygit2.Repository(str(tmp_path / "r"))
    tree = git[step.commit_id].peel(pygit2.Tree)
    assert step.ref == "semspec/checkpoint/cp/1" and "a.py" in tree and "leak.txt" not in tree
    assert (worktree / "leak.txt").is_file()  # the next run still has the developer's work


def test_key_shapes_of_the_detectors_are_found_and_masked_in_a_patch() -> None:
    upper = string.ascii_uppercase + string.digits
    aws = "AKIA" + "".join(secrets.choice(upper) for _ in range(16))
    github = "ghp_" + "".join(secrets.choice(string.ascii_letters) for _ in range(36))
    pem = "-----BEGIN RSA PRIVATE KEY-----\n+MIIEowIBAAKCAQEA7s\n+-----END RSA PRIVATE KEY-----"
    scan = SecretScan.of({})
    lines = [("conf.py", 3, f"KEY_ID = '{aws}'"), ("ci.yml", 9, f"token: {github}")]

    found = {(f.where(), f.kind) for f in scan.findings(lines)}
    patch = scan.mask(f"+id = '{aws}'\n+gh = {github}\n+{pem}\n")

    assert ("conf.py:3", "AWS Access Key") in found and ("ci.yml:9", "GitHub Token") in found
    assert aws not in patch and github not in patch and "MIIEow" not in patch


@pytest.mark.slow  # scans every file of this checkout
def test_this_projects_own_source_holds_no_finding() -> None:
    """Real code no one wrote for the scan: every line of semspec/ (hashes, examples, tests of
    masking in docstrings) passes the detectors in use."""
    root = Path(__file__).resolve().parents[2] / "semspec"
    lines = [
        (str(path.relative_to(root)), number, line)
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
    ]
    assert len(lines) > 10_000
    assert SecretScan.of({}).findings(lines) == []


def leaking_developer(key: str) -> list[FakeReply]:
    """The fake Claude Code's model: write the key into ``leak.txt`` (plain, then base64), then
    name it in the turn's closing text (the step's summary)."""
    command = (
        f'printf "url = %s\\n" "${AGENT_KEY}" > leak.txt && '
        f'printf %s "${AGENT_KEY}" | base64 -w0 >> leak.txt && echo >> leak.txt'
    )
    return [call("Bash", {"command": command}), text(f"wrote leak.txt with {key}")]


def test_the_workers_key_written_by_a_command_agent_reaches_no_reviewer_store_or_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, hook = _token(), _token()
    monkeypatch.setenv(AGENT_KEY, key)
    monkeypatch.setenv(HOOK, hook)
    leaks = {f"key {k}": v for k, v in encoded(key).items()}
    leaks |= {f"hook {k}": v for k, v in encoded(hook).items()}
    replies = leaking_developer(key)
    with FakeLLMServer.for_roles(developer=replies, reviewer=[approve_reply()]) as llm:
        command = f"{sys.executable} {CLI} --base-url {llm.base_url} -p --output-format stream-json"
        developer = {"provider": "command", "model": "fake-model", "command": command,
                     "api_key_env": AGENT_KEY, "timeout_s": 120}  # fmt: skip
        reviewer = {"provider": "openai", "model": "fake-model", "base_url": llm.base_url}
        gate = {"name": "forms", "command": FORMS_GATE, "timeout": 60}
        config = sample_config([gate], models={"developer": developer, "reviewer": reviewer})
        # The fake Claude Code reaches the fake model on loopback, which a fenced network
        # forbids: the scan, not the fence, is under test here.
        config["gates"].update(env=[HOOK], sandbox="none")
        registry = json.dumps({"models": {"fake-model": fake_model_entry(llm.base_url)}})
        with running_stack(tmp_path, config, {".semspec/models.yaml": registry}) as stack:
            submitted = stack.cli(
                "task", "submit", "Configure the hook", "--id", TASK_ID, "--file", "leak.txt",
                "--criterion", "leak.txt exists", "--json", timeout=120,
            )  # fmt: skip
            assert submitted.returncode == 0, submitted.stdout + submitted.stderr
            status = stack.wait_status(
                TASK_ID, lambda s: bool(s.get("pending_escalation") or s["outcome"]), 150
            )
            history = asyncio.run(history_text(stack, TASK_ID))
            shown = TaskStatus("t", "", "reviewer", 1, 0, 1, base_commit=status["base_commit"],
                               worktree=status["worktree"])  # fmt: skip
            console = asyncio.run(task_diff(shown, stack.repo))
            review_context = stack.cli("review", "context", TASK_ID)
            worktree = Path(status["worktree"])
            leak_file = worktree / "leak.txt"
            assert leak_file.is_file(), json.dumps(status, indent=1)[:6000]
            written = leak_file.read_text(encoding="utf-8")
            gate_logs = sorted((stack.run_dir / "logs" / TASK_ID).rglob("forms.log"))
            gate_log = gate_logs[0].read_text(encoding="utf-8") if gate_logs else ""
            # A human's approve does not override the scan: the commit is refused again.
            answered = stack.cli("escalations", "resolve", TASK_ID, "--action", "approve")
            final = stack.wait_status(TASK_ID, lambda s: bool(s["outcome"]), 60)
            stored = files_holding(stack.run_dir, leaks)
        objects = subprocess.run(
            ["git", "-C", str(stack.repo), "log", "--all", "-p", "--format=%H %s"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        reviewer_requests = [json.dumps(r.body) for r in llm.requests_for("reviewer")]

    # The agent did write the key, and the gate did print the hook: only the scan keeps them.
    assert key in written and base64.b64encode(key.encode()).decode() in written
    assert gate_log.count(MASK) >= 5, gate_log
    escalation = status["pending_escalation"]
    assert escalation is not None, status
    assert escalation["reason"] == "secret_in_change"
    assert "leak.txt:1" in escalation["message"] and "leak.txt:2" in escalation["message"]
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert final["outcome"] == "failed", final
    assert "not committed" in final["reason"] and final["commit_id"] in (None, "")
    assert pygit2.Repository(str(stack.repo)).lookup_branch(f"semspec/task/{TASK_ID}").target == (
        pygit2.Repository(str(stack.repo)).lookup_branch("main").target
    )
    # The reviewer was asked, with the change masked.
    assert reviewer_requests and all("leak.txt" in r for r in reviewer_requests[:1])
    assert [holding(r, leaks) for r in reviewer_requests if holding(r, leaks)] == []
    assert "leak.txt" in console.patch and holding(console.patch, leaks) == []
    assert review_context.returncode == 0, review_context.stderr
    assert holding(review_context.stdout, leaks) == []
    assert holding(history, leaks) == []
    assert holding(gate_log, leaks) == []
    # No file of the run folder but the worktree's own holds a form (events: NATS's store).
    assert {f: n for f, n in stored.items() if not f.startswith("worktrees/")} == {}
    assert holding(objects, leaks) == []
