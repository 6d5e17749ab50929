"""The developer's tools under hostile input: they answer every call and never block or blow up.

Agent-written code runs in the worktree (gates import it), so the worktree may hold anything
that code can make: FIFOs, sockets, devices, links out of it, a 3 GiB sparse file. The model, or
text it was fed, may send any path or argument. Each tool must answer with a result the model
can read, refuse ``.git/`` and ``.semspec/``, and leave the worker free for other tasks.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from temporalio.client import Client

from semspec.agents.compaction.pointers import PointerStore
from semspec.agents.stabilization.layer import Stabilizer
from semspec.agents.stabilization.policy import StabilizationPolicy
from semspec.agents.stabilization.session import SessionState
from semspec.agents.tools.toolbox import DeveloperToolbox
from semspec.agents.workspace import Workspace
from semspec.client.task_client import submit
from semspec.client.task_spec import TaskDraft, build_task_input
from semspec.core.config import load_config
from semspec.model.providers.types import ToolCall
from semspec.vocabulary.workflow_names import task_workflow_id
from semspec.workflow.task.messages import TaskResult
from semspec.workflow.worker import build_worker
from tests.fakes.llm_server import FakeLLMServer, call
from tests.fakes.llm_task import NEW_CALC, TASK_CRITERION, TASK_TITLE, approve_reply, sample_repo
from tests.support.hostile_tree import (
    LONG_NAME,
    PATHS,
    SECRET,
    SLOW_QUERY,
    SLOW_TEXT,
    SPARSE_BYTES,
    VALUES,
    hostile_repo,
    plant,
    snapshot,
)
from tests.support.owner import OWNER
from tests.support.tasks import GOOD_CALC, start, task_input, write_script

WAIT_S = 120.0


def _toolbox(root: Path, timeout_s: float = 60.0) -> DeveloperToolbox:
    return DeveloperToolbox(
        Workspace(root),
        Stabilizer(StabilizationPolicy()),
        SessionState("t"),
        PointerStore(),
        timeout_s=timeout_s,
    )


def _result(toolbox: DeveloperToolbox, name: str, **arguments: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(toolbox.run(ToolCall("c1", name, arguments)).content)
    return result


@pytest.fixture
def hostile(git_repo: Path, tmp_path: Path) -> Path:
    """``git_repo`` with the planted files of ``plant``."""
    plant(git_repo, tmp_path / "outside")
    return git_repo


def test_reading_a_3_gib_sparse_file_is_a_size_error_without_reading_it(hostile: Path) -> None:
    toolbox = _toolbox(hostile)

    tracemalloc.start()
    try:
        result = _result(toolbox, "read", path="sparse.py", start_line=1, end_line=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert result["ok"] is False
    assert f"is {SPARSE_BYTES} bytes, larger than" in result["error"]
    assert peak < 10_000_000


@pytest.mark.parametrize("name", ["pipe.py", "sock.py", "null.py", "zero.py", "passwd.py"])
def test_a_fifo_socket_device_or_outside_link_is_refused_by_read_and_write(
    hostile: Path, name: str
) -> None:
    if not os.path.lexists(hostile / name):
        pytest.skip(f"{name} could not be made here (a device needs root)")
    toolbox = _toolbox(hostile)

    read = _result(toolbox, "read", path=name, start_line=1, end_line=2)
    write = _result(toolbox, "write_file", path=name, content="x = 1\n")

    assert read["ok"] is False and write["ok"] is False
    for error in (read["error"], write["error"]):
        assert "not a regular file" in error or "outside the worktree" in error


def test_search_and_list_dir_skip_special_files_hidden_folders_and_links(hostile: Path) -> None:
    toolbox = _toolbox(hostile)

    found = _result(toolbox, "search", query="a")
    secret = _result(toolbox, "search", query=SECRET)
    listed = _result(toolbox, "list_dir", path=".")

    assert {c["path"] for c in found["candidates"]} == {
        "README.md",
        "calc.py",
        "tests/test_calc.py",
    }
    assert secret["candidates"] == []
    names = {entry["name"]: entry["type"] for entry in listed["entries"]}
    assert ".git" not in names and ".semspec" not in names
    assert names["pipe.py"] == "other" and names["out"] == "symlink"


@pytest.mark.parametrize(
    "path", [".semspec/run/temporal.db", ".semspec/config.yaml", ".git/config", "out/../.git/HEAD"]
)
def test_git_and_semspec_are_refused_to_every_tool(hostile: Path, path: str) -> None:
    toolbox = _toolbox(hostile)
    before = snapshot(hostile / ".semspec", hostile / ".git")
    patch = f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"

    results = [
        _result(toolbox, "read", path=path, start_line=1, end_line=5),
        _result(toolbox, "write_file", path=path, content="x\n"),
        _result(toolbox, "apply_patch", patch=patch),
        _result(toolbox, "list_dir", path=path.rsplit("/", 1)[0]),
        _result(toolbox, "search", query="x", path=path.rsplit("/", 1)[0]),
    ]

    assert all(result["ok"] is False for result in results), results
    assert all(SECRET not in json.dumps(result) for result in results)
    assert snapshot(hostile / ".semspec", hostile / ".git") == before


def test_writes_through_links_and_patches_that_make_links_are_refused(
    hostile: Path, tmp_path: Path
) -> None:
    toolbox = _toolbox(hostile)
    link_patch = (
        "diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n+++ b/evil\n"
        "@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"
    )

    through = _result(toolbox, "write_file", path="alias.py", content="x = 1\n")
    outside = _result(toolbox, "write_file", path="out/new.py", content="x = 1\n")
    made = _result(toolbox, "apply_patch", patch=link_patch)

    assert "symbolic link" in through["error"]
    assert (hostile / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert "outside the worktree" in outside["error"]
    assert not (tmp_path / "outside" / "new.py").exists()
    assert "symbolic link" in made["error"]
    assert not os.path.lexists(hostile / "evil")


def test_os_refusals_are_tool_errors_the_model_can_read(hostile: Path) -> None:
    toolbox = _toolbox(hostile)

    too_long = _result(toolbox, "write_file", path=f"{LONG_NAME}.py", content="x\n")
    under_a_file = _result(toolbox, "write_file", path="calc.py/new.py", content="x\n")
    a_loop = _result(toolbox, "write_file", path="loop.py/new.py", content="x\n")
    long_folder = _result(toolbox, "list_dir", path=LONG_NAME)

    assert "File name too long (ENAMETOOLONG)" in too_long["error"]
    assert "a part of the path is a file" in under_a_file["error"]
    assert a_loop["ok"] is False
    assert long_folder["ok"] is False


WRITE_IN_READ_ONLY_WORKTREE = """
import json, sys
from pathlib import Path
from tests.security.test_tools_hostile_input import _result, _toolbox
print(json.dumps(_result(_toolbox(Path(sys.argv[1])), "write_file", path="new/x.py", content="x")))
"""


def test_a_read_only_worktree_is_a_tool_error_not_a_failed_step(git_repo: Path) -> None:
    # A real read-only mount (root ignores file modes): bubblewrap binds the worktree read-only.
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bubblewrap is not installed")
    repo = str(git_repo)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(__file__).parents[2])}
    sandbox = [bwrap, "--dev-bind", "/", "/", "--ro-bind", repo, repo]
    done = subprocess.run(
        [*sandbox, sys.executable, "-c", WRITE_IN_READ_ONLY_WORKTREE, repo],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    result = json.loads(done.stdout)

    assert result["ok"] is False
    assert "Read-only file system (EROFS)" in result["error"]


@pytest.mark.slow  # waits out a call's deadline
async def test_a_call_past_its_deadline_is_a_tool_error_and_the_toolbox_serves_on(
    git_repo: Path,
) -> None:
    (git_repo / "words.txt").write_text(SLOW_TEXT)
    toolbox = _toolbox(git_repo, timeout_s=1.0)

    slow = await asyncio.wait_for(
        toolbox.call(ToolCall("c1", "search", {"query": SLOW_QUERY, "regex": True})), 30
    )
    listed = await toolbox.call(ToolCall("c2", "list_dir", {}))

    assert slow.ok is False and "stopped after 1 s" in slow.content
    assert listed.ok is True


# --- random input ---------------------------------------------------------------------------

ARGUMENT_NAMES = [
    "path",
    "query",
    "content",
    "patch",
    "start_line",
    "end_line",
    "candidate_id",
    "bundle_id",
    "regex",
    "pointer_id",
    "offset",
    "summary",
]
TOOLS = ["search", "read", "list_dir", "write_file", "apply_patch", "rehydrate", "submit", "rm"]


def _patch_for(path: str) -> str:
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"


CALLS = st.tuples(
    st.sampled_from(TOOLS),
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES), VALUES, max_size=4),
    PATHS,
)


@pytest.fixture(scope="module")
def hostile_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One planted worktree for all random examples (they may add files to it)."""
    yield hostile_repo(tmp_path_factory.mktemp("hostile"))


