"""One embedded stack (``semspec up``) for every scenario; each scenario brings its own project.

The projects join the stack as external-endpoint siblings (``tests/support/mdurl_project.py``),
so their gates, models, SOPs and graphs stay apart while the services start only once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.stack import Stack, check_gate, running_stack, sample_config


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The stack, started once for the scenarios and stopped after the last one."""
    with running_stack(tmp_path_factory.mktemp("scenarios"), sample_config([check_gate()])) as s:
        yield s
