"""Turn CLI arguments or a task YAML file into a validated ``TaskInput``.

Everything that can be checked before the workflow starts is checked here, so bad input fails
at submit with the field named, not minutes later inside a worker.
"""

from __future__ import annotations

import math
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from semspec.agents.scripted import load_script
from semspec.client.task_paths import task_path
from semspec.core.config.models import RoleModel, SemspecConfig
from semspec.core.config.roles import did_you_mean
from semspec.core.errors import TaskSpecError
from semspec.core.run_folder import run_dir_of
from semspec.core.yaml_files import read_yaml
from semspec.model.role_check import check_task_role
from semspec.workflow.gates.presets import resolve_gates
from semspec.workflow.task.messages import LoopLimits, RoleSpec, TaskInput, TaskSpec

_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_TASK_KEYS = {
    "id",
    "title",
    "description",
    "criteria",
    "files",
    "plan_id",
    "base_branch",
    "script",
    "developer",
    "reviewer",
    "max_cost_usd",
    "land",
    "keep_worktree",
}
_ROLE_KEYS = {"provider", "model", "script"}


@dataclass
class TaskDraft:
    """A task as the user wrote it, before validation."""

    title: str
    files: list[str] = field(default_factory=list)
    criteria: list[str] = field(default_factory=list)
    description: str = ""
    task_id: str | None = None
    plan_id: str | None = None
    base_branch: str | None = None
    script: str | None = None
    developer: dict[str, Any] = field(default_factory=dict)
    reviewer: dict[str, Any] = field(default_factory=dict)
    max_cost_usd: float | None = None
    """The task's dollar budget, over ``loop.max_cost_usd``."""
    land: str | None = None
    """``auto`` or ``manual``, over ``loop.land`` (docs/landing.md)."""
    keep_worktree: bool | None = None
    """Keep the task's worktree after it ends, over ``loop.keep_worktrees``."""


def check_title(title: str, where: str) -> str:
    """``title`` stripped, when it is one line of text; else a ``TaskSpecError`` at ``where``.

    A title is shown on one line everywhere (`task list`, escalations, commit messages): a line
    break in it would let the rest pass for other output, and a control character cannot be
    meant (a terminal obeys it).
    """
    stripped = title.strip()
    if not stripped:
        raise TaskSpecError("must not be empty", field=where, hint="give the task a short title")
    for index, char in enumerate(stripped):
        if char.isprintable() or char == "\t":
            continue
        what = "a line break" if len(f"a{char}b".splitlines()) > 1 else f"{char!r}"
        raise TaskSpecError(
            f"must be one line of text, but holds {what} at character {index + 1}",
            field=where,
            hint="keep the title to one line; put the rest in the description",
        )
    return stripped


