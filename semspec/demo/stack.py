"""Start the embedded stack of the current repository, as ``semspec up`` does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from semspec.core.config.models import SemspecConfig
from semspec.services.connect import Endpoints, resolve_endpoints
from semspec.services.supervisor import ServiceStatus, Supervisor


def start_stack(
    config: SemspecConfig, repo: Path, on_progress: Callable[[str], None] | None = None
) -> tuple[list[ServiceStatus], Endpoints]:
    """Start whatever is not running yet (or check external services) and say where they are.

    Synchronous: the supervisor's Temporal health check runs its own event loop.
    """
    statuses = Supervisor(config, repo, on_progress=on_progress).up()
    return statuses, resolve_endpoints(config, repo)