@pytest.mark.slow  # hypothesis drives every tool
@settings(deadline=None, max_examples=300)
@given(CALLS)
@example(("read", {"path": ".semspec/run/temporal.db", "start_line": 1, "end_line": 3}, ""))
@example(("write_file", {"path": ".git/config", "content": "x"}, ""))
@example(("search", {"query": "SECRET", "path": "."}, ""))
@example(("apply_patch", {}, ".semspec/run/x.py"))
def test_every_tool_answers_random_paths_and_arguments(
    hostile_tree: Path, case: tuple[str, dict[str, Any], str]
) -> None:
    name, arguments, patch_path = case
    if name == "apply_patch" and "patch" not in arguments:
        arguments = {**arguments, "patch": _patch_for(patch_path)}
    if name == "write_file" and isinstance(arguments.get("path"), str):
        arguments = {**arguments, "content": "x = 1\n"}
    outside = hostile_tree.parent / "outside"
    guarded = (hostile_tree / ".semspec", hostile_tree / ".git", outside)
    before = snapshot(*guarded)

    result = _toolbox(hostile_tree).run(ToolCall("c1", name, arguments))

    answer = json.loads(result.content)
    assert answer["ok"] is result.ok
    assert result.ok or answer["error"]
    echoed = SECRET in json.dumps(arguments)  # a search answer repeats its query
    assert echoed or SECRET not in result.content
    assert snapshot(*guarded) == before