def new_task_id(title: str) -> str:
    """A readable, unique id: a slug of the title plus six random hex digits."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:32].strip("-") or "task"
    return f"{slug}-{secrets.token_hex(3)}"


def draft_from_yaml(path: Path) -> TaskDraft:
    """Read a task file; unknown keys and wrong types are errors naming the key."""
    raw = read_spec_file(path, "task", "-f", _TASK_KEYS, needs="at least `title:`")

    def strings(key: str) -> list[str]:
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TaskSpecError(f"{path}: must be a list of strings", field=key)
        return list(value)

    def mapping(key: str) -> dict[str, Any]:
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise TaskSpecError(f"{path}: must be a mapping", field=key)
        reject_unknown_keys(path, value, _ROLE_KEYS, f"{key}.")
        if value.get("script") and not Path(str(value["script"])).is_absolute():
            value = {**value, "script": str((path.parent / str(value["script"])).resolve())}
        return dict(value)

    def name(key: str) -> str | None:
        # YAML reads `id: 42` as a number; an id is a name, so a plain number is taken as text.
        value = raw.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise TaskSpecError(f"{path}: must be a string", field=key)

    title = raw.get("title")
    if not isinstance(title, str):
        raise TaskSpecError(f"{path}: a string title is required", field="title")
    base = path.parent
    script = raw.get("script")
    if script is not None and not Path(str(script)).is_absolute():
        script = str((base / str(script)).resolve())
    return TaskDraft(
        title=title,
        files=strings("files"),
        criteria=strings("criteria"),
        description=str(raw.get("description") or ""),
        task_id=name("id"),
        plan_id=name("plan_id"),
        base_branch=name("base_branch"),
        script=script,
        developer=mapping("developer"),
        reviewer=mapping("reviewer"),
        max_cost_usd=dollars(path, raw.get("max_cost_usd"), "max_cost_usd"),
        land=land_mode(raw.get("land"), "land", path),
        keep_worktree=flag(path, raw.get("keep_worktree"), "keep_worktree"),
    )


def flag(path: Path, value: Any, key: str) -> bool | None:
    """A yes/no setting as written (absent: None); anything but true or false is a
    ``TaskSpecError`` naming ``key``."""
    if value is None or isinstance(value, bool):
        return value
    raise TaskSpecError(
        f"{path}: must be true or false (got {value!r})", field=key, hint=f"e.g. {key}: true"
    )


LAND_MODES = ("manual", "auto")
"""How approved work reaches the base branch: by ``semspec task land``, or by itself."""


def land_mode(value: Any, key: str, path: Path | None = None) -> str | None:
    """``value`` as a land mode (absent: None); anything else is a ``TaskSpecError`` naming
    ``key``."""
    if value is None or value in LAND_MODES:
        return None if value is None else str(value)
    where = f"{path}: " if path is not None else ""
    raise TaskSpecError(
        f"{where}must be auto or manual (got {value!r})",
        field=key,
        hint="auto lands the task on the base branch once approved; manual waits for "
        "`semspec task land`",
    )


def dollars(path: Path, value: Any, key: str) -> float | None:
    """A dollar budget as written (absent: None); anything but a positive, finite number is a
    ``TaskSpecError`` naming ``key``."""
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0 < value < math.inf:
        raise TaskSpecError(
            f"{path}: must be a positive number of US dollars (got {value!r})",
            field=key,
            hint="e.g. max_cost_usd: 2.50",
        )
    return float(value)


def read_spec_file(
    path: Path, kind: str, field: str, known: set[str], *, needs: str
) -> dict[Any, Any]:
    """The top-level mapping of a task or plan file (``kind``) given as ``field``; a missing
    file, another shape or an unknown key is a ``TaskSpecError``."""
    hint = (
        f"check the path (relative to the current directory); the format of a {kind} file is "
        f"in docs/{kind}-yaml.md"
    )
    try:
        raw = read_yaml(path).data
    except FileNotFoundError:
        raise TaskSpecError(f"{kind} file {path} not found", field=field, hint=hint) from None
    except OSError as exc:  # a name too long, a folder, no permission
        reason = exc.strerror or type(exc).__name__
        raise TaskSpecError(f"{kind} file {path}: {reason}", field=field, hint=hint) from None
    if not isinstance(raw, dict):
        raise TaskSpecError(f"{path} must hold a mapping with {needs}", field=field)
    reject_unknown_keys(path, raw, known, "")
    return raw


def reject_unknown_keys(path: Path, raw: dict[Any, Any], known: set[str], prefix: str) -> None:
    """Raise ``TaskSpecError`` at the first unknown key, with a did-you-mean when one is close.

    ``prefix`` is the dotted path of the mapping (``""`` at the top of the file)."""
    unknown = sorted(str(k) for k in set(raw) - known)
    if unknown:
        near = did_you_mean(unknown[0], known)
        lead = f"did you mean {prefix}{near}? " if near else ""
        raise TaskSpecError(
            f"{path}: unknown key(s) {', '.join(unknown)}",
            field=prefix + unknown[0],
            hint=f"{lead}known keys: {', '.join(sorted(known))}",
        )


def _role(
    configured: RoleModel, override: dict[str, Any], script: str | None, name: str
) -> RoleSpec:
    provider = str(override.get("provider") or configured.provider)
    model = str(override.get("model") or configured.model)
    chosen = override.get("script") or script or configured.script
    return RoleSpec(provider=provider, model=model, script=str(chosen) if chosen else None)


def _check_script(role: RoleSpec, repo: Path, name: str) -> RoleSpec:
    if role.provider != "scripted":
        return role
    if not role.script:
        raise TaskSpecError(
            f"the scripted {name} needs a script",
            field="script",
            hint="pass --script FILE, or set models.<role>.script in .semspec/config.yaml",
        )
    path = _script_path(role.script, repo)
    load_script(path)  # raises ScriptError naming the file and field
    return RoleSpec(role.provider, role.model, str(path.resolve()))


def _script_path(script: str, repo: Path) -> Path:
    """A script path as given: absolute, or relative to the repository."""
    path = Path(script)
    return path if path.is_absolute() else (repo / path)


def loop_keeps_worktree(config: SemspecConfig, draft: TaskDraft) -> bool:
    """Whether the task keeps its worktree after it ends: the task file's word, else the
    config's (``loop.keep_worktrees``)."""
    return config.loop.keep_worktrees if draft.keep_worktree is None else draft.keep_worktree


