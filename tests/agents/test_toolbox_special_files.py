"""The developer's tools never wait on a FIFO in the worktree: they refuse or skip it.

Opening a FIFO waits for the other end, possibly forever. Each tool call here runs in a helper
thread; should it hang, the test opens the FIFO's other end to let it go, then fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from semspec.agents.compaction.pointers import PointerStore
from semspec.agents.stabilization.layer import Stabilizer
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.session import SessionState
from semspec.agents.tools.toolbox import DeveloperToolbox
from semspec.agents.workspace import Workspace
from semspec.model.providers.types import ToolCall

HANG_S = 10.0


def _toolbox(root: Path) -> DeveloperToolbox:
    return DeveloperToolbox(
        Workspace(root), Stabilizer(StabilizationPolicy()), SessionState("t"), PointerStore()
    )


def _release(fifo: Path) -> None:
    """Open both ends of ``fifo`` without waiting, so a reader or writer stuck on it goes on."""
    for flags in (os.O_WRONLY, os.O_RDONLY):
        with contextlib.suppress(OSError):  # no one waits on that side
            os.close(os.open(fifo, flags | os.O_NONBLOCK))


def _without_waiting(tool: Callable[[], Any], fifo: Path) -> Any:
    """``tool()`` run in a thread; a test failure if it waits on ``fifo``."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(tool()), daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        _release(fifo)
        thread.join(HANG_S)
        pytest.fail(f"the tool waited on the FIFO {fifo.name} for {HANG_S:g} s")
    return out[0]


def _result(toolbox: DeveloperToolbox, name: str, **arguments: Any) -> dict[str, Any]:
    call = ToolCall(id="c1", name=name, arguments=arguments)
    result: dict[str, Any] = json.loads(toolbox.run(call).content)
    return result


@pytest.fixture
def fifo(git_repo: Path) -> Path:
    """A FIFO nobody writes to or reads from, next to ``calc.py`` in the worktree."""
    path = git_repo / "pipe.py"
    os.mkfifo(path)
    return path


def test_search_skips_a_fifo_and_finds_the_regular_files(git_repo: Path, fifo: Path) -> None:
    toolbox = _toolbox(git_repo)

    result = _without_waiting(lambda: _result(toolbox, "search", query="return a + b"), fifo)

    assert result["ok"] is True
    assert [c["path"] for c in result["candidates"]] == ["calc.py"]


def test_write_file_refuses_a_fifo_instead_of_waiting_for_a_reader(
    git_repo: Path, fifo: Path
) -> None:
    toolbox = _toolbox(git_repo)

    result = _without_waiting(
        lambda: _result(toolbox, "write_file", path="pipe.py", content="x = 1\n"), fifo
    )

    assert result["ok"] is False
    assert "'pipe.py'" in result["error"] and "not a regular file" in result["error"]
    assert fifo.is_fifo()


APPLY_PATCH = """
import json, sys
from pathlib import Path
from tests.agents.test_toolbox_special_files import _result, _toolbox
patch = "--- a/pipe.py\\n+++ b/pipe.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
print(json.dumps(_result(_toolbox(Path(sys.argv[1])), "apply_patch", patch=patch)))
"""


def test_apply_patch_refuses_a_fifo_instead_of_reading_it(git_repo: Path, fifo: Path) -> None:
    # libgit2 reads the FIFO holding the GIL, so a hang would stop every thread of this
    # process: the call runs in a child process that can be killed.
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(__file__).parents[2])}
    try:
        done = subprocess.run(
            [sys.executable, "-c", APPLY_PATCH, str(git_repo)],
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("apply_patch waited on the FIFO pipe.py for 30 s")
    result = json.loads(done.stdout)

    assert result["ok"] is False
    assert "'pipe.py'" in result["error"] and "not a regular file" in result["error"]
