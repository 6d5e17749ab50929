"""The workflow patches in force, each with the minor version that added it (ADR 0007).

Before 1.0 a task is finished by the minor version that started it: within a minor version every
change to workflow commands is guarded with ``workflow.patched(id)`` and listed here; the first
commit of the next minor version removes every entry of the one before, with its old path, and
re-records ``tests/histories/``. ``tests/workflow/test_workflow_patches.py`` checks both rules.
"""

from __future__ import annotations

PATCHES: dict[str, str] = {
    # The task keeps its list row in its memo (``workflow/task/loop/listing_memo.py``, issue 31).
    "listing-memo": "0.1",
    # A cancelled task calls ``finalize`` too, which removes its worktree (``loop/finish.py``).
    "finalize-at-cancel": "0.1",
    # A land keeps where it left its task in its memo (``workflow/land/land_memo.py``, issue 28).
    "land-memo": "0.1",
}
"""Patch id → the minor version (``"0.N"``) that added it. The eight patches written while 0.1.0
was developed went with issue 27."""
