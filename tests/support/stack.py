"""An embedded stack started by the real ``semspec up`` in a sample repository, for CLI tests.

``running_stack`` creates a git repository with ``.semspec/config.yaml`` (services on free
ports), runs ``python -m semspec up``, yields a ``Stack`` and always runs ``semspec down``.
Tests drive everything through ``Stack.cli`` (a subprocess of the real entry point). More
repositories can share the stack (``Stack.sibling_repo``): their config names the stack's NATS
and Temporal as external endpoints, so each test can have its own gates and limits.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import nats
import yaml

from semspec.core.owner_key import KEY_FILE, OwnerKey, load
from semspec.core.run_folder import ServiceRecord, cmdline_of, is_ours, load_records, save_records
from semspec.services import process
from semspec.services.nats_auth import AUTH_FILE, NatsAuth, read_auth
from semspec.services.specs import TemporalSpec
from semspec.vocabulary.subjects import SIGNAL_STREAM
from tests.support.repos import make_repo

SAMPLE_FILES = {
    "README.md": "# sample\n",
    "calc.py": "def add(a, b):\n    return a + b\n",
    ".semspec/.gitignore": "run/\ngraph/\n",
}
CHECK_CODE = "import calc; assert calc.add(2, 3) == 5, 'add(2, 3) should be 5'"
CLI_TIMEOUT_S = 90.0


def check_gate(name: str = "check", timeout: float = 60.0, before: str = "") -> dict[str, Any]:
    """A gate (config form) that imports calc.py from the worktree and checks ``add``.

    ``before`` is Python run first (e.g. ``import time; time.sleep(3)``) to make it slow.
    """
    code = f"{before}; {CHECK_CODE}" if before else CHECK_CODE
    return {"name": name, "command": f'{sys.executable} -c "{code}"', "timeout": timeout}


def python_gate(
    name: str, code: str, timeout: float = 60.0, required: bool = True
) -> dict[str, Any]:
    """A gate (config form) running one line of Python with this interpreter."""
    command = f'{sys.executable} -c "{code}"'
    return {"name": name, "command": command, "timeout": timeout, "required": required}


def sample_config(gates: list[dict[str, Any]], **sections: Any) -> dict[str, Any]:
    """A config with the ``none`` preset plus ``gates`` and embedded services on free ports."""
    config: dict[str, Any] = {
        "project": {"name": "sample", "base_branch": "main"},
        "gates": {"preset": "none", "additional": gates},
        "loop": {"max_retries": 1, "activity_attempts": 2},
        "services": {"nats": {"port": 0}, "temporal": {"port": 0, "ui_port": 0}},
    }
    for key, value in sections.items():
        config[key] = {**config.get(key, {}), **value}
    return config


def write_script(path: Path, iterations: list[dict[str, Any]]) -> Path:
    """Write a scripted-agent script (see ``semspec/agents/scripted.py``) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"iterations": iterations}), encoding="utf-8")
    return path


