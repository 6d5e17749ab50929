"""The web console over real HTTP, as ``semspec up`` starts it on a real stack: who it answers
(the holder of this start's session, from its own origin and host name), what the board
lists, what its event stream carries, and ``ui``/``up``/``down`` around it.

The console answers only at its ``s-<hex>.localhost`` name, which the system resolver may not
know (browsers resolve ``*.localhost`` themselves): clients here connect to 127.0.0.1 and send
that name as ``Host``, as a browser does."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2 as httpx
import nats
import pytest

from semspec.console.app import RETRY_S
from semspec.console.live import QUEUE_SIZE, RELOAD, Listener, LiveMessage
from semspec.console.serve import SHUTDOWN_S
from semspec.core.config.models import RiskLevel
from semspec.core.run_folder import cmdline_of
from semspec.services.console_session import (
    COOKIE,
    RENEW_AFTER_S,
    SESSION_S,
    ConsoleSession,
    load_session,
    session_file,
)
from semspec.vocabulary.events import UserSignal
from semspec.vocabulary.signal_evidence import ConflictEvidence
from semspec.vocabulary.subjects import signal_intake_subject
from tests.support.event_order import check_one_turn
from tests.support.stack import (
    Stack,
    check_gate,
    cli_env,
    make_sample_repo,
    running_stack,
    sample_config,
)

GOOD = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
APPROVE = {"verdict": "approve", "summary": "looks right"}
EVIL = "http://evil.example"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("console"), sample_config([check_gate()])) as up:
        yield up


def session_of(stack: Stack, port: int | None = None) -> ConsoleSession:
    """The session of the console ``up`` started (or of the one serving on ``port``)."""
    port = port or stack.records()["console"].ports["http"]
    found = load_session(session_file(stack.run_dir, port))
    assert found is not None, f"no session file for the console on port {port}"
    return found


def client_of(session: ConsoleSession) -> httpx.Client:
    """An HTTP client of the console that names it as a browser does (no cookie yet)."""
    return httpx.Client(
        base_url=f"http://127.0.0.1:{session.port}",
        headers={"Host": session.authority},
        timeout=10,
    )


def cookie(value: str) -> dict[str, str]:
    """The header a browser holding the session cookie ``value`` sends."""
    return {"Cookie": f"{COOKIE}={value}"}


@contextmanager
def logged_in(stack: Stack) -> Iterator[httpx.Client]:
    """A client holding the session cookie the token URL gives."""
    session = session_of(stack)
    with client_of(session) as client:
        assert client.get("/", params={"token": session.secret}).status_code == 303
        yield client


def test_a_request_without_the_token_is_refused_and_shows_no_data(stack: Stack) -> None:
    with client_of(session_of(stack)) as client:
        for path in (
            "/",
            "/monitor",
            "/inbox",
            "/knowledge",
            "/tasks/x",
            "/events",
            "/static/console.js",
        ):
            answer = client.get(path)
            assert answer.status_code == 401, path
            assert answer.headers["content-type"].startswith("text/plain"), path
            assert "<table" not in answer.text and "set-cookie" not in answer.headers


def test_a_wrong_token_is_refused_without_a_cookie(stack: Stack) -> None:
    session = session_of(stack)
    with client_of(session) as client:
        answer = client.get("/", params={"token": session.secret[:-1] + "x"})
    assert answer.status_code == 403
    assert "set-cookie" not in answer.headers


def test_the_token_gives_a_strict_http_only_host_only_cookie_and_leaves_the_address_bar(
    stack: Stack,
) -> None:
    session = session_of(stack)
    with client_of(session) as client:
        answer = client.get("/monitor", params={"token": session.secret, "a": "1"})
        away = client.get(
            f"http://127.0.0.1:{session.port}//evil.example/x", params={"token": session.secret}
        )
    assert answer.status_code == 303
    assert answer.headers["location"] == "/monitor?a=1"
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    flags = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/", f"max-age={SESSION_S}"} <= flags
    assert not [flag for flag in flags if flag.startswith("domain")]  # this host name only
    assert session.secret not in cookie  # the cookie is not the URL's token
    assert answer.headers["referrer-policy"] == "same-origin"
    assert away.headers["location"] == "/evil.example/x"  # never to another site
    with logged_in(stack) as client:
        assert client.get("/monitor").status_code == 200


def test_a_cookie_past_its_lifetime_or_altered_is_refused(stack: Stack) -> None:
    session = session_of(stack)
    now = int(time.time())
    stale = session.cookie_value(now - SESSION_S - 5)
    fresh = session.cookie_value(now)
    issued, _, mac = fresh.partition(".")
    altered = f"{issued}.{mac[:-1]}{'0' if mac[-1] != '0' else '1'}"
    later = f"{int(issued) + 1}.{mac}"  # a later issue time under the same MAC
    with client_of(session) as client:
        assert client.get("/", headers=cookie(fresh)).status_code == 200
        for value in (stale, altered, later, "", "x.y", session.secret):
            assert client.get("/", headers=cookie(value)).status_code == 401, value


def test_a_cookie_in_use_is_renewed(stack: Stack) -> None:
    session = session_of(stack)
    older = session.cookie_value(int(time.time()) - RENEW_AFTER_S - 5)
    with client_of(session) as client:
        answer = client.get("/monitor", headers=cookie(older))
    assert answer.status_code == 200
    renewed = answer.headers["set-cookie"]
    assert renewed.startswith(f"{COOKIE}=") and older not in renewed
    value = renewed.split(";", 1)[0].split("=", 1)[1]
    assert session.cookie_issued(value, time.time()) is not None


def test_a_post_from_another_origin_is_refused(stack: Stack) -> None:
    origin = session_of(stack).origin
    with logged_in(stack) as client:
        assert client.post("/", headers={"Origin": EVIL}).status_code == 403
        assert client.post("/").status_code == 403  # no Origin: not from the console's page
        cross_site = {"Origin": origin, "Sec-Fetch-Site": "cross-site"}
        assert client.post("/", headers=cross_site).status_code == 403
        # The bare loopback address is another origin now.
        loopback = origin.replace(session_of(stack).host, "127.0.0.1")
        assert client.post("/", headers={"Origin": loopback}).status_code == 403
        # From its own page the request reaches the route (the board takes no POST).
        assert client.post("/", headers={"Origin": origin}).status_code == 405


def test_a_foreign_host_header_is_refused(stack: Stack) -> None:
    session = session_of(stack)
    port = session.port
    hosts = (
        f"evil.example:{port}",
        f"localhost:{port}",
        f"127.0.0.1:{port}",
        "127.0.0.1",
        f"s-0000000000000000.localhost:{port}",
        session.host,
        f"{session.host}:1",
    )
    with logged_in(stack) as client:
        for host in hosts:
            assert client.get("/", headers={"Host": host}).status_code == 403, host


def test_no_answer_carries_cors_headers(stack: Stack) -> None:
    session = session_of(stack)
    preflight = {"Origin": EVIL, "Access-Control-Request-Method": "POST"}
    with logged_in(stack) as client, client_of(session) as stranger:
        answers = [
            client.get("/", headers={"Origin": EVIL}),
            client.options("/", headers=preflight),
            client.get("/static/console.js", headers={"Origin": EVIL}),
            client.post("/", headers={"Origin": EVIL}),
            stranger.get("/", params={"token": session.secret}, headers={"Origin": EVIL}),
            stranger.get("/", headers={"Origin": EVIL}),
        ]
    for answer in answers:
        assert not [h for h in answer.headers if h.lower().startswith("access-control-")]
        assert answer.headers["x-frame-options"] == "DENY"


def test_the_board_lists_a_submitted_task_with_a_link_to_it(stack: Stack) -> None:
    task_id = f"board-{uuid.uuid4().hex[:8]}"
    script = [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}]
    done = stack.submit_scripted(task_id, script, "--wait", "--json")
    assert done.returncode == 0, done.stderr
    asyncio.run(publish_signal(stack.nats_url(), conflict(task_id, "warn")))
    row = f'<tr id="task-{task_id}" data-task-id="{task_id}" data-state="approved">'
    signal_cell = '<td data-field="signal">warn: conflicting_changes</td>'
    deadline = time.monotonic() + 20
    with logged_in(stack) as client:
        # Temporal's list of workflows catches up with a closed one a moment later.
        while True:
            board = client.get("/")
            assert board.status_code == 200
            approved = board.text.split('data-column="approved"', 1)[1].split("</table>", 1)[0]
            if signal_cell in approved or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert board.headers["cache-control"] == "no-store"
    assert row in approved, board.text
    assert f'<a href="/tasks/{task_id}">' in approved
    assert signal_cell in approved.split(row, 1)[1].split("</tr>", 1)[0]


def test_the_event_stream_delivers_a_signal_published_on_nats(stack: Stack) -> None:
    sent = conflict("some-task", "warn", message="task some-task: <b>conflict</b>")
    signal_id = sent.signal_id
    with logged_in(stack) as client, client.stream("GET", "/events") as events:
        assert events.status_code == 200
        assert events.headers["content-type"].startswith("text/event-stream")
        asyncio.run(publish_signal(stack.nats_url(), sent))
        received = read_event(events.iter_lines(), "signal", deadline_s=20)
    assert received["signal_id"] == signal_id
    assert received["task_id"] == "some-task"
    assert received["level"] == "warn"
    assert received["fields"] == {"signal": "warn: conflicting_changes"}
    assert received["message"] == "task some-task: <b>conflict</b>"  # the page sets it as text


def test_the_event_stream_carries_a_running_task_row_to_its_end(stack: Stack) -> None:
    task_id = f"live-{uuid.uuid4().hex[:8]}"
    script = [{"developer": {"write": {"calc.py": GOOD}}, "reviewer": APPROVE}]
    rows: list[dict[str, object]] = []
    with logged_in(stack) as client, client.stream("GET", "/events") as events:
        assert stack.submit_scripted(task_id, script).returncode == 0
        lines = events.iter_lines()
        while not rows or rows[-1]["kind"] != "finished":
            rows.append(read_event(lines, "task", deadline_s=60, task_id=task_id))
    # Agents' steps and a step's own events may come before the loop's iteration event
    # (docs/operations.md); the loop's own events keep their order and finished is last.
    check_one_turn([str(row["kind"]) for row in rows], ["files", "gate", "context", "review"])
    started = next(row for row in rows if row["kind"] == "iteration")
    assert started["fields"] == {"iteration": 1, "state": "running", "phase": "developer",
                                 "retries": "0/1"}  # fmt: skip
    assert rows[-1]["fields"] == {"iteration": 1, "state": "approved", "phase": "approved"}


def test_the_monitor_shows_stored_signals_rule_hits_lag_and_dead_letters(stack: Stack) -> None:
    sent = conflict("watched", "halt")
    signal_id = sent.signal_id
    asyncio.run(publish_signal(stack.nats_url(), sent))
    # Not a loop event: the monitor moves it to the dead-letter stream.
    asyncio.run(publish_raw(stack.nats_url(), "agent.monitor.iteration", b'{"not": "an event"}'))
    deadline = time.monotonic() + 20
    with logged_in(stack) as client:
        while True:
            page = client.get("/monitor")
            assert page.status_code == 200
            if "agent.monitor.iteration" in page.text or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    text = page.text
    assert f'<tr data-signal-id="{signal_id}" data-level="halt">' in text
    assert '<tr data-rule="conflicting_changes"><th scope="row">conflicting_changes</th>' in text
    assert '<td data-lag="pending">' in text
    dead = text.split('class="dead-letters"', 1)[1]
    assert "agent.monitor.iteration" in dead, text


def test_a_page_that_falls_behind_gets_one_reload_and_nothing_more() -> None:
    listener = Listener()
    for n in range(QUEUE_SIZE + 5):
        listener.offer(LiveMessage("task", {"n": n}))
    assert listener.overflowed
    assert listener.queue.qsize() == 1
    assert listener.queue.get_nowait() is RELOAD
    listener.offer(LiveMessage("task", {"n": -1}))
    assert listener.queue.empty()


def test_up_leaves_the_console_out_when_the_config_turns_it_off(tmp_path: Path) -> None:
    config = sample_config([check_gate()], console={"enabled": False})
    with running_stack(tmp_path, config) as quiet:
        assert "console" not in quiet.records()
        again = quiet.cli("up")
        assert again.returncode == 0, again.stderr
        assert "semspec console:" not in again.stdout
        assert [s["name"] for s in quiet.cli_json("status")][-1] == "monitor"


def test_a_console_started_while_nats_is_down_goes_live_once_it_is_back(tmp_path: Path) -> None:
    config = sample_config([check_gate()], console={"enabled": False})
    with running_stack(tmp_path, config) as stack:
        stack.kill("nats")
        argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "ui", "--json"]
        with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=cli_env()) as proc:
            try:
                assert proc.stdout is not None
                shown = json.loads(proc.stdout.readline())
                mine = session_of(stack, shown["port"])
                with client_of(mine) as client:
                    client.timeout = httpx.Timeout(30)
                    assert client.get("/", params={"token": mine.secret}).status_code == 303
                    with client.stream("GET", "/events") as events:
                        stack.restart_nats()
                        sent = conflict("back", "warn")
                        # Published until the feed, retrying every few seconds, passes one on.
                        received = threading.Event()
                        publisher = threading.Thread(
                            target=publish_until, args=(stack.nats_url(), sent, received)
                        )
                        publisher.start()
                        try:
                            got = read_event(events.iter_lines(), "signal", RETRY_S * 4, "back")
                        finally:
                            received.set()
                            publisher.join()
                assert got["reason"] == "conflicting_changes"
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)


def test_ui_without_a_running_stack_says_to_start_one(tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo", sample_config([check_gate()]))
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), "ui"],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(),
        check=False,
    )
    assert done.returncode != 0
    assert "not running" in done.stderr and "semspec up" in done.stderr
    assert not list((repo / ".semspec" / "run").glob("console*"))


def test_ui_serves_the_stack_on_loopback_and_stops_with_a_page_open(stack: Stack) -> None:
    argv = [sys.executable, "-m", "semspec", "--repo", str(stack.repo), "ui", "--json"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=cli_env()) as proc:
        try:
            assert proc.stdout is not None
            shown = json.loads(proc.stdout.readline())
            mine = session_of(stack, shown["port"])
            assert shown["url"] == mine.login_url()
            assert mine.secret != session_of(stack).secret  # each start has its own
            with client_of(mine) as client:
                assert client.get("/", params={"token": mine.secret}).status_code == 303
                assert client.get("/monitor").status_code == 200
                # An open page's event stream never ends by itself; it must not hold up a stop.
                with client.stream("GET", "/events") as events:
                    assert events.status_code == 200
                    proc.send_signal(signal.SIGTERM)
                    started = time.monotonic()
                    assert proc.wait(timeout=30) == 0
                    assert time.monotonic() - started < SHUTDOWN_S + 3
            assert not session_file(stack.run_dir, shown["port"]).exists()
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)


def test_the_board_says_why_when_temporal_does_not_answer(stack: Stack) -> None:
    with logged_in(stack) as client:
        assert client.get("/").status_code == 200
        stack.kill("temporal")
        board = client.get("/")
        assert client.get("/monitor").status_code == 200  # NATS still answers
    assert board.status_code == 503
    assert '<p class="problem" role="alert">Tasks cannot be listed now:' in board.text
    assert 'data-column="running"' in board.text  # the live feed can still fill it


def test_up_prints_the_console_url_and_down_stops_the_console(stack: Stack) -> None:
    # Last in this module: it stops the module's stack. `up` brings back what died before.
    session = session_of(stack)
    address = stack.records()["console"].address
    again = stack.cli("up")
    assert again.returncode == 0, again.stderr
    assert f"semspec console: {session.login_url()}" in again.stdout
    status = stack.cli_json("status")
    (console,) = [s for s in status if s["name"] == "console"]
    assert console["state"] == "up"
    assert console["extra"]["url"] == session.login_url()
    pid = stack.records()["console"].pid
    down = stack.cli("down")
    assert down.returncode == 0, down.stderr
    deadline = time.monotonic() + 10
    while cmdline_of(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cmdline_of(pid) is None
    with pytest.raises(httpx.ConnectError):
        httpx.get(address + "/", timeout=2)
    assert not session_file(stack.run_dir, session.port).exists()


def conflict(task_id: str, level: RiskLevel, message: str = "") -> UserSignal:
    """A ``conflicting_changes`` signal about ``task_id`` at ``level``, with a new id."""
    return UserSignal(
        signal_id=f"sig-{uuid.uuid4().hex[:8]}",
        task_id=task_id,
        level=level,
        reason="conflicting_changes",
        evidence=ConflictEvidence(event_id="e1", files=["calc.py"], other_tasks=["other"]),
        message=message,
    )


async def publish_signal(nats_url: str, sent: UserSignal) -> None:
    """Publish ``sent`` where the monitor publishes signals (the signal stream's intake)."""
    nc = await nats.connect(nats_url, connect_timeout=5)
    try:
        await nc.jetstream().publish(
            signal_intake_subject(sent.level),
            sent.to_json(),
            headers={"Nats-Msg-Id": sent.signal_id},
        )
    finally:
        await nc.close()


def publish_until(nats_url: str, sent: UserSignal, received: threading.Event) -> None:
    """Publish copies of ``sent`` (each with its own id) every half second until ``received``
    (at most a minute)."""
    deadline = time.monotonic() + 60

    async def publish() -> None:
        while not received.is_set() and time.monotonic() < deadline:
            await publish_signal(nats_url, sent.model_copy(update={"signal_id": uuid.uuid4().hex}))
            await asyncio.sleep(0.5)

    asyncio.run(publish())


async def publish_raw(nats_url: str, subject: str, body: bytes) -> None:
    """Publish ``body`` to a stream's ``subject`` as it is."""
    nc = await nats.connect(nats_url, connect_timeout=5)
    try:
        await nc.jetstream().publish(subject, body, headers={"Nats-Msg-Id": uuid.uuid4().hex})
    finally:
        await nc.close()


def read_event(
    lines: Iterator[str], name: str, deadline_s: float, task_id: str | None = None
) -> dict[str, object]:
    """The data of the next server-sent event called ``name`` (about ``task_id``, if given)
    among the stream's ``lines``."""
    deadline = time.monotonic() + deadline_s
    current = ""
    for line in lines:
        if line.startswith("event:"):
            current = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and current == name:
            found: dict[str, object] = json.loads(line.split(":", 1)[1])
            if task_id is None or found["task_id"] == task_id:
                return found
        assert time.monotonic() < deadline, f"no {name} event within {deadline_s}s"
    raise AssertionError(f"the stream ended before a {name} event")
