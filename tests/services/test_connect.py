"""The one Temporal connect helper: a server that is not there, or a TLS file that cannot be
read, is a clear semspec error naming what to fix, for every command that connects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import ConfigError, ServiceError
from semspec.services.connect import connect_temporal, resolve_endpoints, temporal_client
from semspec.services.ports import free_port


async def test_a_temporal_server_that_is_not_there_is_a_service_error_naming_the_address() -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(ServiceError) as caught:
        await connect_temporal(address, timeout_s=2)
    assert caught.value.address == address
    assert "cannot connect" in str(caught.value)


async def test_the_helper_connects_to_a_running_server(temporal_env: WorkflowEnvironment) -> None:
    address = temporal_env.client.service_client.config.target_host
    client = await connect_temporal(address)
    assert isinstance(client, Client)
    assert await client.service_client.check_health()


async def test_an_unreadable_tls_file_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    config = SemspecConfig.model_validate(
        {
            "services": {
                "temporal": {
                    "address": "127.0.0.1:7233",
                    "tls_cert": str(tmp_path / "missing.pem"),
                    "tls_key": str(tmp_path / "missing.key"),
                }
            }
        }
    )
    with pytest.raises(ConfigError) as caught:
        await temporal_client(config)
    assert caught.value.field == "services.temporal.tls_cert"


def test_a_command_that_needs_temporal_says_it_cannot_connect(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SEMSPEC_")}
    env = {
        **unset,
        "SEMSPEC_SERVICES__TEMPORAL__ADDRESS": address,
        "SEMSPEC_SERVICES__NATS__URL": "nats://127.0.0.1:9",
    }
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "task", "list"], env=env)
    assert isinstance(result.exception, ServiceError)
    assert str(result.exception).startswith(f"temporal at {address}: cannot connect")


def test_endpoints_not_configured_nor_recorded_name_the_service_that_is_not_running(
    tmp_path: Path,
) -> None:
    with pytest.raises(ServiceError) as caught:
        resolve_endpoints(SemspecConfig(), tmp_path)
    assert caught.value.service == "nats"
    nats_only = SemspecConfig.model_validate({"services": {"nats": {"url": "nats://h:4222"}}})
    with pytest.raises(ServiceError) as caught:
        resolve_endpoints(nats_only, tmp_path)
    assert caught.value.service == "temporal"
    both = {"nats": {"url": "nats://h:4222"}, "temporal": {"address": "h:7233"}}
    endpoints = resolve_endpoints(SemspecConfig.model_validate({"services": both}), tmp_path)
    assert (endpoints.nats_url, endpoints.temporal_address) == ("nats://h:4222", "h:7233")
