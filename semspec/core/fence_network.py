"""The network of a fenced run that may have one, set up by ``fence_launch.py`` (which loads
this file by its path, only for such a run: the imports below cost a gate without network
tens of milliseconds).

bubblewrap makes an empty network namespace whose first program, ``fence_forward.py``, says
when the namespace is made and waits; slirp4netns, started here on the namespace's first process
(``--info-fd``), brings ``tap0`` up with the host's loopback cut off
(``--disable-host-loopback``), and only then does the command start: it reaches other machines,
never a port of this one. The loopback addresses in ``allow`` (a model server on loopback) are
the one exception: ``fence_forward.py`` listens on each inside the namespace and hands every
connection it accepts over a socket pair (``SCM_RIGHTS``) to this process, outside, which
connects it to that address and no other. No file, no port and no folder is shared, so nothing
is left behind when the run is killed. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 20.0
NS_GET_USERNS = 0xB701
"""ioctl on a namespace file: a descriptor of the user namespace that owns it (linux/nsfs.h)."""


class LaunchError(Exception):
    """The fence could not be set up; the message goes to the command's output."""


def child_pid(info_fd: int) -> int:
    """The namespace's first process, as bubblewrap reports it on ``--info-fd``."""
    data = b""
    while True:
        ready, _, _ = select.select([info_fd], [], [], READY_TIMEOUT_S)
        if not ready:
            raise LaunchError("bubblewrap did not report its namespace in time")
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        data += chunk
    try:
        return int(json.loads(data)["child-pid"])
    except (ValueError, KeyError, TypeError) as exc:
        raise LaunchError(f"bubblewrap did not report its namespace: {data[:200]!r}") from exc


def foreign_owner(pid: int) -> int | None:
    """A descriptor of the user namespace owning ``pid``'s network namespace when it is not
    ours (a worker without root: bubblewrap made one, and put the command in a second one
    inside it, where slirp4netns would lack the right to configure the network), else None."""
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        owner = fcntl.ioctl(net, NS_GET_USERNS)
    finally:
        os.close(net)
    if os.fstat(owner).st_ino == os.stat("/proc/self/ns/user").st_ino:
        os.close(owner)
        return None
    return owner


def start_slirp(slirp: str, pid: int, exit_fd: int, log: Any) -> subprocess.Popen[bytes]:
    """slirp4netns on ``pid``'s namespace, returned once ``tap0`` is up (it ends when
    ``exit_fd``'s other end closes)."""
    ready_r, ready_w = os.pipe()
    keep = [ready_w, exit_fd]
    argv = [slirp, "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp"]
    argv += ["--ready-fd", str(ready_w), "--exit-fd", str(exit_fd), "--netns-type=path"]
    owner = foreign_owner(pid)
    if owner is not None:
        keep.append(owner)
        argv += ["--userns-path", f"/proc/self/fd/{owner}"]
    argv += [f"/proc/{pid}/ns/net", "tap0"]
    try:
        process = subprocess.Popen(
            argv, pass_fds=keep, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
    finally:
        os.close(ready_w)
        if owner is not None:
            os.close(owner)
    try:
        ready, _, _ = select.select([ready_r], [], [], READY_TIMEOUT_S)
        if not ready or os.read(ready_r, 1) != b"1":
            process.kill()
            process.wait()
            log.seek(0)
            said = log.read().decode("utf-8", "replace").strip()[-400:]
            raise LaunchError(f"slirp4netns did not bring the network up: {said}")
    finally:
        os.close(ready_r)
    return process


def pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either side closes (as ``fence_forward.pump`` does:
    the two files run in different processes, each on the standard library alone)."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def bridge(conn: socket.socket, address: tuple[str, int]) -> None:
    """Join one connection from inside the fence to ``address``, the only one it may reach."""
    try:
        upstream = socket.create_connection(address, timeout=10)
    except OSError:
        conn.close()
        return
    upstream.settimeout(None)
    back = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    back.start()
    pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def serve_allowed(channel: socket.socket, allowed: list[tuple[str, int]]) -> None:
    """Bridge each connection the fence hands over on ``channel`` (one byte: the index of the
    allowed address it was made to) to that address; until the channel closes."""
    while True:
        try:
            which, fds, _, _ = socket.recv_fds(channel, 1, 1)
        except OSError:
            return
        if not which:
            return
        for fd in fds[1:]:
            os.close(fd)
        if not fds:
            continue
        try:
            conn = socket.socket(fileno=fds[0])
        except OSError:  # not a socket: nothing the fence's forwarder sends
            os.close(fds[0])
            continue
        if which[0] >= len(allowed):
            conn.close()
            continue
        threading.Thread(target=bridge, args=(conn, allowed[which[0]]), daemon=True).start()


def inner_argv(
    python: str, plan: dict[str, Any], allowed: list[tuple[str, int]], argv: list[str]
) -> list[str]:
    """``argv`` behind ``fence_forward.py``: the handshake, then a listener per allowed
    address inside."""
    source = Path(__file__).with_name("fence_forward.py").read_text(encoding="utf-8")
    plan = {**plan, "forward": [[host, port] for host, port in allowed]}
    return [python, "-I", "-S", "-c", source, json.dumps(plan), "--", *argv]


def wait_ready(fd: int, what: str) -> None:
    """Wait (bounded) for one byte ``1`` on ``fd``."""
    ready, _, _ = select.select([fd], [], [], READY_TIMEOUT_S)
    if not ready or os.read(fd, 1) != b"1":
        raise LaunchError(f"{what} did not start")


def run_with_network(bwrap: list[str], argv: list[str], net: dict[str, Any]) -> int:
    """Run ``argv`` under bubblewrap in a namespace slirp4netns connects; its exit status."""
    info_r, info_w = os.pipe()
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    exit_r, exit_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    options = [*bwrap, "--info-fd", str(info_w)]
    allowed = [(str(host), int(port)) for host, port in net.get("allow") or []]
    plan = {"ready": ready_w, "go": go_r, "channel": theirs.fileno()}
    argv = inner_argv(net["python"], plan, allowed, argv)
    slirp: subprocess.Popen[bytes] | None = None
    try:
        passed = (info_w, ready_w, go_r, theirs.fileno())
        fenced = subprocess.Popen([*options, "--", *argv], pass_fds=passed)
        for fd in (info_w, ready_w, go_r):
            os.close(fd)
        theirs.close()
        threading.Thread(target=serve_allowed, args=(ours, allowed), daemon=True).start()
        try:
            pid = child_pid(info_r)
            wait_ready(ready_r, "the fence")
            with tempfile.TemporaryFile() as log:
                slirp = start_slirp(net["slirp4netns"], pid, exit_r, log)
        except LaunchError:
            fenced.kill()
            fenced.wait()
            raise
        os.close(exit_r)
        os.write(go_w, b"1")
        os.close(go_w)
        code = fenced.wait()
        return code if code >= 0 else 128 - code
    finally:
        os.close(exit_w)  # slirp4netns ends when this closes
        if slirp is not None:
            slirp.wait()
        ours.close()
