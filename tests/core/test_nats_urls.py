"""``services.nats.url`` as a list of cluster nodes: validated by ``semspec config validate``, and
a command whose nodes all refuse it fails with one clear error after a bounded wait."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.nats_connect import EXTERNAL_HINT, HINT, connect_nats
from semspec.services.ports import free_port
from semspec.services.specs import binary
from tests.support.repos import make_repo
from tests.support.servers import NatsServer
from tests.support.servers import _start as start_process
from tests.support.servers import _stop as stop_process


def _env() -> dict[str, str]:
    """What a CLI subprocess gets: a path, a home, JSON logs and a wide terminal."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/"),
        "SEMSPEC_LOG_FORMAT": "json",
        "COLUMNS": "200",
    }


def _repo(path: Path, nats: dict[str, Any]) -> Path:
    make_repo(path, {"README.md": "# sample\n"})
    # Temporal is named (and not there) so commands get as far as connecting to NATS.
    services = {"nats": nats, "temporal": {"address": "127.0.0.1:9"}}
    config = {"project": {"name": "sample"}, "services": services}
    (path / ".semspec").mkdir()
    (path / ".semspec" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _semspec(repo: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "semspec", "--repo", str(repo), *args]
    return subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=timeout)


def _refused() -> list[str]:
    """URLs of two loopback ports nothing listens on."""
    first = free_port()
    return [f"nats://127.0.0.1:{first}", f"nats://127.0.0.1:{free_port(avoid={first})}"]


@pytest.mark.parametrize(
    "url",
    [
        ["nats://n1.example:4222", "nats://n2.example:4222", "tls://n3.example:4223"],
        "nats://n1.example:4222, nats://n2.example:4222",
        "nats://n1.example",
    ],
)
def test_config_validate_accepts_a_yaml_list_or_a_comma_list_of_urls(
    tmp_path: Path, url: str | list[str]
) -> None:
    done = _semspec(_repo(tmp_path / "repo", {"url": url, "replicas": 3}), "config", "validate")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("url", "field", "says"),
    [
        (["nats://n1.example:4222", "http://n2.example:4222"], "url.1", "the scheme must be one"),
        ("nats://n1.example:4222,nats://n2.example:42x", "url", "the port must be a number"),
        ("nats://127.0.0.1:", "url", "the port must be a number"),
        (["nats://:4222"], "url.0", "names no host"),
        (["nats://n1.example:4222", "ws://n2.example:80"], "url", "mixes websocket"),
        ([], "url", "names no server"),
    ],
)
def test_config_validate_rejects_a_bad_url_naming_the_field(
    tmp_path: Path, url: str | list[str], field: str, says: str
) -> None:
    done = _semspec(_repo(tmp_path / "repo", {"url": url}), "config", "validate", "--json")
    assert done.returncode == 2, done.stderr
    problems = json.loads(done.stdout)["problems"]
    assert [p["field"] for p in problems] == [f"services.nats.{field}"]
    assert says in problems[0]["message"]
    assert "Traceback" not in done.stderr


def test_config_validate_names_every_bad_entry_of_a_url_list_at_its_line(tmp_path: Path) -> None:
    urls = ["nats://n1.example:4222", "nats://n2.example:", "http://n3.example:4222"]
    repo = _repo(tmp_path / "repo", {"url": urls})
    lines = (repo / ".semspec" / "config.yaml").read_text(encoding="utf-8").splitlines()
    done = _semspec(repo, "config", "validate", "--json")
    assert done.returncode == 2, done.stderr
    found = [(p["field"], p["line"], p["message"]) for p in json.loads(done.stdout)["problems"]]
    assert [field for field, _, _ in found] == ["services.nats.url.1", "services.nats.url.2"]
    assert urls[1] in lines[found[0][1] - 1] and urls[2] in lines[found[1][1] - 1]
    assert "the port must be a number" in found[0][2]
    assert "the scheme must be one of" in found[1][2]


def test_a_comma_list_with_two_bad_urls_names_both() -> None:
    with pytest.raises(ValidationError) as caught:
        SemspecConfig.model_validate({"services": {"nats": {"url": "nats://a:, nats://b:0"}}})
    message = caught.value.errors()[0]["msg"]
    assert "'nats://a:': the port" in message and "'nats://b:0': the port" in message


