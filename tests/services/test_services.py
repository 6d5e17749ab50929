"""Pieces of the embedded stack that need no running stack: ports, ownership, launch plans."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from semspec.core.config.models import NatsConfig, SemspecConfig, ServicesConfig, TemporalConfig
from semspec.core.run_folder import ServiceRecord, cmdline_of, is_ours, load_records, save_records
from semspec.services import process
from semspec.services.agents import WorkerSpec
from semspec.services.git_exclude import exclude_from_git
from semspec.services.ports import free_port, port_is_free
from semspec.services.presence import announce
from semspec.services.specs import NatsSpec, TemporalSpec
from tests.support.repos import make_repo
from tests.support.servers import SLEEP_ARGV


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback port held open by this test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def any_port_config() -> SemspecConfig:
    services = ServicesConfig(nats=NatsConfig(port=0), temporal=TemporalConfig(port=0, ui_port=0))
    return SemspecConfig(services=services)


def test_free_port_zero_means_any_free_port() -> None:
    port = free_port(0)
    assert port > 0 and port_is_free(port)


def test_free_port_keeps_a_free_preferred_port(listener: int) -> None:
    preferred = free_port(0, avoid={listener})
    assert free_port(preferred) == preferred


def test_free_port_moves_off_a_port_that_is_taken(listener: int) -> None:
    assert not port_is_free(listener)
    assert free_port(listener) != listener


def test_free_port_never_returns_an_avoided_port() -> None:
    first = free_port(0)
    assert free_port(first, avoid={first}) != first


def test_nats_with_port_zero_takes_a_free_client_port_and_no_monitoring(tmp_path: Path) -> None:
    plan = NatsSpec().plan(any_port_config(), tmp_path, tmp_path / "run", set())
    client = plan.ports["client"]
    # 4222 is the fixed default; "any" must not fall back to it (stacks collide).
    assert client != 4222
    assert plan.address == f"nats://127.0.0.1:{client}"
    # Monitoring shows clients and subjects to any local user: off unless asked for.
    assert "-m" not in plan.argv and "monitor" not in plan.ports


def test_nats_monitoring_runs_on_the_port_the_config_asks_for(tmp_path: Path) -> None:
    wanted = free_port(0)
    config = SemspecConfig(services=ServicesConfig(nats=NatsConfig(port=0, monitor_port=wanted)))
    plan = NatsSpec().plan(config, tmp_path, tmp_path / "run", set())
    assert plan.ports["monitor"] == wanted
    server = plan.ports["monitor_server"]
    assert server != wanted
    # The server's own monitoring port sits behind the Host guard, which owns the wanted one.
    guard, nats_server = plan.argv[: plan.argv.index("--")], plan.argv[plan.argv.index("--") + 1 :]
    assert guard[1:3] == ["-m", "semspec.services.host_guard"]
    assert f"--route={wanted}:{server}" in guard
    assert nats_server[nats_server.index("-m") + 1] == str(server)
    assert nats_server[nats_server.index("-a") + 1] == "127.0.0.1"


def test_temporal_is_headless_unless_the_ui_is_asked_for(tmp_path: Path) -> None:
    taken = {free_port(0)}
    plan = TemporalSpec().plan(any_port_config(), tmp_path, tmp_path / "run", taken)
    ports = list(plan.ports.values())
    assert set(plan.ports) == {"grpc", "http", "metrics"}
    assert len(set(ports)) == 3 and not set(ports) & taken
    assert 7233 not in ports
    assert "--headless" in plan.argv and "--ui-port" not in plan.argv
    assert "ui_url" not in plan.extra


def test_temporal_with_the_ui_on_serves_it_behind_the_host_guard(tmp_path: Path) -> None:
    taken = {free_port(0)}
    services = ServicesConfig(temporal=TemporalConfig(port=0, ui=True, ui_port=0))
    plan = TemporalSpec().plan(SemspecConfig(services=services), tmp_path, tmp_path / "run", taken)
    ports = list(plan.ports.values())
    assert len(set(ports)) == 5 and not set(ports) & taken
    assert 7233 not in ports and 8233 not in ports
    assert "--headless" not in plan.argv
    assert plan.argv[plan.argv.index("--ui-port") + 1] == str(plan.ports["ui_server"])
    assert f"--route={plan.ports['ui']}:{plan.ports['ui_server']}" in plan.argv
    assert plan.extra["ui_url"] == f"http://127.0.0.1:{plan.ports['ui']}"


def test_worker_is_launched_with_the_repo_option_before_the_command(tmp_path: Path) -> None:
    plan = WorkerSpec().plan(SemspecConfig(), tmp_path, tmp_path / "run", set())
    assert plan.argv[1:] == ["-m", "semspec", "--repo", str(tmp_path), "worker"]
    assert plan.address == "task queue semspec"


def test_a_python_service_is_healthy_only_once_the_recorded_pid_announced_itself(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    spec = WorkerSpec()
    plan = spec.plan(SemspecConfig(), tmp_path, run_dir, set())
    record = ServiceRecord("worker", 999_999, plan.argv, plan.address, extra=plan.extra)
    assert not spec.healthy(record)
    announce(run_dir, "worker", "this-test")
    assert not spec.healthy(record)  # our PID announced, not the recorded one
    record.pid = os.getpid()
    assert spec.healthy(record)


def test_is_ours_needs_the_recorded_command_line(sleeper: subprocess.Popen[bytes]) -> None:
    assert is_ours(sleeper.pid, SLEEP_ARGV)
    assert not is_ours(sleeper.pid, [sys.executable, "-m", "semspec", "worker"])
    assert not is_ours(sleeper.pid, [])


def test_stop_leaves_a_process_whose_command_line_differs(
    sleeper: subprocess.Popen[bytes],
) -> None:
    assert not process.stop(sleeper.pid, ["nats-server", "-js"])
    assert sleeper.poll() is None


def test_stop_ends_a_matching_process_even_when_it_leads_no_group(
    sleeper: subprocess.Popen[bytes],
) -> None:
    assert process.stop(sleeper.pid, SLEEP_ARGV, grace_s=5)
    assert sleeper.wait(timeout=5) is not None


def test_a_process_that_exited_is_not_ours(sleeper: subprocess.Popen[bytes]) -> None:
    sleeper.kill()
    sleeper.wait(timeout=5)
    assert cmdline_of(sleeper.pid) is None
    assert not is_ours(sleeper.pid, SLEEP_ARGV)


def test_records_round_trip_and_a_broken_state_file_means_none(tmp_path: Path) -> None:
    record = ServiceRecord("nats", 12, ["nats-server"], "nats://127.0.0.1:1", {"client": 1})
    save_records(tmp_path, {"nats": record})
    assert load_records(tmp_path) == {"nats": record}
    (tmp_path / "services.json").write_text("{not json", encoding="utf-8")
    assert load_records(tmp_path) == {}


def untracked(repo: Path) -> set[str]:
    statuses = pygit2.Repository(str(repo)).status()
    return {path for path, flags in statuses.items() if flags & pygit2.GIT_STATUS_WT_NEW}


def test_exclude_hides_the_run_directory_from_git_status(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"README.md": "# r\n"})
    run_file = repo / ".semspec" / "run" / "worktrees" / "t1" / "calc.py"
    run_file.parent.mkdir(parents=True)
    run_file.write_text("x = 1\n", encoding="utf-8")
    assert untracked(repo) == {".semspec/run/worktrees/t1/calc.py"}
    written = exclude_from_git(repo, repo / ".semspec" / "run")
    assert written == repo / ".git" / "info" / "exclude"
    assert untracked(repo) == set()


def test_exclude_is_written_once_however_often_it_runs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"README.md": "# r\n"})
    for _ in range(3):
        exclude_from_git(repo, repo / ".semspec" / "run")
    text = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert text.splitlines().count("/.semspec/run/") == 1


def test_exclude_anchors_the_pattern_at_the_checkout_root_for_a_nested_project(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, {"svc/README.md": "# svc\n"})
    exclude_from_git(repo / "svc", repo / "svc" / ".semspec" / "run")
    text = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert "/svc/.semspec/run/" in text.splitlines()


def test_exclude_from_a_linked_worktree_goes_to_the_shared_exclude_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    main = make_repo(repo, {"README.md": "# r\n"})
    linked = tmp_path / "linked"
    main.add_worktree("linked", str(linked))
    written = exclude_from_git(linked, linked / ".semspec" / "run")
    assert written == repo / ".git" / "info" / "exclude"
    assert "/.semspec/run/" in written.read_text(encoding="utf-8").splitlines()


def test_exclude_does_nothing_outside_a_git_checkout(tmp_path: Path) -> None:
    assert exclude_from_git(tmp_path, tmp_path / ".semspec" / "run") is None
    assert exclude_from_git(tmp_path, Path("/elsewhere/run")) is None