def build_task_input(draft: TaskDraft, config: SemspecConfig, repo: Path) -> TaskInput:
    """Validate a draft against the repository and config; return the workflow input."""
    title = check_title(draft.title, "title")
    task_id = draft.task_id or new_task_id(draft.title)
    if not _ID_OK.match(task_id):
        raise TaskSpecError(
            f"{task_id!r} is not a valid task id",
            field="id",
            hint="use letters, digits, '.', '_' or '-' (at most 64 characters)",
        )
    try:
        git = pygit2.Repository(str(repo))
    except pygit2.GitError:
        raise TaskSpecError(
            f"{repo} is not a git repository", field="--repo", hint="pass --repo PATH"
        ) from None
    base = draft.base_branch or config.project.base_branch
    if git.head_is_unborn:
        # No commit at all: no base_branch setting can help, a first commit does.
        raise TaskSpecError(
            f"{repo} has no commit yet: a task starts from a commit of its base branch",
            field="--repo",
            hint="make a first commit (e.g. `git add -A && git commit -m 'first commit'`), "
            "then submit again",
        )
    if git.lookup_branch(base) is None:
        raise TaskSpecError(
            f"branch {base!r} does not exist in {repo}",
            field="base_branch",
            hint="set project.base_branch in .semspec/config.yaml or base_branch in the task",
        )
    # Existing files and files the task will create alike (see task_paths).
    files = [task_path(rel, repo, run_dir_of(config, repo)) for rel in draft.files]
    # The same provider/model check as `config validate` and the worker: fail here, not there.
    check_task_role(config.models.developer, draft.developer, repo, name="developer")
    check_task_role(config.models.reviewer, draft.reviewer, repo, name="reviewer")
    developer = _check_script(
        _role(config.models.developer, draft.developer, draft.script, "developer"),
        repo,
        "developer",
    )
    reviewer = _check_script(
        _role(config.models.reviewer, draft.reviewer, draft.script, "reviewer"), repo, "reviewer"
    )
    if draft.script and "scripted" not in (developer.provider, reviewer.provider):
        # No role replays it, but a script named and missing is a mistake to say now.
        load_script(_script_path(draft.script, repo))
    spec = TaskSpec(
        task_id=task_id,
        title=title,
        repo_path=str(repo.resolve()),
        description=draft.description,
        criteria=[c for c in draft.criteria if c.strip()],
        task_files=sorted(set(files)),
        plan_id=draft.plan_id,
        base_branch=base,
        developer=developer,
        reviewer=reviewer,
        project=config.project.name,
        auto_land=(draft.land or config.loop.land) == "auto",
        keep_worktree=loop_keeps_worktree(config, draft),
    )
    loop = config.loop
    limits = LoopLimits(
        max_retries=loop.max_retries,
        max_iterations=loop.max_iterations,
        developer_timeout_s=loop.developer_timeout_s,
        reviewer_timeout_s=loop.reviewer_timeout_s,
        activity_attempts=loop.activity_attempts,
        max_output_bytes=config.gates.max_output_bytes,
        max_cost_usd=loop.max_cost_usd if draft.max_cost_usd is None else draft.max_cost_usd,
    )
    return TaskInput(
        spec=spec,
        gates=resolve_gates(config.gates),
        limits=limits,
        run_dir=str(run_dir_of(config, repo).resolve()),
    )
