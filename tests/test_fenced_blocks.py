"""Fenced blocks read line by line, and the one shell command of a text-protocol reply, read
as mini-swe-agent reads it (its ``action_regex``: exactly one ```` ```bash ```` block)."""

from __future__ import annotations

import pytest

from semspec.vocabulary.fenced_blocks import fenced_blocks, shell_action

BASH_AND_PYTHON = """THOUGHT: the fix, then a check.

```python
def f():
    return 1
```

Now run it:

```bash
python -c 'import mod; print(mod.f())'
```
"""
PYTHON_AFTER_BASH = """Run:

```bash
grep -n "def f" mod.py
```

which should show

```python
def f():
```
"""
BARE_AND_BASH = """The traceback was:
```
Traceback (most recent call last):
  File "x.py", line 1
```
Let me look at the file.
```bash
nl -ba x.py | sed -n '1,20p'
```
"""


def test_a_bash_block_after_a_python_block_is_the_action() -> None:
    assert shell_action(BASH_AND_PYTHON) == "python -c 'import mod; print(mod.f())'"


def test_a_python_block_after_the_bash_block_is_text() -> None:
    assert shell_action(PYTHON_AFTER_BASH) == 'grep -n "def f" mod.py'


def test_a_bare_block_beside_the_bash_block_is_text() -> None:
    assert shell_action(BARE_AND_BASH) == "nl -ba x.py | sed -n '1,20p'"


def test_each_opening_fence_is_paired_with_its_own_closing_fence() -> None:
    blocks = fenced_blocks(BASH_AND_PYTHON)
    assert [(b.language, b.closed) for b in blocks] == [("python", True), ("bash", True)]
    assert blocks[0].body == "def f():\n    return 1"


def test_a_bare_block_alone_is_no_action() -> None:
    assert shell_action("Look:\n```\nls -la\n```\n") is None


def test_two_bash_blocks_are_no_action_as_mini_swe_agent_refuses_them() -> None:
    assert shell_action("```bash\nls\n```\nthen\n```bash\npwd\n```\n") is None


def test_an_unclosed_bash_block_is_no_action() -> None:
    blocks = fenced_blocks("```bash\nls -la\n")
    assert [(b.language, b.closed) for b in blocks] == [("bash", False)]
    assert shell_action("```bash\nls -la\n") is None


@pytest.mark.parametrize(
    "text",
    [
        "Use ```bash``` fences, one per reply.\n```bash\nls\n```\n",
        "Wrap it as ``` ``` ``` in prose.\n```bash\nls\n```\n",
    ],
    ids=["fence in a code span", "three spans on a line"],
)
def test_backticks_inside_prose_open_no_block(text: str) -> None:
    assert shell_action(text) == "ls"


def test_backticks_inside_the_command_stay_in_it() -> None:
    text = "```bash\necho '```' and `date`\nprintf '```python\\n'\n```\n"
    assert shell_action(text) == "echo '```' and `date`\nprintf '```python\\n'"


def test_a_fence_line_with_a_language_inside_a_block_does_not_close_it() -> None:
    text = "```bash\ncat > notes.md <<'EOF'\n```python\nx = 1\n```\nEOF\n```\n"
    blocks = fenced_blocks(text)
    assert [b.language for b in blocks] == ["bash", ""]
    assert blocks[0].body == "cat > notes.md <<'EOF'\n```python\nx = 1"


def test_a_longer_fence_needs_a_closing_fence_as_long() -> None:
    blocks = fenced_blocks("````bash\n```\nls\n````\n")
    assert [(b.body, b.closed) for b in blocks] == [("```\nls", True)]


def test_mini_swe_agents_v2_fence_is_an_action() -> None:
    assert shell_action("```mswea_bash_command\nls\n```") == "ls"


@pytest.mark.parametrize("label", ["sh", "shell", "Bash", "bash title", "console"])
def test_other_labels_are_not_what_mini_swe_agent_runs(label: str) -> None:
    assert shell_action(f"```{label}\nls\n```") is None
