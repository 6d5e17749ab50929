"""Turn a ``plan.yaml`` into a validated ``PlanInput``.

The file names the plan and its tasks; each task is validated exactly like ``semspec task
submit -f`` (``build_task_input``), and the dependencies are checked as a whole::

    id: arithmetic            # optional; a slug of the title by default
    title: Add arithmetic
    max_cost_usd: 5           # optional: dollars all tasks together may spend
    land: auto                # optional: land each task once approved (default: loop.land)
    tasks:
      - id: add-sub
        title: Add subtraction
        files: [calc.py, tests/test_sub.py]   # a path that does not exist yet is created
        criteria: ["sub(a, b) returns a - b"]
        script: scripts/sub.yaml   # relative to the plan file
    max_cost_usd: 1.50         # this task's own dollar budget (default: loop.max_cost_usd)
      - id: add-mul
        title: Add multiplication
        files: [calc.py]
        depends_on: [add-sub]

Unknown keys, duplicate ids, unknown dependencies and cycles are errors naming the task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from semspec.client.task_spec import (
    TaskDraft,
    build_task_input,
    check_title,
    dollars,
    land_mode,
    new_task_id,
    read_spec_file,
    reject_unknown_keys,
)
from semspec.core.config.models import SemspecConfig
from semspec.core.errors import TaskSpecError
from semspec.workflow.plan.messages import PlanInput, PlanTask

_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_PLAN_KEYS = {"id", "title", "description", "tasks", "max_cost_usd", "land"}
_TASK_KEYS = {
    "id",
    "title",
    "description",
    "files",
    "criteria",
    "depends_on",
    "script",
    "max_cost_usd",
    "land",
}
# Fields named by ``build_task_input`` (CLI spellings) → the plan file's keys.
_PLAN_KEY_OF = {"--file": "files", "--repo": None, "base_branch": None}


@dataclass
class PlanTaskDraft:
    """One task as written in the plan, before validation against the repository."""

    draft: TaskDraft
    depends_on: list[str] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        """The task's id (always present in a plan; dependencies refer to it)."""
        return self.draft.task_id or ""


@dataclass
class PlanDraft:
    """A plan as the user wrote it."""

    plan_id: str
    title: str
    description: str = ""
    tasks: list[PlanTaskDraft] = field(default_factory=list)
    max_cost_usd: float | None = None
    """Dollars the plan's tasks may spend together; None = no plan budget."""


def draft_plan_from_yaml(path: Path) -> PlanDraft:
    """Read a plan file; malformed keys and values are errors naming the task and key."""
    raw = read_spec_file(path, "plan", "PLAN_FILE", _PLAN_KEYS, needs="`title:` and `tasks:`")
    title = raw.get("title")
    if not isinstance(title, str) or not title.strip():
        raise TaskSpecError(f"{path}: a non-empty string title is required", field="title")
    title = check_title(title, "title")
    plan_id = raw.get("id") or new_task_id(title)
    if not isinstance(plan_id, str) or not _ID_OK.match(plan_id):
        raise TaskSpecError(
            f"{path}: {plan_id!r} is not a valid plan id",
            field="id",
            hint="use letters, digits, '.', '_' or '-' (at most 64 characters)",
        )
    items = raw.get("tasks")
    if not isinstance(items, list) or not items:
        raise TaskSpecError(f"{path}: a plan needs a non-empty list of tasks", field="tasks")
    tasks = [_task_draft(path, i, item, plan_id) for i, item in enumerate(items)]
    budget = dollars(path, raw.get("max_cost_usd"), "max_cost_usd")
    # The plan's land mode is each task's, unless the task names its own.
    land = land_mode(raw.get("land"), "land", path)
    for task in tasks:
        task.draft.land = task.draft.land or land
    return PlanDraft(plan_id, title, str(raw.get("description") or ""), tasks, budget)


