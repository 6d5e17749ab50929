"""Why a sandbox is not used, as the probes of bubblewrap and slirp4netns report it: the tool's
name and the end of what it printed (``semspec/core/sandbox.py``, ``_probe_problem``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from semspec.core.sandbox import sandbox_for


def _failing_tool(folder: Path, name: str, said: str) -> Path:
    folder.mkdir(exist_ok=True)
    tool = folder / name
    # A long first line, as a wrapper's warning may be: the cause must still be in the reason.
    tool.write_text(f"#!/bin/sh\necho '{'w' * 300}' >&2\necho '{said}' >&2\nexit 1\n")
    tool.chmod(0o755)
    return tool


def test_a_bubblewrap_that_fails_is_named_with_what_it_said_last(tmp_path: Path) -> None:
    bwrap = _failing_tool(tmp_path / "bin", "bwrap", "no user namespaces here")

    sandbox = sandbox_for("auto", {"PATH": str(bwrap.parent)})

    assert sandbox.bwrap is None
    assert sandbox.reason.startswith(f"{bwrap} does not work here: ")
    assert sandbox.reason.endswith("no user namespaces here")


def test_a_slirp4netns_that_fails_leaves_the_fence_without_network(tmp_path: Path) -> None:
    real_bwrap = shutil.which("bwrap")
    if real_bwrap is None or sandbox_for("bwrap").bwrap is None:
        pytest.skip("bubblewrap does not work here")
    slirp = _failing_tool(tmp_path / "bin", "slirp4netns", "cannot open /dev/net/tun")
    (slirp.parent / "bwrap").symlink_to(real_bwrap)

    sandbox = sandbox_for("auto", {"PATH": str(slirp.parent)})

    assert sandbox.bwrap == str(slirp.parent / "bwrap")
    assert sandbox.slirp4netns is None
    assert sandbox.network_reason.startswith(f"{slirp} does not work here: ")
    # The tool's own words; the fenced side's "did not come up" may follow them on a busy machine.
    assert "cannot open /dev/net/tun" in sandbox.network_reason
