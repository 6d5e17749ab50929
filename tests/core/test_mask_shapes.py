"""The shape masking that scans only anchored lines does what the full pattern does.

The oracle is ``_PATTERN.sub`` over the whole text, as masking ran before the anchor scan
(issue 31): texts are built from pieces of every shape, line breaks, Unicode whitespace and
bytes that are not UTF-8, from fixed seeds.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from semspec.core.masking import (
    _PATTERN,
    Masker,
    StreamMasker,
    _replace,
    mask_shapes,
    mask_shapes_bytes,
)
from semspec.workflow.gates.capture import OutputCapture

PIECES = [
    "Bearer", " ", "\n", "\r\n", "\t", "abcdefgh12345678", "=", ": ", "OPENAI_API_KEY", "TOKEN",
    "x", "sk-", "sk-ant-", "ghp_", "gho_", "AKIA", "ABCDEFGHIJKLMNOP", "AIza", "'", '"',
    "github_pat_", "xoxb-", "xoxq-", "PASSWD", "PASSWORD=", "MY_SECRET", "__", "123", "===",
    "task-", "\u2028", "\x85", "é", "\n\n  \n", "\udc85", "\xa0", "CREDENTIALS:",
]  # fmt: skip


def _texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(PIECES, k=rng.randint(0, 50))) for _ in range(count)]


def _full(text: str) -> str:
    return _PATTERN.sub(_replace, text)


@pytest.mark.slow  # generated texts against the full pattern
def test_masking_anchored_lines_equals_the_full_pattern_on_text_and_bytes() -> None:
    for text in _texts(seed=31, count=4000):
        expected = _full(text)
        assert mask_shapes(text) == expected, text
        raw = text.encode("utf-8", "surrogateescape")
        assert mask_shapes_bytes(raw) == expected.encode("utf-8", "surrogateescape"), text


def test_a_bearer_token_on_the_line_after_another_shape_is_masked() -> None:
    text = "TOKEN=abcdefgh Bearer\n\n   abcdefghijklmnop rest\nnext"
    assert mask_shapes(text) == _full(text) == "TOKEN=*** *** rest\nnext"


def test_lower_case_floods_pass_unchanged_and_shapes_inside_them_are_masked() -> None:
    flood = b"x" * 200_000
    assert mask_shapes_bytes(flood) is flood
    planted = flood + b" sk-abcdefghijklmnop " + flood
    assert mask_shapes_bytes(planted) == flood + b" *** " + flood


def test_a_stream_fed_in_odd_pieces_masks_as_the_whole_text_does(tmp_path: Path) -> None:
    masker = Masker([("HOOK_TOKEN", "zq9-Secret-Value-0042")])
    rng = random.Random(7)
    # Without Bearer: a stream masks line by line, and ``Bearer\\s+`` may cross a line.
    for text in _texts(seed=8, count=200):
        text = text.replace("Bearer", "B")
        text += " zq9-Secret-Value-0042 AKIAABCDEFGHIJKLMNOP\n"
        raw = text.encode("utf-8", "surrogateescape")
        stream = StreamMasker(masker)
        out = b""
        at = 0
        while at < len(raw):
            step = rng.randint(1, 40)
            out += stream.feed(raw[at : at + step])
            at += step
        out += stream.close()
        assert out == masker.mask(text).encode("utf-8", "surrogateescape"), text
    with OutputCapture(tmp_path / "g.log", 100) as capture:
        capture.write(b"ok AKIAABCDEFGHIJKLMNOP\n" * 3)
    assert (tmp_path / "g.log").read_bytes() == b"ok ***\n" * 3
