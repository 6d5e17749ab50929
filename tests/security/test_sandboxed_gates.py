"""Agent-written code runs fenced: under bubblewrap a gate (or the command developer) writes only
its worktree and a private /tmp, reaches no network unless the gate says ``network: true`` (and
then none of this machine's loopback: ``test_fence_network.py`` tries the stack's ports), and
cannot see the run folder that holds the worktree; a timeout still ends all it started. Without
bubblewrap (``sandbox: none``, or ``auto`` where it is missing) the worker warns once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from semspec.agents.command_developer import CommandDeveloper, CommandFencing
from semspec.agents.protocol import DeveloperRequest
from semspec.core.errors import ConfigError
from semspec.core.sandbox import Sandbox, choose_sandbox
from semspec.workflow.gates import GateFencing, GateResult, GateSpec, run_gate
from tests.support.stack import cli_env, make_sample_repo

MAX_OUTPUT = 16_384
SERVICES = '{"services": {"nats": {"address": "nats://127.0.0.1:4222", "secret": "run-folder"}}}'


@pytest.fixture(scope="module")
def bwrap() -> Sandbox:
    """bubblewrap as the worker would use it; CI installs it, so there a missing one fails."""
    try:
        return choose_sandbox("bwrap")
    except ConfigError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the sandbox tests must run under CI: {exc.message}")
        pytest.skip(exc.message)


@dataclass
class Layout:
    """A run folder as ``semspec up`` leaves it, with one task's worktree inside."""

    run_dir: Path
    worktree: Path

    @property
    def logs(self) -> Path:
        return self.run_dir / "logs" / "t1"


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    run_dir = tmp_path / "repo" / ".semspec" / "run"
    worktree = run_dir / "worktrees" / "t1"
    worktree.mkdir(parents=True)
    (run_dir / "services.json").write_text(SERVICES, encoding="utf-8")
    return Layout(run_dir, worktree)


def python_gate(code: str, *, network: bool = False, timeout_s: float = 30.0) -> GateSpec:
    script = code.replace("'", "'\"'\"'")
    return GateSpec("probe", f"{sys.executable} -c '{script}'", True, timeout_s, ".", network)


async def run_fenced(
    sandbox: Sandbox, layout: Layout, spec: GateSpec, env_names: tuple[str, ...] = ()
) -> GateResult:
    fencing = GateFencing(sandbox, env_names, (layout.run_dir,))
    return await run_gate(spec, layout.worktree, layout.logs, MAX_OUTPUT, fencing=fencing)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback port the test listens on, and what each connection to it sent."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                received.append(conn.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received
    finally:
        stop.set()
        thread.join(5)
        server.close()


def connect_code(port: int) -> str:
    return (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "s.sendall(b'hello from the gate')\n"
        "s.close()\n"
    )


