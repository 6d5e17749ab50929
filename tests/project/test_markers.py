"""The heavy markers are read from what a test reaches (``tests/support/markers.py``): a server
helper, a browser, a process, through the suite's own helpers and through fixtures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.markers import Reach
from tests.support.servers import NatsServer

SUITE = Path(__file__).resolve().parents[1]


def _starts_nats(folder: Path) -> None:
    NatsServer(folder).start()


def _one_step_further(folder: Path) -> None:
    _starts_nats(folder)


def _runs_the_cli(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "semspec", *args], check=False)


def _first_of_a_cycle() -> None:
    _second_of_a_cycle()


def _second_of_a_cycle() -> None:
    _first_of_a_cycle()


def test_a_test_starting_a_server_through_a_helper_two_calls_deep_is_stack() -> None:
    def test_case(tmp_path: Path) -> None:
        _one_step_further(tmp_path)

    assert Reach(SUITE).marks([test_case]) == ["stack"]


def test_a_test_running_the_cli_is_slow_and_running_up_with_it_is_stack() -> None:
    def lists_tasks() -> None:
        _runs_the_cli("task", "list")

    def starts_a_stack() -> None:
        _runs_the_cli("up", "--json")

    assert Reach(SUITE).marks([lists_tasks]) == ["slow"]
    assert Reach(SUITE).marks([starts_a_stack]) == ["stack"]


def test_a_browser_inside_a_nested_function_is_browser() -> None:
    def test_case() -> None:
        async def inner() -> None:
            from tests.support.browser import chromium

            async with chromium():
                pass

    assert Reach(SUITE).marks([test_case]) == ["browser"]


def test_pure_code_and_a_cycle_of_helpers_earn_no_mark() -> None:
    def test_case() -> None:
        assert sorted([2, 1]) == [1, 2]
        _first_of_a_cycle()

    assert Reach(SUITE).marks([test_case]) == []


def test_the_collection_hook_marks_a_test_by_the_fixtures_it_uses(
    request: pytest.FixtureRequest, sleeper: subprocess.Popen[bytes]
) -> None:
    # ``sleeper`` (tests/conftest.py) starts a process: this test is ``slow`` without saying so.
    assert request.node.get_closest_marker("slow") is not None
    assert request.node.get_closest_marker("stack") is None