def test_replicas_above_one_on_the_embedded_server_is_a_config_error(tmp_path: Path) -> None:
    done = _semspec(_repo(tmp_path / "repo", {"replicas": 3}), "config", "validate", "--json")
    assert done.returncode == 2
    problems = json.loads(done.stdout)["problems"]
    assert [p["field"] for p in problems] == ["services.nats.replicas"]
    assert "external NATS cluster" in problems[0]["message"]


def test_replicas_default_to_one() -> None:
    assert SemspecConfig().services.nats.replicas == 1


def test_status_with_every_node_refusing_reports_nats_unreachable_without_a_traceback(
    tmp_path: Path,
) -> None:
    urls = _refused()
    repo = _repo(tmp_path / "repo", {"url": ",".join(urls)})
    done = _semspec(repo, "status", "--json")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    nats = json.loads(done.stdout)[0]
    assert (nats["name"], nats["state"], nats["address"]) == ("nats", "unreachable", ",".join(urls))


def test_a_command_with_every_node_refusing_fails_with_one_error_after_the_bound(
    tmp_path: Path,
) -> None:
    urls = _refused()
    repo = _repo(tmp_path / "repo", {"url": urls})
    started = time.monotonic()
    done = _semspec(repo, "monitor", "state", timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: nats at {', '.join(urls)}: no server accepted a connection within 10s"
        f" (last error: {errors[0].rpartition('last error: ')[2]}"
    ]
    assert "ConnectionRefusedError" in errors[0]
    assert took < 30
    assert f"hint: {EXTERNAL_HINT}" in done.stderr


def test_one_configured_url_that_refuses_is_hinted_as_external_not_to_run_up(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "repo", {"url": _refused()[0]})
    done = _semspec(repo, "monitor", "state", timeout=60)
    assert done.returncode == 1
    assert f"hint: {EXTERNAL_HINT}" in done.stderr


@pytest.mark.slow  # waits out refusing nodes' bound
async def test_a_stack_of_its_own_is_hinted_to_start_with_up_and_a_configured_one_is_not() -> None:
    urls = _refused()
    hints = []
    for external in (False, True):
        with pytest.raises(ServiceError) as caught:
            await connect_nats(urls[0], {}, "test", first_connect_s=0.5, external=external)
        hints.append(caught.value.hint)
    assert hints == [HINT, EXTERNAL_HINT]
    assert "semspec up" not in EXTERNAL_HINT


def test_status_exits_1_saying_why_when_jetstream_does_not_answer(tmp_path: Path) -> None:
    port = free_port()
    # A server without JetStream (no ``-js``): it accepts clients but nothing answers its API.
    argv = [binary("nats-server"), "-a", "127.0.0.1", "-p", str(port)]
    server = start_process(argv, port, tmp_path / "server.log")
    try:
        repo = _repo(tmp_path / "repo", {"url": f"nats://127.0.0.1:{port}"})
        done = _semspec(repo, "status")
    finally:
        stop_process(server)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert any(line.startswith("JetStream: unknown: ") for line in lines), done.stdout
    why = [line for line in lines if line.startswith("not healthy: ")]
    assert len(why) == 1 and "JetStream unknown" in why[0], done.stdout
    assert "monitor down" in why[0]


async def test_connect_nats_takes_the_first_node_that_answers(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats").start()
    try:
        nc = await connect_nats([*_refused(), server.url], {}, "test", first_connect_s=10)
        try:
            assert nc.connected_url is not None
            assert nc.connected_url.port == server.port
        finally:
            await nc.close()
    finally:
        server.stop()


@pytest.mark.slow  # waits out refusing nodes' bound
async def test_connect_nats_to_refusing_nodes_is_a_service_error_within_its_bound() -> None:
    urls = _refused()
    started = time.monotonic()
    with pytest.raises(ServiceError) as caught:
        await connect_nats(",".join(urls), {}, "test", first_connect_s=1)
    assert time.monotonic() - started < 5
    assert caught.value.address == ", ".join(urls)
    assert "within 1s" in caught.value.message