async def test_a_fenced_gate_cannot_connect_to_a_loopback_port(
    bwrap: Sandbox, layout: Layout, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener

    result = await run_fenced(bwrap, layout, python_gate(connect_code(port)))

    assert not result.passed
    assert "Error" in result.output  # ConnectionRefused / network unreachable, inside the fence
    time.sleep(0.3)
    assert received == []


async def test_a_gate_with_network_true_gets_a_network_but_not_the_hosts_loopback(
    bwrap: Sandbox, layout: Layout, listener: tuple[int, list[bytes]]
) -> None:
    port, received = listener
    code = "print('ROUTES', open('/proc/net/route').read().split())\n" + connect_code(port)

    result = await run_fenced(bwrap, layout, python_gate(code, network=True))

    assert not result.passed
    # slirp4netns's tap0 carries the default route; the worker's loopback is out of reach.
    assert "'tap0', '00000000', '0202000A'" in result.output, result.output
    assert "ConnectionRefusedError" in result.output
    time.sleep(0.3)
    assert received == []


WRITE_EVERYWHERE = """
import os, sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as f:
            f.write("written by the gate")
        print("WROTE", path)
    except OSError as exc:
        print("REFUSED", path, type(exc).__name__)
"""


async def test_a_fenced_gate_writes_its_worktree_and_nothing_outside(
    bwrap: Sandbox, layout: Layout, shared_tmp: Path
) -> None:
    name = f"semspec-probe-{uuid.uuid4().hex[:8]}"
    inside = layout.worktree / "result.txt"
    outside = [shared_tmp / name, Path.home() / name, layout.run_dir.parent / name]
    script = WRITE_EVERYWHERE.replace("sys.argv[1:]", repr([str(inside), *map(str, outside)]))

    try:
        result = await run_fenced(bwrap, layout, python_gate(script))
        escaped = [path for path in outside if path.exists()]
    finally:
        for path in outside:
            path.unlink(missing_ok=True)

    assert result.passed, result.output
    assert inside.read_text(encoding="utf-8") == "written by the gate"
    assert escaped == []
    assert f"REFUSED {Path.home() / name} OSError" in result.output


async def test_a_fenced_gate_cannot_read_the_run_folder(bwrap: Sandbox, layout: Layout) -> None:
    services = layout.run_dir / "services.json"
    code = f"print(open({str(services)!r}).read())"

    result = await run_fenced(bwrap, layout, python_gate(code))
    listing = await run_fenced(
        bwrap, layout, python_gate(f"import os; print(sorted(os.listdir({str(layout.run_dir)!r})))")
    )

    assert not result.passed
    assert "FileNotFoundError" in result.output
    assert "run-folder" not in result.output
    # Only the way down to the worktree is left of the run folder.
    assert listing.passed and "['worktrees']" in listing.output


async def test_a_fenced_gate_cannot_unmount_its_way_into_the_run_folder_or_remount_the_root(
    bwrap: Sandbox, layout: Layout
) -> None:
    # Run as root (as CI is), bubblewrap would leave the gate every capability.
    probe = Path("/etc") / f"semspec-probe-{uuid.uuid4().hex[:8]}"
    services = layout.run_dir / "services.json"
    command = (
        f"umount -l {layout.run_dir}; cat {services}; "
        f"mount -o remount,rw,bind /; touch {probe}; exit 0"
    )

    try:
        result = await run_fenced(bwrap, layout, GateSpec("escape", command, True, 30.0, "."))
        escaped = probe.exists()
    finally:
        probe.unlink(missing_ok=True)

    assert "run-folder" not in result.output
    assert not escaped


async def test_programs_under_tmp_run_fenced_and_the_rest_of_tmp_stays_private(
    bwrap: Sandbox, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A virtual environment under /tmp, on PATH, as in a CI checkout or a scratch clone.
    scratch = Path(tempfile.mkdtemp(prefix="semspec-scratch-", dir="/tmp"))
    venv = scratch / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (venv / "lib").mkdir()
    (venv / "lib" / "data.txt").write_text("library data", encoding="utf-8")
    tool = venv / "bin" / "semspec-probe-tool"
    tool.write_text(f"#!/bin/sh\ncat {venv}/lib/data.txt\n", encoding="utf-8")
    tool.chmod(0o755)
    beside = scratch / "notes.txt"
    beside.write_text("not for gates", encoding="utf-8")
    monkeypatch.setenv("PATH", f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    command = (
        f"semspec-probe-tool; test -e {beside} && echo SEES_BESIDE; "
        f"touch {venv}/written 2>/dev/null || echo VENV_READ_ONLY"
    )
    spec = GateSpec("probe", command, True, 30.0, ".", False)
    try:
        result = await run_fenced(bwrap, layout, spec)
        written = (venv / "written").exists()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    assert "library data" in result.output, result.output
    # The venv is read-only inside, and the folder around it stays out of sight.
    assert "SEES_BESIDE" not in result.output
    assert "VENV_READ_ONLY" in result.output
    assert not written


async def test_a_fenced_gates_tmp_is_private(bwrap: Sandbox, layout: Layout) -> None:
    host_file = Path("/tmp") / f"semspec-host-{uuid.uuid4().hex[:8]}"
    gate_file = Path("/tmp") / f"semspec-gate-{uuid.uuid4().hex[:8]}"
    host_file.write_text("the host's", encoding="utf-8")
    code = (
        "import os\n"
        f"print('SEES_HOST_FILE', os.path.exists({str(host_file)!r}))\n"
        f"open({str(gate_file)!r}, 'w').write('the gate')\n"
        "print('TMPDIR', os.environ['TMPDIR'])\n"
    )
    try:
        result = await run_fenced(bwrap, layout, python_gate(code))
        leaked = gate_file.exists()
    finally:
        host_file.unlink()
        gate_file.unlink(missing_ok=True)

    assert result.passed, result.output
    assert "SEES_HOST_FILE False" in result.output
    assert "TMPDIR /tmp" in result.output
    assert not leaked


@pytest.mark.slow  # waits out a fenced gate's timeout
async def test_a_timed_out_fenced_gate_leaves_no_process_behind(
    bwrap: Sandbox, layout: Layout
) -> None:
    tick = layout.worktree / "tick"
    # A background loop (in its own session, as a daemon would be) and a hang in front.
    command = "setsid sh -c 'while :; do date +%s%N > tick; sleep 0.05; done' & exec sleep 600"
    spec = GateSpec("hang", command, True, 1.0, ".")

    result = await run_fenced(bwrap, layout, spec)
    first = tick.read_text(encoding="utf-8")
    time.sleep(0.5)

    assert result.timed_out
    assert tick.read_text(encoding="utf-8") == first


async def test_a_gate_gets_the_base_environment_and_what_gates_env_names(
    bwrap: Sandbox, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSPEC_PROBE_TOOL_HOME", "/opt/tool")
    monkeypatch.setenv("SEMSPEC_PROBE_API_KEY", "not-for-gates-123456")
    code = "import json, os; print(json.dumps(sorted(os.environ)))"

    result = await run_fenced(bwrap, layout, python_gate(code), ("SEMSPEC_PROBE_TOOL_HOME",))

    names = set(json.loads(result.output.strip().splitlines()[-1]))
    assert "SEMSPEC_PROBE_TOOL_HOME" in names and "PATH" in names
    assert "SEMSPEC_PROBE_API_KEY" not in names
    assert names <= {
        *os.environ,
        "PWD",
        "SHLVL",
        "_",
        "TMPDIR",
        "XDG_CACHE_HOME",
    }


def probe_request(layout: Layout) -> DeveloperRequest:
    return DeveloperRequest(
        task_id="t1",
        title="Probe",
        description="Probe the fence.",
        criteria=[],
        task_files=[],
        worktree=str(layout.worktree),
        iteration=1,
    )


AGENT = """
import os, pathlib, sys
prompt = sys.stdin.read()
pathlib.Path("agent_was_here.txt").write_text("yes")
for path in sys.argv[1:]:
    try:
        print(path, "READ", len(open(path).read()))
    except OSError as exc:
        print(path, "REFUSED", type(exc).__name__)
home_probe = os.path.join(os.environ["HOME"], ".semspec-agent-probe")
try:
    open(home_probe, "w").write("x")
    print("HOME WROTE")
except OSError:
    print("HOME REFUSED")
print("KEYS", sorted(k for k in os.environ if k.endswith("_KEY")))
"""


async def test_the_command_developer_runs_fenced_with_only_its_own_key(
    bwrap: Sandbox, layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSPEC_PROBE_AGENT_KEY", "the-agents-own-key-123")
    monkeypatch.setenv("SEMSPEC_PROBE_OTHER_KEY", "someone-elses-key-456")
    (layout.worktree / "agent.py").write_text(AGENT, encoding="utf-8")
    services = layout.run_dir / "services.json"
    fencing = CommandFencing("bwrap", ("SEMSPEC_PROBE_AGENT_KEY",), (layout.run_dir,))
    agent = CommandDeveloper(f"{sys.executable} agent.py {services}", timeout_s=30, fencing=fencing)
    try:
        result = await agent.develop(probe_request(layout))
    finally:
        home_probe = Path.home() / ".semspec-agent-probe"
        escaped = home_probe.exists()
        home_probe.unlink(missing_ok=True)

    assert result.outcome == "submitted", result.summary
    assert (layout.worktree / "agent_was_here.txt").read_text(encoding="utf-8") == "yes"
    assert f"{services} REFUSED FileNotFoundError" in result.summary
    # Its home is a private one in the run folder, not the worker's (docs/security.md).
    assert "HOME WROTE" in result.summary and not escaped
    assert "KEYS ['SEMSPEC_PROBE_AGENT_KEY']" in result.summary


async def test_a_command_developer_named_by_a_path_in_the_worktree_runs_fenced(
    bwrap: Sandbox, layout: Layout
) -> None:
    agent = layout.worktree / "agent.sh"
    agent.write_text("#!/bin/sh\ncat > prompt.txt\necho done\n", encoding="utf-8")
    agent.chmod(0o755)
    fencing = CommandFencing("bwrap", (), (layout.run_dir,))
    developer = CommandDeveloper("./agent.sh", timeout_s=30, fencing=fencing)

    result = await developer.develop(probe_request(layout))

    assert (result.outcome, result.summary) == ("submitted", "done")
    assert "Probe the fence." in (layout.worktree / "prompt.txt").read_text(encoding="utf-8")


WARN_TWICE = """
import sys
from semspec.core.logging import configure_logging
from semspec.core.sandbox import choose_sandbox
configure_logging("json", "INFO")
print(*(choose_sandbox(sys.argv[1]).in_use for _ in range(3)))
"""


@pytest.mark.parametrize(
    ("mode", "path", "reason"),
    [("none", None, "gates.sandbox is none"), ("auto", "empty", "bwrap is not on PATH")],
)
def test_unfenced_gates_are_warned_about_once_per_process(
    tmp_path: Path, mode: str, path: str | None, reason: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    if path == "empty":
        env["PATH"] = str(tmp_path)  # a folder without bwrap
    done = subprocess.run(
        [sys.executable, "-c", WARN_TWICE, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["none", "none", "none"]
    warnings = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [(w["level"], w["reason"]) for w in warnings] == [("warning", reason)]


def test_sandbox_bwrap_without_bubblewrap_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        choose_sandbox("bwrap", {"PATH": str(tmp_path)})

    assert caught.value.field == "gates.sandbox"
    assert "apt-get install bubblewrap" in (caught.value.hint or "")


@pytest.mark.parametrize(
    ("mode", "shown"), [("auto", {"sandbox": "bwrap"}), ("none", {"sandbox": "none"})]
)
def test_status_shows_the_sandbox_gates_get(
    bwrap: Sandbox, tmp_path: Path, mode: str, shown: dict[str, str]
) -> None:
    repo = make_sample_repo(tmp_path / "repo", {"gates": {"sandbox": mode}})
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "status"]
    env = cli_env()

    as_json = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env, timeout=60)
    table = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)

    worker = next(s for s in json.loads(as_json.stdout) if s["name"] == "worker")
    assert shown.items() <= (worker["extra"] or {}).items()
    expected = "run under bubblewrap" if mode == "auto" else "no sandbox: gates.sandbox is none"
    assert expected in table.stdout


def test_auto_uses_bubblewrap_where_it_works(bwrap: Sandbox) -> None:
    assert choose_sandbox("auto").in_use == "bwrap"
    assert bwrap.bwrap == shutil.which("bwrap")
