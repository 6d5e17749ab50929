"""Starts one gate or command agent: its limits, its cgroup, and the network it may have.

The worker runs this file as a script (``python -I -S fence_launch.py SPEC``, the standard
library only, so it starts in milliseconds and imports nothing of the worker) as the leader of
the run's process group; ``semspec.core.sandbox.Sandbox.argv`` writes ``SPEC``, a JSON object:

- ``limits``: rlimits set here, so that every process the command starts inherits them (never
  in the worker: ``preexec_fn`` is unsafe with threads, and the worker has many);
- ``cgroup``: a cgroup folder the worker made (``semspec.core.cgroups``), joined first;
- ``bwrap`` and ``argv``: bubblewrap's options and the command (no ``bwrap``: run unfenced);
- ``net``: the network of a fenced run that may have one, through slirp4netns without the
  host's loopback (``fence_network.py``, loaded only then).

``docs/security.md`` ("Gates and command agents") says what this guards and what it leaves.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from importlib.machinery import SourceFileLoader
from types import ModuleType

NO_START = 125
"""Exit status when the fence could not be set up (as ``env`` and container tools use)."""
RLIMITS = {
    "nproc": resource.RLIMIT_NPROC,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "cpu": resource.RLIMIT_CPU,
}
CPU_GRACE_S = 2
"""Past the CPU limit a process gets SIGXCPU, and this many seconds later SIGKILL."""


def join_cgroup(folder: str) -> None:
    """Move this process (and so everything it starts) into ``folder``."""
    if folder:
        with open(os.path.join(folder, "cgroup.procs"), "w", encoding="ascii") as procs:
            procs.write(f"{os.getpid()}\n")


def user_tasks(uid: int) -> int:
    """Processes and threads of ``uid`` now: what ``RLIMIT_NPROC`` counts besides the gate's."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue
    return count


def apply_limits(limits: dict[str, int]) -> None:
    """Set each non-zero limit (soft and hard; never above a hard limit already lower), and
    no core files: a crashing test would leave one in the worktree, and so in the change."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for name, value in limits.items():
        if not value:
            continue
        kind = RLIMITS[name]
        if name == "nproc" and os.getuid() == 0:
            continue  # the kernel never applies it to root: the cgroup is what bounds root
        if name == "nproc":
            # The kernel counts every process of the real user, the worker's and its other
            # sessions' too, so the gate's share is on top of what already runs.
            value += user_tasks(os.getuid())
        soft, hard = value, value + CPU_GRACE_S if name == "cpu" else value
        _, old_hard = resource.getrlimit(kind)
        if old_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, old_hard), min(hard, old_hard)
        resource.setrlimit(kind, (soft, hard))


def _load(name: str) -> ModuleType:
    """The sibling module ``name``, loaded from its file (this script's folder is not on
    ``sys.path`` under ``-I``, and must not be: ``semspec/core`` would shadow the standard
    library's ``logging``). Through the loader ``importlib.machinery`` holds ready: importing
    ``importlib.util`` alone cost a gate's start more than the rest of the loading (issue 31)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    module = ModuleType(name)
    module.__file__ = path
    SourceFileLoader(name, path).exec_module(module)
    return module


def main(args: list[str]) -> int:
    spec = json.loads(args[1])
    # Python ignores these at start, and an ignored signal stays ignored across exec: a gate
    # past its file size limit would then only see EFBIG, and a pipe reader's exit not stop
    # the writer.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    # A timeout ends the whole group with SIGTERM: leave through ``finally`` (the socket
    # folder, slirp4netns) rather than at once.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    parent, lock = int(spec.get("parent", 0)), spec.get("lock", "")
    held: int | None = None
    try:
        join_cgroup(spec.get("cgroup", ""))
        apply_limits(spec.get("limits", {}))
        # The run dies with the worker, and ends an earlier run of the same worktree's gates
        # (parent_watch.py, run_lock.py; issue 26): this process stays as the group's leader.
        watch = _load("parent_watch") if parent or lock else None
        if watch is not None and parent:
            watch.watch_parent(parent, spec.get("cgroup", ""))
        if lock:
            held = _load("run_lock").hold(lock)
        bwrap, argv, net = spec.get("bwrap") or [], spec["argv"], spec.get("net")
        if bwrap and net:
            network = _load("fence_network")
            try:
                return int(network.run_with_network(bwrap, argv, net))
            except network.LaunchError as exc:
                raise OSError(str(exc)) from exc
        command = [*bwrap, "--", *argv] if bwrap else argv
        if watch is None:
            os.execvp(command[0], command)  # nobody to outlive: become the command
        code = int(watch.supervise(command))
    except OSError as exc:
        print(f"semspec: could not start {spec['argv'][0]}: {exc}", file=sys.stderr, flush=True)
        return NO_START
    finally:
        if held is not None:
            _load("run_lock").release(held, lock)
    return int(watch.exit_like(code))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
