"""Agent code with network never reaches the stack: a ``network: true`` gate and a command agent,
run as the worker runs them, try every port a real stack listens on (NATS, its monitoring port,
Temporal's gRPC and HTTP ports, the graph server, the console; read from ``services.json``) and
every other listening port of the machine, on ``127.0.0.1``, ``::1`` and slirp4netns's gateway
to the host (``10.0.2.2``), and reach none; unfenced, the same probe finds them open. Their
network still exists (``tap0`` with the default route), a command agent still reaches its model
server on loopback (its role's ``base_url``) and only that, and without slirp4netns agent code
with network refuses to run unless ``gates.sandbox`` is ``none``. The attack also runs with the
launcher started as ``nobody``, as a worker without root would run it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from semspec.agents.command_developer import CommandDeveloper, CommandFencing
from semspec.agents.llm_factory import command_fencing
from semspec.agents.protocol import DeveloperRequest
from semspec.core.config.models import RoleModel
from semspec.core.errors import ConfigError
from semspec.core.sandbox import LAUNCHER, UNFENCED, Fence, Sandbox, sandbox_for
from semspec.workflow.gates import GateFencing, GateSpec, run_gate
from tests.fakes.llm_server import FakeLLMServer, call, text
from tests.fakes.llm_task import APPROVE, NEW_CALC
from tests.security.conftest import SYSTEM_PYTHON, ForeignUser
from tests.support.stack import (
    Stack,
    check_gate,
    cli_env,
    make_sample_repo,
    running_stack,
    sample_config,
)

MAX_OUTPUT = 16_384
PROBE = """
import json, socket, sys
ports = json.load(open(sys.argv[1]))
found = {}
for host in ("127.0.0.1", "::1", "10.0.2.2"):
    for port in ports:
        try:
            socket.create_connection((host, port), timeout=2).close()
            found[f"{host} {port}"] = "open"
        except OSError as exc:
            found[f"{host} {port}"] = type(exc).__name__
routes = open("/proc/net/route").read().split()
json.dump({"found": found, "routes": routes}, open(sys.argv[2], "w"))
print("probed", len(found))
"""
TAP0_DEFAULT_ROUTE = ["tap0", "00000000", "0202000A"]
"""``/proc/net/route``'s line for slirp4netns's default route via 10.0.2.2."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("fence-net"), sample_config([check_gate()])) as s:
        yield s


@pytest.fixture(scope="module")
def fenced() -> Sandbox:
    """bubblewrap with slirp4netns, as the worker finds them; CI installs both."""
    sandbox = sandbox_for("bwrap")
    problem = sandbox.reason or sandbox.network_reason
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"the fence network tests must run under CI: {problem}")
        pytest.skip(problem)
    return sandbox


def stack_ports(run_dir: Path) -> set[int]:
    """Every loopback port ``semspec up`` recorded in ``services.json``."""
    found: set[int] = set()

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                walk(item, name)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str):
            hosts = r"(?:127\.0\.0\.1|localhost|\[::1\])"
            found.update(int(port) for port in re.findall(hosts + r":(\d+)", value))
        elif isinstance(value, int) and key.endswith("port") and value > 0:
            found.add(value)

    walk(json.loads((run_dir / "services.json").read_text(encoding="utf-8")))
    return found


def listening_ports() -> set[int]:
    """Every TCP port something listens on here, any address (``/proc/net/tcp*``)."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text(encoding="ascii").splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.fixture(scope="module")
def targets(stack: Stack) -> list[int]:
    """The stack's ports (at least NATS, Temporal, the graph server and the console) and every
    other listener of the machine."""
    ports = stack_ports(stack.run_dir)
    assert len(ports) >= 4, ports
    assert ports <= listening_ports(), "a recorded port of the stack is not listening"
    return sorted(ports | listening_ports())


def worktree_with_probe(stack: Stack, name: str, ports: list[int]) -> Path:
    """A worktree inside the stack's run folder (where the worker puts them) with the probe."""
    worktree = stack.run_dir / "worktrees" / name
    worktree.mkdir(parents=True)
    (worktree / "probe.py").write_text(PROBE, encoding="utf-8")
    (worktree / "ports.json").write_text(json.dumps(ports), encoding="utf-8")
    return worktree