def _task_draft(path: Path, index: int, item: object, plan_id: str) -> PlanTaskDraft:
    where = f"tasks[{index}]"
    if not isinstance(item, dict):
        raise TaskSpecError(f"{path}: each task must be a mapping", field=where)
    task_id = item.get("id")
    if not isinstance(task_id, str) or not _ID_OK.match(task_id):
        raise TaskSpecError(
            f"{path}: every plan task needs a valid id (got {task_id!r})",
            field=f"{where}.id",
            hint="use letters, digits, '.', '_' or '-'; depends_on refers to tasks by id",
        )
    where = f"tasks.{task_id}"
    reject_unknown_keys(path, item, _TASK_KEYS, f"{where}.")
    title = item.get("title")
    if not isinstance(title, str) or not title.strip():
        raise TaskSpecError(f"{path}: a non-empty string title is required", field=f"{where}.title")
    script = item.get("script")
    if script is not None:
        if not isinstance(script, str):
            raise TaskSpecError(f"{path}: must be a path", field=f"{where}.script")
        if not Path(script).is_absolute():
            script = str((path.parent / script).resolve())
    draft = TaskDraft(
        title=title,
        files=_strings(path, item, "files", where),
        criteria=_strings(path, item, "criteria", where),
        description=str(item.get("description") or ""),
        task_id=task_id,
        plan_id=plan_id,
        script=script,
        max_cost_usd=dollars(path, item.get("max_cost_usd"), f"{where}.max_cost_usd"),
        land=land_mode(item.get("land"), f"{where}.land", path),
    )
    return PlanTaskDraft(draft, _strings(path, item, "depends_on", where))


def _strings(path: Path, raw: dict[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskSpecError(f"{path}: must be a list of strings", field=f"{where}.{key}")
    return list(value)


def dependency_order(tasks: list[PlanTaskDraft]) -> list[PlanTaskDraft]:
    """The tasks with every dependency before its dependents (file order otherwise kept).

    Raises ``TaskSpecError`` naming the task for a duplicate id, an unknown dependency or a
    dependency cycle.
    """
    by_id: dict[str, PlanTaskDraft] = {}
    for task in tasks:
        if task.task_id in by_id:
            raise TaskSpecError("appears twice in the plan", field=f"tasks.{task.task_id}.id")
        by_id[task.task_id] = task
    for task in tasks:
        for dep in task.depends_on:
            if dep not in by_id:
                raise TaskSpecError(
                    f"task {task.task_id!r} depends on unknown task {dep!r}",
                    field=f"tasks.{task.task_id}.depends_on",
                    hint=f"tasks of this plan: {', '.join(by_id)}",
                )
    ordered: list[PlanTaskDraft] = []
    done: set[str] = set()
    visiting: list[str] = []

    def visit(task_id: str) -> None:
        if task_id in done:
            return
        if task_id in visiting:
            cycle = [*visiting[visiting.index(task_id) :], task_id]
            raise TaskSpecError(
                f"dependency cycle {' -> '.join(cycle)}",
                field=f"tasks.{task_id}.depends_on",
                hint="a task cannot wait, directly or through others, for itself",
            )
        visiting.append(task_id)
        for dep in by_id[task_id].depends_on:
            visit(dep)
        visiting.pop()
        done.add(task_id)
        ordered.append(by_id[task_id])

    for task in tasks:
        visit(task.task_id)
    return ordered


def build_plan_input(draft: PlanDraft, config: SemspecConfig, repo: Path) -> PlanInput:
    """Check the dependencies, validate every task against ``repo``; the workflow input."""
    tasks = []
    for task in dependency_order(draft.tasks):
        try:
            inp = build_task_input(task.draft, config, repo)
        except TaskSpecError as exc:
            # Name the plan task and its key: "--file: x does not exist" would say neither.
            key = _PLAN_KEY_OF.get(exc.field or "", exc.field)
            where = f"tasks.{task.task_id}" + (f".{key}" if key else "")
            message = exc.message.removeprefix(f"{exc.field}: ")
            raise TaskSpecError(message, field=where, hint=exc.hint) from None
        tasks.append(PlanTask(input=inp, depends_on=sorted(set(task.depends_on))))
    return PlanInput(
        draft.plan_id, draft.title, tasks, draft.description, max_cost_usd=draft.max_cost_usd
    )


def load_plan(path: Path, config: SemspecConfig, repo: Path) -> PlanInput:
    """Read and validate ``path``; the ``PlanWorkflow`` input."""
    return build_plan_input(draft_plan_from_yaml(path), config, repo)