# --- the whole worker ---------------------------------------------------------------------


@pytest.fixture
async def worker(temporal_client: Client, task_queue: str) -> AsyncIterator[str]:
    async with build_worker(temporal_client, task_queue, None, owner=OWNER):
        yield task_queue


# Imported by the gate: agent-written code that leaves a FIFO in the worktree; sub is wrong so
# the gate fails and the developer comes back to a worktree holding the FIFO.
FIFO_CALC = (
    "import os\nos.path.exists('pipe.py') or os.mkfifo('pipe.py')\n\n\n"
    "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n"
)


async def test_a_task_whose_code_made_a_fifo_reads_it_while_another_task_finishes(
    temporal_client: Client, worker: str, git_repo: Path, tmp_path: Path
) -> None:
    developer = [
        call("write_file", {"path": "calc.py", "content": FIFO_CALC}),
        call("submit", {"summary": "sub"}),
        call("search", {"query": "def sub"}),
        call("read", {"path": "pipe.py", "start_line": 1, "end_line": 5}),
        call("write_file", {"path": "pipe.py", "content": "x = 1\n"}),
        call("write_file", {"path": ".semspec/config.yaml", "content": "gates: {}\n"}),
        call("write_file", {"path": "calc.py", "content": NEW_CALC}),
        call("submit", {"summary": "sub fixed"}),
    ]
    with FakeLLMServer.for_roles(developer=developer, reviewer=[approve_reply()]) as llm:
        repo = sample_repo(tmp_path / "fifo", llm.base_url)
        fifo_id = f"fifo-{uuid.uuid4().hex[:8]}"
        draft = TaskDraft(
            title=TASK_TITLE, files=["calc.py"], criteria=[TASK_CRITERION], task_id=fifo_id
        )
        await submit(
            temporal_client, worker, build_task_input(draft, load_config(repo), repo), OWNER
        )
        script = write_script(
            tmp_path / "quick.yaml",
            [{"developer": {"write": {"calc.py": GOOD_CALC}}, "reviewer": {"verdict": "approve"}}],
        )
        quick = await start(
            temporal_client, task_input(git_repo, script, f"quick-{uuid.uuid4().hex[:8]}"), worker
        )
        fifo = temporal_client.get_workflow_handle(
            task_workflow_id(fifo_id), result_type=TaskResult
        )
        quick_result, fifo_result = await asyncio.wait_for(
            asyncio.gather(quick.result(), fifo.result()), WAIT_S
        )
        tools = [
            json.loads(m["content"])
            for m in llm.last_messages(route="developer")
            if m["role"] == "tool"
        ]

    assert quick_result.outcome == "approved"
    assert fifo_result.outcome == "approved"
    search, read, write_fifo, write_config, write_calc = tools
    assert [c["path"] for c in search["candidates"]] == ["calc.py"]
    assert "'pipe.py' is a FIFO" in read["error"]
    assert "'pipe.py' is a FIFO" in write_fifo["error"]
    assert "inside .semspec/" in write_config["error"]
    assert write_calc["ok"] is True
