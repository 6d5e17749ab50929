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

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ServiceError
from semspec.core.nats_connect import connect_nats
from semspec.services.ports import free_port
from tests.support.repos import make_repo
from tests.support.servers import NatsServer


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
    ("url", "says"),
    [
        (["nats://n1.example:4222", "http://n2.example:4222"], "the scheme must be one of"),
        ("nats://n1.example:4222,nats://n2.example:42x", "the port must be a number"),
        (["nats://:4222"], "names no host"),
        (["nats://n1.example:4222", "ws://n2.example:80"], "mixes websocket"),
        ([], "names no server"),
    ],
)
def test_config_validate_rejects_a_bad_url_naming_the_field(
    tmp_path: Path, url: str | list[str], says: str
) -> None:
    done = _semspec(_repo(tmp_path / "repo", {"url": url}), "config", "validate", "--json")
    assert done.returncode == 2, done.stderr
    problems = json.loads(done.stdout)["problems"]
    assert [p["field"] for p in problems] == ["services.nats.url"]
    assert says in problems[0]["message"]
    assert "Traceback" not in done.stderr


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


async def test_connect_nats_to_refusing_nodes_is_a_service_error_within_its_bound() -> None:
    urls = _refused()
    started = time.monotonic()
    with pytest.raises(ServiceError) as caught:
        await connect_nats(",".join(urls), {}, "test", first_connect_s=1)
    assert time.monotonic() - started < 5
    assert caught.value.address == ", ".join(urls)
    assert "within 1s" in caught.value.message
