"""The developer's tools bound to one worktree and one stabilization session.

Tools touch the file system and libgit2, so the agent loop runs each call in a thread of its
own with a deadline (``DeveloperToolbox.call``): the worker's event loop, which serves every
other task, never waits on a slow search or a stuck file, and a call past its deadline is a
tool error the model reads. Every refusal, ours or the OS's, is such an error too; nothing a
tool does ends the step as a transport failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from semspec.agents.compaction.pointers import PointerStore
from semspec.agents.stabilization.gate import ReadArgs
from semspec.agents.stabilization.layer import Stabilizer
from semspec.agents.stabilization.session import SessionState
from semspec.agents.tools.deadline import in_thread
from semspec.agents.tools.files import read_lines, write_regular
from semspec.agents.tools.patching import apply_patch
from semspec.agents.tools.search import search_files
from semspec.agents.tools.specs import DEVELOPER_TOOLS
from semspec.agents.workspace import HIDDEN_NAMES, ToolError, Workspace, os_error
from semspec.model.providers.types import ToolCall, ToolSpec

MAX_LIST_ENTRIES = 200
MAX_WRITE_BYTES = 2_000_000
TOOL_TIMEOUT_S = 120.0
"""How long one tool call may take before the model gets a timeout error instead."""
# Outputs of these tools must stay verbatim: a pointer to a pointer would never end.
NOT_SUMMARIZABLE = frozenset({"rehydrate", "submit", "write_file", "apply_patch"})


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns to the loop."""

    content: str
    ok: bool = True
    summarizable: bool = True
    submitted: bool = False
    summary: str = ""


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def _int_arg(args: dict[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ToolError(f"{name} must be an integer")
    try:
        return int(value)
    except ValueError as exc:
        raise ToolError(f"{name} must be an integer, got {value!r}") from exc


def _entry(child: os.DirEntry[str]) -> dict[str, Any]:
    """One list_dir entry: ``lstat`` only, so a link, FIFO or device is named, never opened."""
    info = child.stat(follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        return {"name": child.name, "type": "dir", "size": None}
    if stat.S_ISREG(info.st_mode):
        return {"name": child.name, "type": "file", "size": info.st_size}
    kind = "symlink" if stat.S_ISLNK(info.st_mode) else "other"
    return {"name": child.name, "type": kind, "size": None}


def _str_arg(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise ToolError(f"argument {name!r} is required")
        return None
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string")
    return value


class DeveloperToolbox:
    """search, read, list_dir, write_file, apply_patch, rehydrate and submit for one worktree."""

    def __init__(
        self,
        workspace: Workspace,
        stabilizer: Stabilizer,
        session: SessionState,
        pointers: PointerStore,
        timeout_s: float = TOOL_TIMEOUT_S,
    ) -> None:
        self.workspace = workspace
        self.stabilizer = stabilizer
        self.session = session
        self.pointers = pointers
        self.timeout_s = timeout_s
        self.written: set[str] = set()

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools' JSON schemas."""
        return DEVELOPER_TOOLS

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one tool call in a thread of its own, off the event loop, within ``timeout_s``.

        The thread cannot be killed: past the deadline, or when the awaiting step is cancelled
        (a halt, a cancelled task), the call is told to stop and a long search ends at its next
        line.
        """
        stop = threading.Event()
        try:
            return await in_thread(lambda: self.run(call, stop.is_set), self.timeout_s)
        except TimeoutError:
            stop.set()
            return self._error(
                f"{call.name}: stopped after {self.timeout_s:g} s; narrow it (a path to search "
                "under, a simpler pattern, a smaller file)",
                call.name not in NOT_SUMMARIZABLE,
            )
        except asyncio.CancelledError:
            stop.set()
            raise

    def run(self, call: ToolCall, stopped: Callable[[], bool] = lambda: False) -> ToolResult:
        """Run one tool call; every failure becomes an error result the model can act on.

        ``stopped()`` turning true asks a long call (a search) to give up.
        """
        summarizable = call.name not in NOT_SUMMARIZABLE
        if call.arguments_error:
            return self._error(f"{call.name}: {call.arguments_error}; resend valid JSON", True)
        handler = getattr(self, f"_tool_{call.name}", None)
        if handler is None:
            names = ", ".join(spec.name for spec in self.specs)
            return self._error(f"unknown tool {call.name!r}; available: {names}", True)
        try:
            if call.name == "search":
                return self._tool_search(call.arguments, stopped)
            result: ToolResult = handler(call.arguments)
        except ToolError as exc:
            return self._error(f"{call.name}: {exc}", summarizable)
        except OSError as exc:  # a refusal no tool foresaw: still the model's to read
            shown = str(exc.filename or "the worktree")
            return self._error(f"{call.name}: {os_error(exc, shown, 'used')}", summarizable)
        return result

    def _error(self, message: str, summarizable: bool) -> ToolResult:
        return ToolResult(
            _json({"ok": False, "error": message}), ok=False, summarizable=summarizable
        )

    def _normalize(self, path: str | None) -> str | None:
        return self.workspace.relative(self.workspace.resolve(path)) if path else None

    def _load(self, rel: str) -> list[str]:
        return read_lines(self.workspace.resolve(rel), rel)

    def _tool_search(
        self, args: dict[str, Any], stopped: Callable[[], bool] = lambda: False
    ) -> ToolResult:
        query = _str_arg(args, "query", required=True) or ""
        hits = search_files(
            self.workspace,
            query,
            under=_str_arg(args, "path"),
            regex=bool(args.get("regex", False)),
            excluded_dirs=self.stabilizer.policy.excluded_dirs,
            cancelled=stopped,
        )
        return ToolResult(_json(self.stabilizer.search_response(self.session, query, hits)))

    def _tool_read(self, args: dict[str, Any]) -> ToolResult:
        read = ReadArgs(
            path=self._normalize(_str_arg(args, "path")),
            start_line=_int_arg(args, "start_line"),
            end_line=_int_arg(args, "end_line"),
            candidate_id=_str_arg(args, "candidate_id"),
            bundle_id=_str_arg(args, "bundle_id"),
        )
        response = self.stabilizer.read_response(self.session, read, self._load)
        return ToolResult(_json(response), ok=bool(response["ok"]))

    def _tool_list_dir(self, args: dict[str, Any]) -> ToolResult:
        rel = _str_arg(args, "path") or "."
        path = self.workspace.resolve(rel)
        if not path.is_dir():
            raise ToolError(f"{rel!r} is not a directory")
        try:
            with os.scandir(path) as scan:
                children = sorted(
                    (child for child in scan if child.name not in HIDDEN_NAMES),
                    key=lambda child: child.name,
                )
            entries = [_entry(child) for child in children]
        except OSError as exc:
            raise os_error(exc, rel, "listed") from None
        truncated = len(entries) > MAX_LIST_ENTRIES
        return ToolResult(
            _json(
                {
                    "ok": True,
                    "path": self.workspace.relative(path),
                    "entries": entries[:MAX_LIST_ENTRIES],
                    "truncated": truncated,
                }
            )
        )

    def _tool_write_file(self, args: dict[str, Any]) -> ToolResult:
        rel = _str_arg(args, "path", required=True) or ""
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("argument 'content' must be a string with the whole file")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ToolError(f"content is not valid text: {exc.reason}") from None
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"content is larger than {MAX_WRITE_BYTES} bytes")
        path = self.workspace.resolve(rel, for_write=True)
        written = self.workspace.relative(path)
        write_regular(path, written, data)
        self.written.add(written)
        return ToolResult(
            _json({"ok": True, "path": written, "lines": content.count("\n") + 1}),
            summarizable=False,
        )

    def _tool_apply_patch(self, args: dict[str, Any]) -> ToolResult:
        patch = _str_arg(args, "patch", required=True) or ""
        touched = apply_patch(self.workspace, patch)
        self.written.update(touched)
        return ToolResult(_json({"ok": True, "files": touched}), summarizable=False)

    def _tool_rehydrate(self, args: dict[str, Any]) -> ToolResult:
        pointer_id = _str_arg(args, "pointer_id", required=True) or ""
        result = self.pointers.rehydrate(
            pointer_id,
            start_line=_int_arg(args, "start_line") or 1,
            end_line=_int_arg(args, "end_line"),
            offset=max(0, _int_arg(args, "offset") or 0),
        )
        return ToolResult(_json(result), ok=bool(result["ok"]), summarizable=False)

    def _tool_submit(self, args: dict[str, Any]) -> ToolResult:
        summary = _str_arg(args, "summary") or ""
        return ToolResult(
            _json({"ok": True, "submitted": True}),
            summarizable=False,
            submitted=True,
            summary=summary,
        )