def cli_env() -> dict[str, str]:
    """The environment for CLI subprocesses: ours without SEMSPEC_* overrides, quiet logs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMSPEC_")}
    env["SEMSPEC_LOG_FORMAT"] = "json"
    env["SEMSPEC_LOG_LEVEL"] = "WARNING"
    env["COLUMNS"] = "200"
    return env


@dataclass
class Stack:
    """A running stack and the sample repository that owns it."""

    repo: Path
    root: Path
    env: dict[str, str] | None = None
    """The environment of every CLI subprocess (and so of the stack ``up`` starts); ``cli_env()``
    when None."""

    @property
    def run_dir(self) -> Path:
        return self.repo / ".semspec" / "run"

    @property
    def owner_key_path(self) -> Path:
        """The stack owner's signing key (``semspec up`` creates it in the run folder)."""
        return self.run_dir / KEY_FILE

    def owner(self) -> OwnerKey:
        """The stack owner's signing key, to sign as the stack's own monitor or CLI does."""
        return load(self.owner_key_path)

    def cli(
        self, *args: str, repo: Path | None = None, timeout: float = CLI_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python -m semspec --repo REPO ARGS`` and return what it printed and its code."""
        done = self._run(args, repo, timeout)
        if done.returncode < 0:
            raise AssertionError(
                f"`semspec {' '.join(args)}` was killed by signal {-done.returncode}; when it "
                "happens at interpreter shutdown, Temporal's client threads outlived the event "
                f"loop (temporalio/sdk-python#300):\n{done.stderr[-1500:]}"
            )
        return done

    def _run(
        self, args: tuple[str, ...], repo: Path | None, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "semspec", "--repo", str(repo or self.repo), *args]
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=cli_env() if self.env is None else self.env,
            cwd=self.root,
            check=False,
        )

    def submit_scripted(
        self,
        task_id: str,
        iterations: list[dict[str, Any]],
        *extra: str,
        criterion: str = "sub(a, b) returns a - b",
        repo: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``task submit`` of a task on calc.py whose scripted agents play ``iterations``."""
        script = write_script(self.root / "scripts" / f"{task_id}.yaml", iterations)
        return self.cli(
            "task", "submit", f"task {task_id}", "--id", task_id, "--file", "calc.py",
            "--criterion", criterion, "--script", str(script), *extra, repo=repo,
        )  # fmt: skip

    def cli_json(self, *args: str, repo: Path | None = None) -> Any:
        """Run a command with ``--json`` that must succeed; its parsed output."""
        done = self.cli(*args, "--json", repo=repo)
        assert done.returncode == 0, f"{args} exited {done.returncode}: {done.stderr}"
        return json.loads(done.stdout)

    def status(self, task_id: str, repo: Path | None = None) -> dict[str, Any]:
        """``semspec task status ID --json``."""
        result: dict[str, Any] = self.cli_json("task", "status", task_id, repo=repo)
        return result

    def wait_status(
        self,
        task_id: str,
        until: Callable[[dict[str, Any]], bool],
        timeout_s: float = 60.0,
        repo: Path | None = None,
    ) -> dict[str, Any]:
        """Poll ``task status --json`` until ``until`` holds (bounded)."""
        deadline = time.monotonic() + timeout_s
        while True:
            # A poll that fails for any reason (even a crash at exit) is simply polled again.
            done = self._run(("task", "status", task_id, "--json"), repo, CLI_TIMEOUT_S)
            status: dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
            if status and until(status):
                return status
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"task {task_id} never got there; last: {status or done.stderr}"
                )
            time.sleep(0.3)

    def records(self) -> dict[str, ServiceRecord]:
        """What ``semspec up`` recorded in ``.semspec/run/services.json``."""
        return load_records(self.run_dir)

    def nats_address(self) -> str:
        """Where the stack's NATS listens (``nats://127.0.0.1:PORT``), as ``up`` recorded it."""
        return self.records()["nats"].address

    def nats_auth(self) -> NatsAuth:
        """The credentials ``semspec up`` made for the stack's NATS."""
        auth = read_auth(self.run_dir / AUTH_FILE)
        assert auth is not None, "the stack has no NATS credentials"
        return auth

    def nats_url(self) -> str:
        """The stack's NATS address with its credentials in it, for ``nats.connect``."""
        auth = self.nats_auth()
        return self.nats_address().replace("://", f"://{auth.user}:{auth.password}@", 1)

    def nats_section(self) -> dict[str, str]:
        """``services.nats`` of a repository joining this stack: the address and the file
        holding the credentials (never the password itself)."""
        return {"url": self.nats_address(), "auth_file": str(self.run_dir / AUTH_FILE)}

    def temporal_address(self) -> str:
        return self.records()["temporal"].address

    def sibling_repo(self, name: str, config: dict[str, Any]) -> Path:
        """Another sample repository served by this stack (its endpoints given as external)."""
        services = {
            "nats": self.nats_section(),
            "temporal": {"address": self.temporal_address()},
            "run_dir": str(self.root / name / "run"),
        }
        # The stack's worker runs only what its owner key signed: the sibling shares that key.
        security = {"owner_key": str(self.owner_key_path)}
        return make_sample_repo(
            self.root / name / "repo", {**config, "services": services, "security": security}
        )

    def kill(self, service: str) -> int:
        """SIGKILL the recorded process of ``service`` (one we started); wait until it is gone."""
        record = self.records()[service]
        assert is_ours(record.pid, record.argv), f"{service} is not running"
        os.kill(record.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while cmdline_of(record.pid) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        return record.pid

    def restart_nats(self) -> None:
        """Start NATS again with its recorded command line (same port, same store)."""
        self._restart("nats", lambda _record: _nats_answers(self.nats_url()))

    def restart_temporal(self) -> None:
        """Start the Temporal dev server again with its recorded command line (same port and
        database file), as a person would after it died."""
        self._restart("temporal", lambda record: TemporalSpec().healthy(record))

    def _restart(self, service: str, answers: Callable[[ServiceRecord], bool]) -> None:
        records = self.records()
        record = records[service]
        pid = process.start_detached(record.argv, Path(record.log), self.repo, cli_env())
        records[service] = replace(record, pid=pid)
        save_records(self.run_dir, records)
        deadline = time.monotonic() + 30
        while not answers(record):
            assert time.monotonic() < deadline, f"{service} did not come back"
            time.sleep(0.1)


def _nats_answers(url: str) -> bool:
    async def probe() -> bool:
        try:
            nc = await nats.connect(url, connect_timeout=1, max_reconnect_attempts=0)
        except Exception:
            return False
        await nc.close()
        return True

    return asyncio.run(probe())


def make_sample_repo(
    path: Path, config: dict[str, Any], extra_files: dict[str, str] | None = None
) -> Path:
    """A git repository with calc.py, a committed ``.semspec/config.yaml`` and ``extra_files``."""
    files = {**SAMPLE_FILES, ".semspec/config.yaml": yaml.safe_dump(config, sort_keys=False)}
    files.update(extra_files or {})
    make_repo(path, files)
    return path


@contextmanager
def running_stack(
    root: Path,
    config: dict[str, Any],
    extra_files: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """``semspec up`` in a new sample repository under ``root`` (with ``extra_files``
    committed too), run with ``env`` (default ``cli_env()``); ``semspec down`` on exit."""
    stack = Stack(make_sample_repo(root / "repo", config, extra_files), root, env)
    try:
        up = stack.cli("up", "--json", timeout=120)
        if up.returncode != 0:
            # On a crowded machine a service occasionally dies while starting; `up` again
            # starts only what is down, as a user would do.
            up = stack.cli("up", "--json", timeout=120)
        assert up.returncode == 0, f"semspec up failed: {up.stderr}"
        yield stack
    finally:
        stack.cli("down", timeout=60)


def count_signals(nats_url: str, task_id: str, level: str = "escalate") -> int:
    """How many ``user.signal.<level>`` messages for ``task_id`` the USER_SIGNALS stream holds."""

    async def count() -> int:
        nc = await nats.connect(nats_url, connect_timeout=2)
        try:
            js = nc.jetstream()
            sub = await js.subscribe(
                f"user.signal.{level}", stream=SIGNAL_STREAM, ordered_consumer=True
            )
            found = 0
            while True:
                try:
                    msg = await sub.next_msg(timeout=0.5)
                except Exception:
                    break
                if json.loads(msg.data).get("task_id") == task_id:
                    found += 1
            await sub.unsubscribe()
            return found
        finally:
            await nc.close()

    return asyncio.run(count())
