"""Fencing agent-written code: gates and the command developer run with an allowlisted
environment, under rlimits (and a cgroup where one can be made), and, where bubblewrap works,
in a mount namespace where only the worktree and a private ``/tmp`` are writable, the run folder
is hidden and the network is off, or reached through slirp4netns with the host's loopback cut
off (so agent code never reaches the stack's ports). Every run starts through
``fence_launch.py``, which sets the limits in the child, never in the worker.

Gates (``semspec.workflow.gates``) and the command developer (``semspec.agents``) both run
code through it, so it sits on the ground floor. ``docs/security.md`` says what it guards.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from semspec.core.config.models import GateLimits, SandboxMode
from semspec.core.errors import ConfigError
from semspec.core.fence_mounts import home_binds, worktree_git_binds
from semspec.core.logging import get_logger

BASE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "VIRTUAL_ENV",
    # Behaviour switches without data: a user who keeps Python from writing bytecode or asks
    # for plain output wants the same in gates.
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "NO_COLOR",
)
"""Variables every gate and command agent gets (plus ``LC_*``); others only when the config
names them."""
FENCED_TMP = "/tmp"
PROBE_TIMEOUT_S = 10.0
SHELL = "/bin/sh"
LAUNCHER = str(Path(__file__).with_name("fence_launch.py"))
UNPRIVILEGED_PORT = 1024
NETWORK_HINT = (
    "install bubblewrap and slirp4netns (apt-get install bubblewrap slirp4netns, dnf install "
    "bubblewrap slirp4netns), or accept that agent code reaches every loopback port of this "
    "machine, the stack's included, with gates.sandbox: none"
)

_warned: set[str] = set()
_warn_lock = threading.Lock()


def child_env(
    names: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a gate or command agent: ``BASE_ENV``, ``LC_*`` and ``names``."""
    source = os.environ if environ is None else environ
    wanted = {*BASE_ENV, *names}
    return {
        name: value for name, value in source.items() if name in wanted or name.startswith("LC_")
    }


@dataclass(frozen=True)
class ChildLimits:
    """rlimits of every process of one run, and the cgroup's limits (``gates.limits``); 0 is
    no limit."""

    processes: int = 0
    memory_bytes: int = 0
    file_size_bytes: int = 0
    cpu_seconds: int = 0

    @classmethod
    def of(cls, limits: GateLimits) -> ChildLimits:
        """The limits ``gates.limits`` sets."""
        return cls(
            limits.processes, limits.memory_bytes, limits.file_size_bytes, limits.cpu_seconds
        )

    def rlimits(self) -> dict[str, int]:
        """The launcher's names for them (``fence_launch.RLIMITS``)."""
        return {
            "nproc": self.processes,
            "as": self.memory_bytes,
            "fsize": self.file_size_bytes,
            "cpu": self.cpu_seconds,
        }

    def describe(self) -> str:
        """One line naming the limits in force, for a gate's log."""
        parts = [
            f"processes {self.processes}" if self.processes else "",
            f"memory {self.memory_bytes} bytes" if self.memory_bytes else "",
            f"file size {self.file_size_bytes} bytes" if self.file_size_bytes else "",
            f"CPU {self.cpu_seconds} s" if self.cpu_seconds else "",
        ]
        return ", ".join(part for part in parts if part) or "none"


NO_LIMITS = ChildLimits()

Address = tuple[str, int]


@dataclass(frozen=True)
class Fence:
    """What one fenced run may touch: ``worktree`` read-write, ``hidden`` folders unseen."""

    worktree: Path
    hidden: tuple[Path, ...] = ()
    """Folders replaced by an empty one (the run folder: database, logs, other worktrees);
    the worktree stays visible even when it lies inside one."""
    network: bool = False
    """A network through slirp4netns: other machines, never this one's loopback."""
    reachable: tuple[Address, ...] = ()
    """Loopback addresses the run may still reach, each at the same host and port inside (a
    command agent's model server on loopback: see ``loopback_address``)."""
    home: Path | None = None
    """A command agent's private home, bound read-write (``fence_mounts``)."""
    writable: tuple[Path, ...] = ()
    """Folders outside the worktree bound read-write too (the folder a gate's test report is
    written to, ``gates.junit``), even inside a hidden one."""


