"""The web console as a service of ``semspec up``: ``semspec ui`` on a loopback port.

The console makes a new session (host name and secret, ``console_session``) each time it
starts; ``up`` prints the URL carrying it once the console answers. Its health check asks for
the board at the session's host name without the secret: the console's refusal (401) proves
that this start serves and guards its pages.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from semspec import __version__
from semspec.core.config.models import SemspecConfig
from semspec.core.run_folder import ServiceRecord
from semspec.services.console_session import load_session, session_file
from semspec.services.ports import free_port
from semspec.services.specs import LaunchPlan

CONSOLE_SERVICE = "console"


class ConsoleSpec:
    """``semspec ui`` for the stack, started after the services its pages read."""

    name = CONSOLE_SERVICE
    depends_on: tuple[str, ...] = ("nats", "temporal", "graph")

    def external_address(self, config: SemspecConfig) -> str | None:
        return None

    def plan(
        self,
        config: SemspecConfig,
        repo: Path,
        run_dir: Path,
        taken: set[int],
        keep: Mapping[str, int] | None = None,
    ) -> LaunchPlan:
        port = free_port((keep or {}).get("http") or config.console.port, avoid=taken)
        # ``--repo`` belongs to the root command, so it goes before the subcommand.
        argv = [sys.executable, "-m", "semspec", "--repo", str(repo), "ui", "--port", str(port)]
        session = str(session_file(run_dir, port))
        return LaunchPlan(argv, f"http://127.0.0.1:{port}", {"http": port}, {"session": session})

    def healthy(self, record: ServiceRecord) -> bool:
        session = load_session(Path(record.extra.get("session", "")))
        if session is None or session.port != record.ports.get("http"):
            return False  # not written yet: the console has not bound its port
        # Sent to the loopback address with the session's host name, as a browser sends it.
        request = urllib.request.Request(record.address + "/", headers={"Host": session.authority})
        try:
            with urllib.request.urlopen(request, timeout=1):
                return False  # a console never serves a page without its secret
        except urllib.error.HTTPError as err:
            return err.code == 401
        except OSError:
            return False

    def check_external(self, config: SemspecConfig) -> bool:
        return False

    def version(self) -> str:
        return f"semspec {__version__}"