def reached(report: dict[str, Any]) -> list[str]:
    return sorted(key for key, result in report["found"].items() if result == "open")


def probe_gate() -> GateSpec:
    command = f"{sys.executable} probe.py ports.json report.json"
    return GateSpec("probe", command, True, 120.0, ".", network=True)


async def test_a_network_gate_reaches_no_port_of_the_stack_nor_any_other_loopback_port(
    stack: Stack, fenced: Sandbox, targets: list[int]
) -> None:
    worktree = worktree_with_probe(stack, "gate", targets)
    fencing = GateFencing(fenced, (), (stack.run_dir,))

    result = await run_gate(probe_gate(), worktree, stack.root / "logs", MAX_OUTPUT, None, fencing)

    assert result.passed, result.output
    report = json.loads((worktree / "report.json").read_text(encoding="utf-8"))
    assert reached(report) == []
    assert len(report["found"]) == 3 * len(targets)
    # Its network exists: slirp4netns's tap0 holds the default route.
    assert " ".join(TAP0_DEFAULT_ROUTE) in " ".join(report["routes"])


async def test_unfenced_the_same_probe_finds_the_stacks_ports_open(
    stack: Stack, targets: list[int]
) -> None:
    # The control: the ports are live and the probe would see them (gates.sandbox: none).
    worktree = worktree_with_probe(stack, "unfenced", targets)
    fencing = GateFencing(UNFENCED, (), (stack.run_dir,))

    result = await run_gate(probe_gate(), worktree, stack.root / "logs", MAX_OUTPUT, None, fencing)

    assert result.passed, result.output
    report = json.loads((worktree / "report.json").read_text(encoding="utf-8"))
    assert {f"127.0.0.1 {port}" for port in stack_ports(stack.run_dir)} <= set(reached(report))


def probe_request(worktree: Path) -> DeveloperRequest:
    return DeveloperRequest(
        task_id="t1",
        title="Probe",
        description="Probe the network.",
        criteria=[],
        task_files=[],
        worktree=str(worktree),
        iteration=1,
    )


async def test_a_command_agent_reaches_its_model_on_loopback_and_no_port_of_the_stack(
    stack: Stack, fenced: Sandbox, targets: list[int], tmp_path: Path
) -> None:
    cli = Path(__file__).resolve().parents[1] / "fakes" / "claude_cli.py"
    bash = call("Bash", {"command": f"{sys.executable} probe.py ports.json report.json"})
    with FakeLLMServer(replies=[bash, text("probed")]) as llm:
        model_port = llm_port(llm)
        worktree = worktree_with_probe(stack, "agent", [*targets, model_port])
        command = f"{sys.executable} {cli} --base-url {llm.base_url} -p --output-format stream-json"
        role = RoleModel(provider="command", command=command, base_url=llm.base_url)
        fencing = command_fencing(role, make_sample_repo(tmp_path / "repo", sandbox_config()))
        fencing = CommandFencing(
            fencing.sandbox, hidden=(stack.run_dir,), reachable=fencing.reachable
        )
        agent = CommandDeveloper(command, timeout_s=120, fencing=fencing)
        result = await agent.develop(probe_request(worktree))
        asked = len(llm.requests)

    assert result.outcome == "submitted", result.summary
    assert asked == 2  # the model answered both turns, through the one address let in
    report = json.loads((worktree / "report.json").read_text(encoding="utf-8"))
    assert reached(report) == [f"127.0.0.1 {model_port}"]
    assert " ".join(TAP0_DEFAULT_ROUTE) in " ".join(report["routes"])


