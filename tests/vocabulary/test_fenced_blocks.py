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


def test_a_line_starting_with_backticks_closes_the_block_as_mini_swe_agent_reads_it() -> None:
    text = "```bash\ncat > notes.md <<'EOF'\n```python\nx = 1\n```\nEOF\n```\n"
    blocks = fenced_blocks(text)
    assert [(b.language, b.body) for b in blocks] == [
        ("bash", "cat > notes.md <<'EOF'"),
        ("", "EOF"),
    ]


def test_a_fence_after_prose_on_its_line_opens_a_block() -> None:
    text = "THOUGHT: ```python\nx = 1\n```\nNow:\n```bash\npython x.py\n```\n"
    assert [b.language for b in fenced_blocks(text)] == ["python", "bash"]
    assert shell_action(text) == "python x.py"


def test_a_fence_indented_in_a_list_closes_at_its_own_indent() -> None:
    text = "1. The code:\n   ```python\n   x = 1\n   ```\n2. Run it:\n```bash\npython x.py\n```\n"
    assert [b.language for b in fenced_blocks(text)] == ["python", "bash"]
    assert shell_action(text) == "python x.py"


def test_mini_swe_agents_v2_fence_is_an_action() -> None:
    assert shell_action("```mswea_bash_command\nls\n```") == "ls"


@pytest.mark.parametrize("label", ["sh", "shell", "Bash", "bash title", "console"])
def test_other_labels_are_not_what_mini_swe_agent_runs(label: str) -> None:
    assert shell_action(f"```{label}\nls\n```") is None
