"""The secret scan of a task's change (``semspec.core.secret_scan``) with its repository's names.

What is masked or refused are the worker's secret values (its secret-named variables and those
the repository's config names: ``gates.env`` and each role's ``api_key_env``) and the key shapes
of the detectors. The reviewer's diff and evidence, ``semspec review context`` and the console's
diff page show the change masked; the commit activity refuses a change holding one
(``secret_in_change``, naming file and line), so an approval never commits a secret, and a
checkpoint leaves the files holding one out of its snapshot (they stay in the worktree).
"""

from __future__ import annotations

from pathlib import Path

from temporalio.exceptions import ApplicationError

from semspec.core.config import load_config
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import SemspecError
from semspec.core.reasons import FallbackReason
from semspec.core.secret_scan import SecretFinding, SecretScan, findings_text
from semspec.workflow.git.diff import added_lines


def secret_names(repo: Path) -> tuple[str, ...]:
    """Variables whose values are the worker's secrets whatever they are called: the
    repository's ``gates.env`` and the ``api_key_env`` of its roles."""
    try:
        config = load_config(repo)
    except SemspecError:  # validated at submit; a later bad edit must not unmask anything
        config = SemspecConfig()
    names = list(config.gates.env)
    for role in (config.models.developer, config.models.reviewer):
        if role.api_key_env:
            names.append(role.api_key_env)
    return tuple(names)


def change_scan(repo: Path) -> SecretScan:
    """The scan for changes made in ``repo``'s tasks (reads its config: blocking)."""
    return SecretScan.of_worker(secret_names(repo))


def masked(repo: Path, text: str) -> str:
    """``text`` (a patch, a file of the worktree) with the secrets of ``repo``'s tasks masked."""
    return change_scan(repo).mask(text)


def change_findings(repo: Path, worktree: Path, base_commit: str) -> list[SecretFinding]:
    """The secrets on the lines the worktree adds against ``base_commit``."""
    return change_scan(repo).findings(added_lines(worktree, base_commit))


def refuse_secrets(repo: Path, worktree: Path, base_commit: str) -> None:
    """Raise a non-retryable ``secret_in_change`` error naming where the worktree's change
    (against ``base_commit``) holds a secret; return when it holds none."""
    findings = change_findings(repo, worktree, base_commit)
    if not findings:
        return
    raise ApplicationError(
        f"not committed: the change holds a secret ({findings_text(findings)}); remove it, "
        "or abort the task",
        type=FallbackReason.SECRET_IN_CHANGE.value,
        non_retryable=True,
    )
