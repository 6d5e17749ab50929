"""Write the demo's sample repository: the calculator project, its SOPs, config and scripts.

The config runs pytest with this interpreter (so the gate works without a ``python`` on PATH)
and points ``services`` at the stack the demo uses, so ``semspec --repo <sample> ...`` commands
printed by the demo reach the same Temporal server.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import yaml

from semspec.core.config.models import SemspecConfig
from semspec.demo.sample_sops import SAMPLE_SOPS
from semspec.demo.story import DEMO_TASKS, DEVELOPER_WINDOW, SAMPLE_FILES
from semspec.services.connect import Endpoints

BRANCH = "main"
SCRIPTS_DIR = Path(".semspec") / "demo"
_SIGNATURE = ("semspec demo", "demo@semspec.invalid")


@dataclass(frozen=True)
class SampleRepo:
    """The sample repository on disk: its root, the commit on ``main`` and each task's script."""

    path: Path
    base_commit: str
    scripts: dict[str, Path]


def gate_command() -> str:
    """The pytest gate: this interpreter, no bytecode or cache files left in the worktree."""
    return f"{shlex.quote(sys.executable)} -B -m pytest -q -p no:cacheprovider"


def sample_config(endpoints: Endpoints, stack: SemspecConfig) -> dict[str, Any]:
    """The sample's ``.semspec/config.yaml`` as data: a required pytest gate, scripted agents
    (the developer's window small enough for a checkpoint), and the running stack's addresses."""
    temporal = stack.services.temporal
    temporal_section: dict[str, Any] = {
        "address": endpoints.temporal_address,
        "namespace": endpoints.namespace,
        "task_queue": endpoints.task_queue,
    }
    # Certificate paths (not secrets) carry over; an API key stays in the environment.
    if temporal.tls_cert and temporal.tls_key:
        temporal_section |= {"tls_cert": temporal.tls_cert, "tls_key": temporal.tls_key}
    nats_section: dict[str, Any] = {"url": endpoints.nats_url}
    if endpoints.nats_auth_file:
        # The path of the stack's credentials, never the password, goes into the sample's config.
        nats_section["auth_file"] = endpoints.nats_auth_file
    return {
        "project": {"name": "semspec-demo", "base_branch": BRANCH},
        "gates": {
            "preset": "none",
            "additional": [
                {"name": "test", "command": gate_command(), "required": True, "timeout": 120}
            ],
        },
        "loop": {"max_retries": 3, "max_iterations": 8},
        "models": {
            "developer": {
                "provider": "scripted",
                "model": "scripted",
                "context_window": DEVELOPER_WINDOW,
            },
            "reviewer": {"provider": "scripted", "model": "scripted"},
        },
        "services": {"nats": nats_section, "temporal": temporal_section},
    }


def _write(root: Path, rel: Path | str, text: str) -> Path:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def create_sample_repo(root: Path, endpoints: Endpoints, stack: SemspecConfig) -> SampleRepo:
    """Create the sample repository at ``root`` (which must not exist) with everything
    committed on ``main``."""
    root.mkdir(parents=True)
    for rel, text in (SAMPLE_FILES | SAMPLE_SOPS).items():
        _write(root, rel, text)
    header = "# Written by `semspec demo`: a pytest gate and scripted agents.\n"
    config = yaml.safe_dump(sample_config(endpoints, stack), sort_keys=False)
    _write(root, Path(".semspec") / "config.yaml", header + config)
    scripts = {
        task.key: _write(root, SCRIPTS_DIR / f"{task.key}.yaml", yaml.safe_dump(task.script()))
        for task in DEMO_TASKS
    }
    repo = pygit2.init_repository(str(root), initial_head=BRANCH)
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    who = pygit2.Signature(*_SIGNATURE)
    commit = repo.create_commit(
        f"refs/heads/{BRANCH}", who, who, "calc: add(), its test and SOPs", tree, []
    )
    return SampleRepo(path=root.resolve(), base_commit=str(commit), scripts=scripts)
