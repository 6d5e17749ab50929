"""The task page (``/tasks/{task_id}``), a gate's full log
(``/tasks/{task_id}/gates/{iteration}/{index}/log``) and the task's agent steps
(``/tasks/{task_id}/steps``: each model and tool call, from the events JetStream stored; see
``task_steps``).

The page reads the task's status (one query: its log holds the whole timeline, see
``task_timeline``) and its diff (pygit2, in a worker thread, cut to ``MAX_DIFF_CHARS``). It
shows the budget, developer turns, gates with their bounded output and a link to each full log,
reviews with their findings and what the reviewer's context held (each SOP, decision, file
summary and convention with its tokens), risk signals, checkpoints, escalations and answers.

Hooks for tests and scripts (stable): ``#summary`` (a ``<dl>``); ``#timeline`` with one
``<section data-iteration="N">`` per iteration and ``<li data-kind="KIND">`` per entry (gate
entries also ``data-gate`` and ``data-passed``); ``#gates`` (the latest run: ``<tr
data-gate="NAME">``, output in ``<pre class="gate-output">``); ``#reviewer-context`` (``<tr
data-section data-label data-tokens>``); ``#diff`` (``data-cut="true"`` when cut) with one
``<details class="diff-file" data-path="PATH">`` per file; a risk entry of the timeline carries
``data-level``. The steps
page: ``#steps`` with ``<tr data-iteration data-role data-kind>``.
"""

from __future__ import annotations

import anyio.to_thread
import nats.errors
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from temporalio.client import WorkflowQueryFailedError

from semspec.client.task_client import task_status
from semspec.console.diff_files import split_patch
from semspec.console.iteration_diffs import iteration_diffs
from semspec.console.land_action import land_view
from semspec.console.stack_problem import STACK_ERRORS, stack_problem
from semspec.console.state import ConsoleState
from semspec.console.task_diff import task_diff
from semspec.console.task_logs import LogRefused, open_gate_log, read_chunks
from semspec.console.task_steps import task_steps
from semspec.console.task_timeline import timeline
from semspec.core.errors import NotFoundError, SemspecError
from semspec.core.run_folder import run_dir_of
from semspec.workflow.task.dollars import spent_text, step_cost_text, usd
from semspec.workflow.task.messages import TaskStatus

GATE_TAIL_LINES = 30
"""Lines of a gate's output shown unfolded when it has no findings read from it (its end: a
test runner's summary); the whole output is folded below."""
LOG_HEADERS = {"Cache-Control": "no-store", "Content-Disposition": "inline"}
"""With ``text/plain`` and the access layer's ``nosniff``, a log holding HTML shows as text."""


def routes() -> list[BaseRoute]:
    """The task page, its gate logs and its steps."""
    return [
        Route("/tasks/{task_id}", task, name="task"),
        Route("/tasks/{task_id}/gates/{iteration:int}/{index:int}/log", gate_log, name="gate_log"),
        Route("/tasks/{task_id}/steps", steps, name="task_steps"),
    ]


async def task(request: Request) -> Response:
    """One task: its summary, timeline, latest gates, the reviewer's context and its diff."""
    state: ConsoleState = request.app.state.console
    task_id = request.path_params["task_id"]
    status, problem, code = await _status(state, task_id)
    if status is None:
        context = {"task_id": task_id, "status": None, "problem": problem}
        return state.render(request, "task.html", context, status=code)
    diff = await task_diff(status, state.repo)
    per_iteration = await iteration_diffs(status, state.repo)
    # Where approved work is on its way to the base, and the Land button (land_action.py).
    base = state.config.project.base_branch
    land = await land_view(request, await state.temporal(), status, base)
    context = {
        "task_id": task_id,
        "status": status,
        "problem": "",
        "timeline": timeline(status),
        "diff": diff,
        "diff_files": split_patch(diff.patch),
        "iteration_diffs": per_iteration,
        "gate_tail_lines": GATE_TAIL_LINES,
        "cost": spent_text(status.usage.cost_usd, status.usage.unpriced_models),
        "budget": usd(status.budget_usd) if status.budget_usd is not None else "",
        **land,
    }
    return state.render(request, "task.html", context)


async def steps(request: Request) -> Response:
    """Each model and tool call of the task's agents, from the stored step events."""
    state: ConsoleState = request.app.state.console
    task_id = request.path_params["task_id"]
    read, problem = None, ""
    try:
        read = await task_steps(await state.nats(), task_id)
    except (nats.errors.Error, SemspecError, OSError, TimeoutError) as exc:
        problem = f"the stored events cannot be read: {exc}"
    context = {"task_id": task_id, "read": read, "problem": problem, "cost": step_cost_text}
    return state.render(request, "task_steps.html", context)


async def gate_log(request: Request) -> Response:
    """The full log of one gate run, as plain text, when the task's records name it."""
    state: ConsoleState = request.app.state.console
    task_id = request.path_params["task_id"]
    status, problem, code = await _status(state, task_id)
    if status is None:
        return PlainTextResponse(problem + "\n", code, headers=LOG_HEADERS)
    run_dir = run_dir_of(state.config, state.repo)
    iteration, index = request.path_params["iteration"], request.path_params["index"]
    try:
        fd = await anyio.to_thread.run_sync(open_gate_log, status, iteration, index, run_dir)
    except LogRefused as exc:
        return PlainTextResponse(f"{exc}\n", 404, headers=LOG_HEADERS)
    return StreamingResponse(
        read_chunks(fd), media_type="text/plain; charset=utf-8", headers=LOG_HEADERS
    )


async def _status(state: ConsoleState, task_id: str) -> tuple[TaskStatus | None, str, int]:
    """The task's status, or why there is none and the HTTP status that says so."""
    try:
        return await task_status(await state.temporal(), task_id), "", 200
    except NotFoundError:
        return None, f"there is no task {task_id!r}", 404
    except WorkflowQueryFailedError as exc:  # e.g. its first workflow task has not run yet
        return None, f"task {task_id} cannot be read yet: {exc}", 503
    except STACK_ERRORS as exc:
        return None, f"task {task_id} cannot be read: {stack_problem(exc)}", 503