def llm_port(llm: FakeLLMServer) -> int:
    return int(llm.root_url.rsplit(":", 1)[1])


def sandbox_config() -> dict[str, Any]:
    return {"gates": {"sandbox": "bwrap"}}


def test_a_command_agents_fence_lets_in_its_loopback_base_url_only(tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo", sandbox_config())
    local = RoleModel(provider="command", command="agent", base_url="http://127.0.0.1:9/v1")
    remote = RoleModel(provider="command", command="agent", base_url="https://api.example/v1")

    assert command_fencing(local, repo).reachable == (("127.0.0.1", 9),)
    assert command_fencing(remote, repo).reachable == ()


def no_slirp_path(tmp_path: Path) -> dict[str, str]:
    """A PATH where bubblewrap is found and slirp4netns is not."""
    folder = tmp_path / "bin"
    folder.mkdir()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    (folder / "bwrap").symlink_to(bwrap)
    return {"PATH": str(folder)}


async def test_without_slirp4netns_a_network_gate_refuses_to_run_naming_what_to_install(
    tmp_path: Path,
) -> None:
    sandbox = sandbox_for("auto", no_slirp_path(tmp_path))
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    fencing = GateFencing(sandbox)
    marker = worktree / "ran"
    spec = GateSpec("net", f"touch {marker}", True, 30.0, ".", network=True)

    with pytest.raises(ConfigError) as caught:
        await run_gate(spec, worktree, tmp_path / "logs", MAX_OUTPUT, None, fencing)
    offline = await run_gate(
        GateSpec("offline", "true", True, 30.0, "."),
        worktree,
        tmp_path / "logs",
        MAX_OUTPUT,
        None,
        fencing,
    )

    assert sandbox.bwrap is not None  # the rest of the fence is there
    assert caught.value.field == "gates.sandbox"
    assert "slirp4netns is not on PATH" in caught.value.message
    assert "apt-get install bubblewrap slirp4netns" in (caught.value.hint or "")
    assert "gates.sandbox: none" in (caught.value.hint or "")
    assert not marker.exists()
    assert offline.passed


async def test_without_slirp4netns_a_command_agent_refuses_unless_the_config_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    agent = worktree / "agent.sh"
    agent.write_text("#!/bin/sh\necho ran > ran.txt\n", encoding="utf-8")
    agent.chmod(0o755)
    monkeypatch.setenv("PATH", no_slirp_path(tmp_path)["PATH"])

    refused = CommandDeveloper("./agent.sh", timeout_s=30, fencing=CommandFencing("auto"))
    with pytest.raises(ConfigError) as caught:
        await refused.develop(probe_request(worktree))
    ran_refused = (worktree / "ran.txt").exists()
    accepted = CommandDeveloper("./agent.sh", timeout_s=30, fencing=CommandFencing("none"))
    result = await accepted.develop(probe_request(worktree))

    assert "slirp4netns is not on PATH" in caught.value.message
    assert not ran_refused
    assert result.outcome == "submitted", result.summary
    assert (worktree / "ran.txt").read_text(encoding="utf-8") == "ran\n"


def test_a_fenced_network_started_by_another_user_reaches_no_port_of_the_stack(
    stack: Stack, fenced: Sandbox, targets: list[int], foreign_user: ForeignUser
) -> None:
    # A worker without root: bubblewrap makes user namespaces, slirp4netns must join the one
    # owning the network namespace. The launcher and the probe run with the system Python.
    home = foreign_user.home / "fence-net"
    worktree = home / "worktree"
    worktree.mkdir(parents=True)
    for name in ("fence_launch.py", "fence_network.py", "fence_forward.py", "parent_watch.py"):
        shutil.copy(Path(LAUNCHER).with_name(name), home / name)
    (worktree / "probe.py").write_text(PROBE, encoding="utf-8")
    (worktree / "ports.json").write_text(json.dumps(targets), encoding="utf-8")
    shutil.chown(home, user="nobody")
    for path in [worktree, *home.iterdir(), *worktree.iterdir()]:
        shutil.chown(path, user="nobody")
    fence = Fence(worktree, (stack.run_dir,), network=True)
    probe = [SYSTEM_PYTHON, "-I", "probe.py", "ports.json", "report.json"]
    argv = fenced.argv(probe, fence, worktree)
    spec = json.loads(argv[-1])
    spec["net"]["python"] = SYSTEM_PYTHON
    launch = [SYSTEM_PYTHON, "-I", "-S", str(home / "fence_launch.py"), json.dumps(spec)]

    done = foreign_user.run(["/bin/sh", "-c", f'cd {worktree} && exec "$@"', "sh", *launch])

    assert done.returncode == 0, done.stderr
    report = json.loads((worktree / "report.json").read_text(encoding="utf-8"))
    assert reached(report) == []
    assert " ".join(TAP0_DEFAULT_ROUTE) in " ".join(report["routes"])


def test_status_says_whether_agent_code_gets_a_network_off_the_loopback(
    fenced: Sandbox, tmp_path: Path
) -> None:
    repo = make_sample_repo(tmp_path / "repo", {"gates": {"sandbox": "auto"}})
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "status"]
    without = {**cli_env(), **no_slirp_path(tmp_path)}

    shown = subprocess.run(argv, capture_output=True, text=True, env=cli_env(), timeout=60)
    missing = subprocess.run(argv, capture_output=True, text=True, env=without, timeout=60)

    assert "with network through slirp4netns" in shown.stdout, shown.stdout
    assert "network: true gates and command agents will fail: slirp4netns is not on PATH" in (
        missing.stdout
    ), missing.stdout


