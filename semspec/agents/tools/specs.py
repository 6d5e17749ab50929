"""JSON schemas of the developer's tools, as the model sees them."""

from __future__ import annotations

from semspec.model.providers.types import ToolSpec


def _obj(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {"type": "object", "properties": properties, "required": required}


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 1}

SEARCH = ToolSpec(
    "search",
    "Find lines in the worktree (case-insensitive literal, or regex=true). Returns candidates "
    "with candidate_id values to pass to read.",
    _obj(
        {
            "query": _STR,
            "path": {"type": "string", "description": "directory to search under (optional)"},
            "regex": {"type": "boolean"},
        },
        ["query"],
    ),
)
READ = ToolSpec(
    "read",
    "Read a file: pass a candidate_id (or bundle_id + path) from search, or a path with "
    "start_line and end_line (at most 200 lines). Lines come back numbered.",
    _obj(
        {
            "candidate_id": _STR,
            "bundle_id": _STR,
            "path": _STR,
            "start_line": _INT,
            "end_line": _INT,
        },
        [],
    ),
)
LIST_DIR = ToolSpec(
    "list_dir",
    "List a directory of the worktree (default: the root).",
    _obj({"path": _STR}, []),
)
WRITE_FILE = ToolSpec(
    "write_file",
    "Create or overwrite a file in the worktree with the full new content.",
    _obj({"path": _STR, "content": _STR}, ["path", "content"]),
)
APPLY_PATCH = ToolSpec(
    "apply_patch",
    "Apply a unified diff (---/+++ headers, @@ hunks with exact context lines) to the worktree.",
    _obj({"patch": _STR}, ["patch"]),
)
REHYDRATE = ToolSpec(
    "rehydrate",
    "Get back lines of a tool output that was replaced by a pointer summary.",
    _obj(
        {"pointer_id": _STR, "start_line": _INT, "end_line": _INT, "offset": {"type": "integer"}},
        ["pointer_id"],
    ),
)
SUBMIT = ToolSpec(
    "submit",
    "Finish: say what you changed and why. Call it once, when the task is done.",
    _obj({"summary": _STR}, ["summary"]),
)

DEVELOPER_TOOLS: tuple[ToolSpec, ...] = (
    SEARCH,
    READ,
    LIST_DIR,
    WRITE_FILE,
    APPLY_PATCH,
    REHYDRATE,
    SUBMIT,
)

WAIT_TOOLS: frozenset[str] = frozenset()
"""Tools that wait for something outside (a build, a server): repeating one with the same answer
is polling, not a loop, so their steps are marked ``wait`` and the monitor's repetition rules
skip them. None of the developer's tools waits today."""
