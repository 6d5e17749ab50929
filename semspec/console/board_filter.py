"""The board's filter: by section (state), by plan and by text, read from the page's address
(``/?state=failed&plan=p1&q=parser``) so a filtered board can be bookmarked and reloaded. The
page's script applies the same rules while one types, and to rows the live feed adds
(``static/console.js``, ``rowMatches``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from semspec.console.board_rows import BOARD_COLUMNS, BoardRow

MAX_TEXT = 200
"""Characters of the text filter kept (a longer one matches nothing a title holds anyway)."""


@dataclass(frozen=True)
class BoardFilter:
    """What the board shows: ``state`` one of ``BOARD_COLUMNS`` or empty (every section),
    ``plan`` a plan id or empty, ``text`` matched case-blind in a row's id, title, plan,
    phase and reason."""

    state: str = ""
    plan: str = ""
    text: str = ""

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> BoardFilter:
        """The filter an address asks for; an unknown state means every section."""
        state = params.get("state", "")
        return cls(
            state=state if state in BOARD_COLUMNS else "",
            plan=params.get("plan", "").strip(),
            text=params.get("q", "").strip()[:MAX_TEXT],
        )

    @property
    def active(self) -> bool:
        """Whether it leaves anything out."""
        return bool(self.state or self.plan or self.text)

    def keeps(self, row: BoardRow) -> bool:
        """Whether ``row`` is shown."""
        if self.state and row.column != self.state:
            return False
        if self.plan and row.plan_id != self.plan:
            return False
        if not self.text:
            return True
        seen = " ".join((row.task_id, row.title, row.plan_id, row.phase, row.reason))
        return self.text.casefold() in seen.casefold()
