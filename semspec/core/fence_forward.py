"""The first program inside a fence with network: wait for the network, listen on each allowed
loopback address, then run the command.

``fence_launch.py`` runs this source with ``python -I -S -c`` (the file itself may lie under a
folder the fence hides); its first argument is a JSON object, then ``--`` and the command:

- ``ready`` and ``go``: two inherited pipe ends. Writing ``ready`` says bubblewrap has finished
  the namespace (its loopback included: slirp4netns configuring ``tap0`` at the same time made
  bubblewrap's own netlink requests fail now and then); the launcher then attaches slirp4netns
  and writes ``go`` once ``tap0`` is up, so the command never starts without its network.
- ``forward`` and ``channel``: ``[host, port]`` per allowed address, and an inherited socket
  pair end. Each connection accepted on an allowed address inside the namespace is handed over
  the channel (``SCM_RIGHTS``, with the address's index) to the launcher outside, which
  connects it to that one address. The namespace's own loopback holds nothing else.

Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading


def hand_over(server: socket.socket, index: int, channel: socket.socket) -> None:
    """Pass each connection ``server`` accepts, with ``index``, to the launcher outside."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            try:
                socket.send_fds(channel, [bytes([index])], [conn.fileno()])
            except OSError:
                return


def listen(host: str, port: int) -> list[socket.socket]:
    """Listeners on ``host``'s loopback addresses (``localhost`` may mean both families)."""
    servers = []
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        server = socket.socket(family, kind, proto)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(address)
        except OSError:
            server.close()
            continue
        server.listen(64)
        servers.append(server)
    if not servers:
        raise OSError(f"cannot listen on {host}:{port} inside the fence")
    return servers


def wait_for_network(ready: int, go: int) -> None:
    """Say the namespace is made, then wait until the launcher says its network is up."""
    os.write(ready, b"1")
    os.close(ready)
    said = os.read(go, 1)
    os.close(go)
    if said != b"1":
        raise SystemExit("semspec: the fence's network did not come up")


def main(args: list[str]) -> int:
    plan = json.loads(args[1])
    # As in fence_launch: what Python ignores at start would stay ignored in the command.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    command = args[args.index("--") + 1 :]
    wait_for_network(int(plan["ready"]), int(plan["go"]))
    if not plan["forward"]:
        os.close(int(plan["channel"]))  # nothing to hand over: the command must not hold it
        os.execvp(command[0], command)
    channel = socket.socket(fileno=int(plan["channel"]))
    for index, (host, port) in enumerate(plan["forward"]):
        for server in listen(str(host), int(port)):
            work = (server, index, channel)
            threading.Thread(target=hand_over, args=work, daemon=True).start()
    code = subprocess.call(command)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