def test_a_model_server_on_a_low_loopback_port_is_a_config_error(
    fenced: Sandbox, tmp_path: Path
) -> None:
    # Without capabilities the fence cannot listen below 1024; say so before anything runs.
    fence = Fence(tmp_path, network=True, reachable=(("127.0.0.1", 80),))

    with pytest.raises(ConfigError) as caught:
        fenced.argv(["true"], fence, tmp_path)

    assert caught.value.field == "models.developer.base_url"
    assert "port of 1024 or above" in (caught.value.hint or "")


GATE_PROBE = (
    "import socket, sys; ports = [{ports}]; opened = []\n"
    "for port in ports:\n"
    "    try:\n"
    "        socket.create_connection(('127.0.0.1', port), timeout=2).close()\n"
    "        opened.append(port)\n"
    "    except OSError:\n"
    "        pass\n"
    "tap0 = '0202000A' in open('/proc/net/route').read()\n"
    "print('OPEN', opened, 'TAP0', tap0); sys.exit(1 if opened or not tap0 else 0)\n"
)


def test_a_tasks_network_gate_run_by_the_stacks_worker_reaches_none_of_its_ports(
    stack: Stack, fenced: Sandbox
) -> None:
    # The whole path: the worker reads the repository's config and runs its gates.
    ports = sorted(stack_ports(stack.run_dir))
    code = GATE_PROBE.format(ports=", ".join(map(str, ports)))
    gate = {"name": "net", "command": f"{sys.executable} -c {shlex.quote(code)}", "network": True}
    repo = stack.sibling_repo(
        "net-gate", {"gates": {"preset": "none", "additional": [gate], "sandbox": "bwrap"}}
    )
    task_id = f"net-{uuid.uuid4().hex[:8]}"
    iterations = [{"developer": {"write": {"calc.py": NEW_CALC}}, "reviewer": APPROVE}]

    done = stack.submit_scripted(task_id, iterations, "--wait", "--json", repo=repo)

    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["outcome"] == "approved", done.stdout
    (log,) = (stack.root / "net-gate" / "run" / "logs" / task_id).rglob("net.log")
    assert "OPEN [] TAP0 True" in log.read_text(encoding="utf-8")
