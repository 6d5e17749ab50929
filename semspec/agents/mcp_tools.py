"""The tools semspec serves over MCP: search, read, meaning_pack, evidence_fetch.

They share the developer's stabilization layer, so external agents get the same read budget,
search→ref→read gate and ``meta.stabilization``. Sessions are keyed per seed 000: a client's
``session_id`` when given, else the server-issued connection id. Files are read as the
developer's tools read them (``tools.files``): regular files of bounded size only, never
``.git/`` or ``.semspec/``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from semspec.agents.stabilization.gate import ReadArgs
from semspec.agents.stabilization.layer import Stabilizer
from semspec.agents.stabilization.session import SessionRegistry, SessionState, session_key
from semspec.agents.tools.files import read_lines, read_regular
from semspec.agents.tools.search import search_files
from semspec.agents.workspace import ToolError, Workspace

PackBuilder = Callable[[Sequence[str]], str]
"""Builds the meaning pack text of some paths (wired by the CLI from the code index)."""
MAX_POINTERS = 10
_POINTER = re.compile(r"^(?P<path>.+):(?P<start>\d+)-(?P<end>\d+)#(?P<hash>[0-9a-f]{8,64})$")
_SESSION = {"type": "string", "description": "optional: keeps budgets across connections"}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "search",
        "description": "Find lines in the repository; returns candidate_id values for read.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "path": {"type": "string"},
                "regex": {"type": "boolean"},
                "session_id": _SESSION,
            },
            "required": ["query"],
        },
    },
    {
        "name": "read",
        "description": "Read by candidate_id / bundle_id from search, or path + start_line + "
        "end_line (at most 200 lines). Responses carry meta.stabilization.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "candidate_id": {"type": "string"},
                "bundle_id": {"type": "string"},
                "path": {"type": "string"},
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
                "session_id": _SESSION,
            },
        },
    },
    {
        "name": "meaning_pack",
        "description": "Compact map of files (symbols, calls, boundaries). Each F line names a "
        "file (path, language, lines, #hash); each line below it opens with its span start+more "
        "in that file: fetch its exact text with evidence_fetch as path:start-end#hash. dN are "
        "abbreviations from the dictionary at the top; ^ repeats the signature above; +N means N "
        "more definitions in the span; 'overrides str: a,b -> T' lists methods overriding a "
        "builtin base's (its parameters), grouped by return type, in one span.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "session_id": _SESSION,
            },
            "required": ["paths"],
        },
    },
    {
        "name": "evidence_fetch",
        "description": "Exact text of evidence pointers path:start-end#hash; stale if the file "
        "changed since it was indexed.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "pointers": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MAX_POINTERS,
                },
                "session_id": _SESSION,
            },
            "required": ["pointers"],
        },
    },
]


def _text(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string")
    return value


def _ints(args: dict[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{name} must be an integer")
    return value


class McpToolset:
    """Tool handlers bound to one workspace, one stabilization policy and one connection."""

    def __init__(
        self,
        workspace: Workspace,
        stabilizer: Stabilizer,
        connection_id: str,
        pack: PackBuilder | None = None,
    ) -> None:
        self.workspace = workspace
        self.stabilizer = stabilizer
        self.connection_id = connection_id
        self.pack = pack
        self.sessions = SessionRegistry()

    def session(self, args: dict[str, Any]) -> SessionState:
        """The session of a call: the client's ``session_id``, else this connection."""
        sid = args.get("session_id")
        key = session_key(
            str(self.workspace.root),
            session_id=sid if isinstance(sid, str) and sid else None,
            connection_id=self.connection_id,
        )
        return self.sessions.get(key)

    def call(
        self, name: str, args: dict[str, Any], stopped: Callable[[], bool] = lambda: False
    ) -> dict[str, Any]:
        """Run tool ``name``; ``ToolError`` means bad arguments the client can fix.

        ``stopped()`` turning true asks a long search to give up.
        """
        if name == "search":
            return self._search(args, stopped)
        handler = {
            "read": self._read,
            "meaning_pack": self._meaning_pack,
            "evidence_fetch": self._evidence_fetch,
        }.get(name)
        if handler is None:
            raise ToolError(
                f"unknown tool {name!r}; tools: search, read, meaning_pack, evidence_fetch"
            )
        return handler(args)

    def _load(self, rel: str) -> list[str]:
        return read_lines(self.workspace.resolve(rel), rel)

    def _search(
        self, args: dict[str, Any], stopped: Callable[[], bool] = lambda: False
    ) -> dict[str, Any]:
        query = args.get("query")
        if not isinstance(query, str):
            raise ToolError("query must be a string")
        hits = search_files(
            self.workspace,
            query,
            under=_text(args, "path"),
            regex=bool(args.get("regex", False)),
            excluded_dirs=self.stabilizer.policy.excluded_dirs,
            cancelled=stopped,
        )
        return self.stabilizer.search_response(self.session(args), query, hits)

    def _read(self, args: dict[str, Any]) -> dict[str, Any]:
        path = _text(args, "path")
        read = ReadArgs(
            path=self.workspace.relative(self.workspace.resolve(path)) if path else None,
            start_line=_ints(args, "start_line"),
            end_line=_ints(args, "end_line"),
            candidate_id=_text(args, "candidate_id"),
            bundle_id=_text(args, "bundle_id"),
        )
        return self.stabilizer.read_response(self.session(args), read, self._load)

    def _meaning_pack(self, args: dict[str, Any]) -> dict[str, Any]:
        paths = args.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise ToolError("paths must be a non-empty list of repository paths")
        if self.pack is None:
            raise ToolError("no meaning graph here; run `semspec index` first")
        rels = [self.workspace.relative(self.workspace.resolve(p)) for p in paths]
        return {"ok": True, "pack": self.pack(rels)}

    def _evidence_fetch(self, args: dict[str, Any]) -> dict[str, Any]:
        pointers = args.get("pointers")
        if not isinstance(pointers, list) or not pointers:
            raise ToolError("pointers must be a non-empty list like ['src/app.py:10-25#1a2b3c4d']")
        if len(pointers) > MAX_POINTERS:
            raise ToolError(f"at most {MAX_POINTERS} pointers per call")
        state = self.session(args)
        return {"ok": True, "evidence": [self._fetch_one(state, p) for p in pointers]}

    def _fetch_one(self, state: SessionState, pointer: object) -> dict[str, Any]:
        match = _POINTER.match(pointer) if isinstance(pointer, str) else None
        if match is None:
            return {"pointer": pointer, "ok": False, "error": "expected path:start-end#hash"}
        path = self.workspace.resolve(match["path"])
        try:
            data = read_regular(path, match["path"])
        except ToolError as exc:
            return {"pointer": pointer, "ok": False, "error": str(exc)}
        digest = hashlib.sha256(data).hexdigest()
        if not digest.startswith(match["hash"]):
            return {
                "pointer": pointer,
                "ok": False,
                "stale": True,
                "error": "file changed since it was indexed; run `semspec index` and fetch again",
            }
        # Evidence is a precision read: it goes through the same gate and budget as read.
        read = ReadArgs(
            path=self.workspace.relative(path),
            start_line=int(match["start"]),
            end_line=int(match["end"]),
        )
        return {"pointer": pointer, **self.stabilizer.read_response(state, read, self._load)}
