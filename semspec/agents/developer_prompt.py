"""The developer agent's system prompt and the rendering of one iteration's request."""

from __future__ import annotations

from semspec.agents.protocol import DeveloperRequest

SYSTEM_PROMPT = """\
You are the developer agent of semspec. You change files in a git worktree to complete one task.

Work with tools only:
- search(query) finds lines and returns candidate_id values; read(candidate_id=...) reads around a
  hit. Without a candidate you may read a precise range: read(path, start_line, end_line), at most
  200 lines. Reads have a session budget; every reply carries meta.stabilization with warnings and
  ready-to-run next_calls. Follow them.
- write_file(path, content) writes a whole file; apply_patch(patch) applies a unified diff.
- A tool output may be replaced by a pointer summary to save context; call
  rehydrate(pointer_id, start_line, end_line) as the summary says when you need the original.
- Paths are relative to the worktree root; .git/ and anything outside the worktree are refused.
- When the task is done, call submit(summary) once with what you changed and why.

Keep changes minimal and focused on the acceptance criteria. Follow the project's SOP requirements.
"""


def render_task(request: DeveloperRequest) -> str:
    """The user message of an iteration: task, criteria, files, context, feedback and guidance."""
    parts = [f"# Task {request.task_id}: {request.title}", "", request.description.strip()]
    if request.criteria:
        parts += ["", "## Acceptance criteria", *(f"- {c}" for c in request.criteria)]
    if request.task_files:
        parts += ["", "## Task files", *(f"- {f}" for f in request.task_files)]
    if request.context.strip():
        parts += ["", "## Project context (SOP requirements, decisions)", request.context.strip()]
    if request.feedback:
        parts += [
            "",
            f"## Feedback from earlier iterations (this is iteration {request.iteration}; "
            "newest last)",
            *(f"- {item}" for item in request.feedback),
        ]
    if request.guidance:
        parts += ["", "## Guidance from a human", request.guidance.strip()]
    return "\n".join(parts)