def loopback_address(url: str | None) -> Address | None:
    """``(host, port)`` of ``url`` when it names this machine's loopback, else None.

    A command agent's ``base_url`` on loopback (a local model server, the tests' fake one) is
    the one loopback address its fence lets it reach (``Fence.reachable``).
    """
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    host = parts.hostname or ""
    if port is None or not host:
        return None
    if host == "localhost":
        return host, port
    try:
        return (host, port) if ipaddress.ip_address(host).is_loopback else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Sandbox:
    """The fencing in use in this process: bubblewrap at ``bwrap``, or none."""

    mode: SandboxMode
    bwrap: str | None = None
    reason: str = field(default="", compare=False)
    """Why there is no fence (empty under bubblewrap)."""
    slirp4netns: str | None = None
    """The program that gives a fenced run a network without the host's loopback."""
    network_reason: str = field(default="", compare=False)
    """Why agent code cannot have a fenced network here (empty when it can)."""

    @property
    def in_use(self) -> Literal["bwrap", "none"]:
        """``bwrap`` when commands run fenced, else ``none``."""
        return "bwrap" if self.bwrap else "none"

    def argv(
        self,
        argv: Sequence[str],
        fence: Fence,
        cwd: Path,
        limits: ChildLimits = NO_LIMITS,
        cgroup: Path | None = None,
        lock: str = "",
    ) -> list[str]:
        """The command line running ``argv`` in ``cwd`` inside the fence, under ``limits``
        and in ``cgroup``: the launcher (``fence_launch.py``) with its spec. The run dies with
        this process (``parent_watch.py``); with ``lock`` it ends any run holding that lock
        first and holds it itself (``run_lock.py``).

        ConfigError when the fence has network and no fenced network can be made here
        (see ``require_network``).
        """
        spec: dict[str, Any] = {
            "limits": limits.rlimits(),
            "cgroup": str(cgroup) if cgroup else "",
            "argv": list(argv),
            "parent": os.getpid(),
            "lock": lock,
        }
        if self.bwrap is not None:
            spec["bwrap"] = bwrap_options(self.bwrap, fence, cwd)
        if fence.network:
            self.require_network()
        if self.bwrap is not None and fence.network:
            reachable = [[host, port] for host, port in _bindable(fence.reachable)]
            spec["net"] = {
                "slirp4netns": self.slirp4netns,
                "allow": reachable,
                "python": sys.executable,
            }
        return [sys.executable, "-I", "-S", LAUNCHER, json.dumps(spec)]

    def require_network(self) -> None:
        """ConfigError unless agent code with network runs where it cannot reach this
        machine's loopback, or the config took that risk by name (``gates.sandbox: none``)."""
        if self.mode == "none" or self.network_reason == "":
            return
        raise ConfigError(
            f"agent code with network (a network: true gate, a command developer) cannot be "
            f"kept off this machine's loopback ports: {self.network_reason}",
            field="gates.sandbox",
            hint=NETWORK_HINT,
        )

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` adjusted to the fence: temporary files and caches go to the private /tmp."""
        if self.bwrap is None:
            return dict(env)
        # The worker's TMPDIR and HOME are read-only inside; tools that cache under
        # XDG_CACHE_HOME (go, pip, pre-commit) would fail without a writable one.
        return {"XDG_CACHE_HOME": f"{FENCED_TMP}/.cache", **env, "TMPDIR": FENCED_TMP}


UNFENCED = Sandbox("none", reason="no sandbox was chosen")
"""No fence, and no warning: for callers that chose none themselves (tests, tools)."""


def _bindable(reachable: Sequence[Address]) -> Sequence[Address]:
    """``reachable``, each of which the fence can listen on; ConfigError for one it cannot."""
    for host, port in reachable:
        # Without capabilities, ports below 1024 cannot be bound inside the fence.
        if port < UNPRIVILEGED_PORT:
            raise ConfigError(
                f"the model server at {host}:{port} is on this machine's loopback below port "
                f"{UNPRIVILEGED_PORT}, which a fenced command agent cannot be let in to",
                field="models.developer.base_url",
                hint=f"serve the model on a port of {UNPRIVILEGED_PORT} or above",
            )
    return reachable


def bwrap_argv(bwrap: str, fence: Fence, argv: Sequence[str], cwd: Path) -> list[str]:
    """The bubblewrap command line running ``argv`` in ``cwd`` inside ``fence`` (without the
    network plumbing ``fence_launch.py`` adds)."""
    return [*bwrap_options(bwrap, fence, cwd), "--", *argv]


def bwrap_options(bwrap: str, fence: Fence, cwd: Path) -> list[str]:
    """bubblewrap and its options for ``fence`` with ``cwd`` (the command follows a ``--``).

    The order of the mounts matters: the root read-only, then a private ``/tmp``, then empty
    folders over the hidden ones, then the worktree bound back on top of whichever covered it.
    A new PID namespace ends with its first process, so killing bubblewrap (its process
    group, on a timeout) takes everything the command started with it.
    """
    worktree = os.path.realpath(fence.worktree)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    args += ["--tmpfs", FENCED_TMP]
    # Before the covers, so that none of these can bring a hidden folder back into view.
    for kept in programs_under_tmp(fence.hidden):
        args += ["--ro-bind", kept, kept]
    for hidden in fence.hidden:
        real = os.path.realpath(hidden)
        if os.path.isdir(real):
            args += ["--tmpfs", real]
    args += ["--bind", worktree, worktree]
    for folder in fence.writable:
        real = os.path.realpath(folder)
        args += ["--bind", real, real]
    # A command agent's own home and its worktree's git metadata (``fence_mounts``).
    args += home_binds(fence.home) + worktree_git_binds(fence.worktree)
    # Always a network namespace of its own: a run with network gets it from slirp4netns,
    # which the launcher attaches to this namespace with the host's loopback cut off.
    args.append("--unshare-net")
    # Run as root, bubblewrap keeps every capability inside: enough to unmount the empty
    # folder over the run folder or remount the root read-write. No capability, no way out.
    args += ["--unshare-pid", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--chdir", os.path.realpath(cwd)]
    return args


def programs_under_tmp(
    hidden: Iterable[Path] = (), environ: Mapping[str, str] | None = None
) -> list[str]:
    """Folders under ``/tmp`` a fenced command needs to start, bound back read-only over the
    private ``/tmp``: the worker's Python (``sys.prefix``, its base), ``VIRTUAL_ENV``, and each
    ``PATH`` folder (its virtual environment's root when it is one's ``bin``).

    A project, its virtual environment or semspec's own may well live under ``/tmp`` (a CI
    checkout, a scratch clone); hiding them would fail every gate with "not found". Never
    ``/tmp`` itself, nor anything at or inside a ``hidden`` folder.
    """
    source = os.environ if environ is None else environ
    wanted = [sys.prefix, sys.base_prefix, source.get("VIRTUAL_ENV", "")]
    for entry in source.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        root = os.path.dirname(entry.rstrip("/"))
        in_venv = os.path.isfile(os.path.join(root, "pyvenv.cfg"))
        wanted.append(root if in_venv else entry)
    covered = [os.path.realpath(path) for path in hidden]
    kept: list[str] = []
    for path in wanted:
        real = os.path.realpath(path) if path else ""
        if not real.startswith(FENCED_TMP + "/") or not os.path.isdir(real) or real in kept:
            continue
        if any(real == cover or real.startswith(cover + "/") for cover in covered):
            continue
        kept.append(real)
    return kept


def sandbox_for(mode: SandboxMode, environ: Mapping[str, str] | None = None) -> Sandbox:
    """The sandbox ``mode`` gives here, without warning (``semspec status`` shows it); blocking:
    it may try bubblewrap once per process."""
    if mode == "none":
        return Sandbox(mode, reason="gates.sandbox is none")
    path_var = (os.environ if environ is None else environ).get("PATH", os.defpath)
    found = shutil.which("bwrap", path=path_var)
    problem = "bwrap is not on PATH" if found is None else _bwrap_problem(found)
    if found is None or problem is not None:
        return Sandbox(mode, reason=problem or "", network_reason=problem or "")
    slirp = shutil.which("slirp4netns", path=path_var)
    network = "slirp4netns is not on PATH" if slirp is None else _slirp_problem(found, slirp)
    if network is not None:
        return Sandbox(mode, found, network_reason=network)
    return Sandbox(mode, found, slirp4netns=slirp)


def choose_sandbox(mode: SandboxMode, environ: Mapping[str, str] | None = None) -> Sandbox:
    """The sandbox to run with; blocking (see ``sandbox_for``), so call it off the event loop.

    ``bwrap`` without a working bubblewrap is a ConfigError; ``auto`` without one and ``none``
    run unfenced and log one warning per process.
    """
    sandbox = sandbox_for(mode, environ)
    if sandbox.bwrap is None and mode == "bwrap":
        raise ConfigError(
            f"gates.sandbox is bwrap but {sandbox.reason}",
            field="gates.sandbox",
            hint="install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) "
            "or set gates.sandbox to auto or none",
        )
    if sandbox.bwrap is None:
        _warn_once(sandbox.reason)
    return sandbox


@functools.cache
def _bwrap_problem(bwrap: str) -> str | None:
    """Why bubblewrap at ``bwrap`` cannot fence here (no user namespaces, say), or None."""
    # The namespaces and mounts a fenced run asks for; any of them may be refused.
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    probe += ["--tmpfs", FENCED_TMP, "--unshare-net", "--unshare-pid", "--die-with-parent"]
    probe += ["--new-session", "--cap-drop", "ALL", "--", SHELL, "-c", "exit 0"]
    return _probe_problem(bwrap, probe)


@functools.cache
def _slirp_problem(bwrap: str, slirp: str) -> str | None:
    """Why slirp4netns at ``slirp`` cannot give a fenced run its network here, or None."""
    sandbox = Sandbox("bwrap", bwrap, slirp4netns=slirp)
    # A route through tap0 is the proof that slirp4netns configured the namespace.
    check = [SHELL, "-c", "grep -q '^tap0' /proc/net/route"]
    try:
        with tempfile.TemporaryDirectory(prefix="semspec-probe-") as folder:
            fence = Fence(Path(folder), network=True)
            return _probe_problem(slirp, sandbox.argv(check, fence, Path(folder)))
    except OSError as exc:  # no room for the probe's folder
        return f"{slirp} did not run: {exc}"


def _probe_problem(tool: str, argv: list[str]) -> str | None:
    """Run a probe of ``tool`` (``argv``, a clean environment, no input); why it failed, or None.

    The end of what it printed is kept: the cause comes last in bwrap's and slirp4netns' errors.
    """
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=child_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{tool} did not run: {exc}"
    if done.returncode != 0:
        return f"{tool} does not work here: {(done.stderr or done.stdout).strip()[-200:]}"
    return None


def _warn_once(reason: str) -> None:
    with _warn_lock:
        if reason in _warned:
            return
        _warned.add(reason)
    get_logger("sandbox").warning(
        "gates and command agents run unfenced", reason=reason, docs="docs/security.md"
    )
