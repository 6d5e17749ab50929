"""The one masking of secrets: log fields, gate output and command-agent output all pass here.

Three kinds of text are replaced by ``MASK``: values shaped like a vendor credential (OpenAI,
Anthropic, AWS, GitHub, Slack, Google keys, bearer tokens), the value of a secret-named
``NAME=value`` assignment (what ``env`` prints), and the worker's own secret values: those of
every secret-named variable of this process's environment (``AWS_SECRET_ACCESS_KEY`` has no
shape of its own) and of the variables a caller names (``gates.env``). A value is masked as it
is, reversed, in hex (lower and upper case) and in base64 (standard and URL-safe, at any of the
three byte alignments, so an encoded ``KEY=value`` line is caught too), also when line breaks
cut it (``base64`` wraps at 76 columns; a gate may print it in pieces). See
``docs/security.md``.
"""

from __future__ import annotations

import base64
import bisect
import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import AnyStr

MASK = "***"

SECRET_NAME = re.compile(
    r"(api[_-]?key|access[_-]?key|token|secret|password|passwd|authorization|credential"
    r"|private[_-]?key)",
    re.I,
)
"""A key or variable name whose value is a secret whatever it looks like."""

_SHAPES = (
    r"sk-ant-[A-Za-z0-9_\-]{8,}",
    r"sk-[A-Za-z0-9_\-]{8,}",  # also sk-proj-…
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"gh[pousr]_[A-Za-z0-9]{16,}",
    r"xox[abpr]-[A-Za-z0-9\-]{10,}",
    r"A(?:KIA|SIA)[0-9A-Z]{16}",
    r"AIza[0-9A-Za-z_\-]{30,}",
    r"Bearer\s+[A-Za-z0-9._~+/\-]{8,}=*",
)
# ``OPENAI_API_KEY=…``, ``AWS_SECRET_ACCESS_KEY: …``: shell-style upper-case names only, so
# prose such as ``tokens=1200`` stays readable.
_ASSIGNMENT = (
    r"(?<![A-Za-z0-9_])(?P<name>[A-Z0-9_]*(?:API_KEY|ACCESS_KEY|TOKEN|SECRET|PASSWORD|PASSWD"
    r"|CREDENTIALS?|PRIVATE_KEY)[A-Z0-9_]*)(?P<sep>=|: ?)(?P<value>[^\s'\"]{4,})"
)
_PATTERN = re.compile("|".join([_ASSIGNMENT, *_SHAPES]))
_ANCHORS = (
    # Each branch opens with a letter rare in logs (``PASSED`` holds none of them), and
    # looks back for the rest: the scan's first-character test skips everything else.
    r"KEY(?<=_KEY)|KEN(?<=TOKEN)|RET(?<=SECRET)|W(?<=PASSW)|NTIAL(?<=CREDENTIAL)"
    r"|KIA(?<=AKIA)|IA(?<=ASIA)|za(?<=AIza)|Bearer(?P<bearer>)|-(?<=sk-)|-(?<=xox[abpr]-)"
)
_GITHUB = ("gh", "github_pat_")
_GITHUB_BYTES = (b"gh", b"github_pat_")
"""With these (``ghp_`` …, ``github_pat_``; found by ``find``, as ``_`` is everywhere in test
output), every match of ``_PATTERN`` holds an anchor on the line where it starts."""
_NOT_IN_ANCHORS = bytes(b for b in range(256) if not (b in b"_-" or 0x41 <= b <= 0x5A))
"""Each anchor holds an upper-case letter, ``_`` or ``-``: bytes without one hold no anchor."""
_ANCHOR_TEXT = re.compile(_ANCHORS)
_ANCHOR_BYTES = re.compile(_ANCHORS.encode("ascii"))
"""Every match of ``_PATTERN`` holds one of these on the line where it starts (an assignment's
name, a shape's fixed beginning): ``_PATTERN`` scans at about 15 MB/s, this at pipe speed, so
``_PATTERN`` runs only on the lines this finds. (Each branch begins with a literal, so that the
scan skips what cannot start one; a group at a branch's start would turn that test off.)"""
MIN_SECRET_CHARS = 8
"""Shorter values of secret-named variables are not masked by value: ``1`` or ``true`` would
turn every number in a log into ``***``."""
HELD_PREFIX_CHARS = 4
"""A stream holds a line back when it ends with this much (or more) of a secret's form, so the
rest on the next line is masked with it (``StreamMasker``)."""
SPLIT_SUFFIX_CHARS = 3
"""A split leaving fewer characters than ``HELD_PREFIX_CHARS`` on the first line is caught by
masking the rest: forms without their first one to three characters are masked too."""
MASK_LINE_BYTES = 64 * 1024
"""A stream line longer than this is masked in pieces cut at whitespace (credentials hold none)."""
_BREAKS = re.compile(r"[\r\n]")


@dataclass(frozen=True)
class SecretForm:
    """One way a secret value may be written: ``text``, the variable it came from, how encoded."""

    text: str
    name: str
    encoding: str
    """``plain``, ``reversed``, ``hex``, ``base64``, or one of them with ``, split``."""


def named_secrets(
    environ: Mapping[str, str], names: Iterable[str] = ()
) -> tuple[tuple[str, str], ...]:
    """``(name, value)`` of the secret-named variables of ``environ`` and of ``names`` (values of
    ``MIN_SECRET_CHARS`` or more), longest value first; a value held by two names is listed once."""
    wanted = set(names)
    found: dict[str, str] = {}
    for name in sorted(environ):
        value = environ[name]
        if (SECRET_NAME.search(name) or name in wanted) and len(value.strip()) >= MIN_SECRET_CHARS:
            found.setdefault(value, name)
    return tuple(sorted(((n, v) for v, n in found.items()), key=lambda p: (-len(p[1]), p[1])))


def secret_forms(name: str, value: str) -> tuple[SecretForm, ...]:
    """Every form of ``value`` that masking looks for (at least ``MIN_SECRET_CHARS`` long)."""
    raw = value.encode("utf-8", "surrogateescape")
    whole = [
        SecretForm(value, name, "plain"),
        SecretForm(value[::-1], name, "reversed"),
        SecretForm(raw.hex(), name, "hex"),
        SecretForm(raw.hex().upper(), name, "hex"),
    ]
    encoded = [SecretForm(core, name, "base64") for core in _base64_cores(raw)]
    cut = [
        SecretForm(form.text[drop:], name, f"{form.encoding}, split")
        for form in (*whole, *encoded)
        for drop in range(1, SPLIT_SUFFIX_CHARS + 1)
    ]
    unique: dict[str, SecretForm] = {}
    for form in (*whole, *encoded, *cut):
        if len(form.text) >= MIN_SECRET_CHARS:
            unique.setdefault(form.text, form)
    return tuple(unique.values())


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that depend on ``raw`` alone, for each of the three alignments
    ``raw`` may have inside a longer encoded text, in both alphabets."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        # Character k covers bits [6k, 6k+6); keep those inside the value's bits.
        start = -(-8 * offset // 6)
        end = (8 * offset + 8 * len(raw)) // 6
        core = encoded[start:end]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


class Masker:
    """Masks credentials and the given secret values in every form (see the module docstring)."""

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        forms = {form.text: form for n, v in secrets for form in secret_forms(n, v)}
        self.forms: tuple[SecretForm, ...] = tuple(
            sorted(forms.values(), key=lambda f: (-len(f.text), f.text))
        )
        self._longest = max((len(f.text) for f in self.forms), default=0)
        # A form and its cut forms end alike: text without that end holds none of them.
        groups: dict[str, list[str]] = {}
        for form in self.forms:
            groups.setdefault(form.text[-MIN_SECRET_CHARS:], []).append(form.text)
        self._groups = sorted(groups.items())
        # Every beginning a held line may end with, and their last characters: most lines end
        # with none of these, and are let go after one set lookup.
        self._starts = {
            f.text[:size] for f in self.forms for size in range(HELD_PREFIX_CHARS, len(f.text))
        }
        self._ends = {start[-HELD_PREFIX_CHARS:] for start in self._starts}

    def mask(self, text: str) -> str:
        """``text`` with every secret form (line breaks inside one included) and every
        credential shape replaced by ``MASK``."""
        return mask_shapes(self.mask_values(text))

    def mask_values(self, text: str) -> str:
        """``text`` with the secret forms alone replaced (a line break inside one is kept)."""
        if not self.forms:
            return text
        joined = _without_breaks(text)
        found = [f for key, group in self._groups if key in joined for f in group if f in joined]
        found.sort(key=lambda f: (-len(f), f))
        if not found:
            return text
        if len(joined) == len(text):
            for form in found:
                text = text.replace(form, MASK)
            return text
        return _mask_spans(text, joined, found)

    def found(self, text: str) -> list[SecretForm]:
        """The secret forms ``text`` holds, longest first (one per place in the text)."""
        hits: list[SecretForm] = []
        for form in self.forms:
            if form.text in text:
                hits.append(form)
                text = text.replace(form.text, MASK)
        return hits

    def held_from(self, text: str) -> int:
        """Where the line begins on which a secret form starts that ``text`` ends before it is
        complete (``HELD_PREFIX_CHARS`` of it or more, line breaks skipped); ``len(text)`` when
        ``text`` ends with no such beginning."""
        if not self.forms:
            return len(text)
        window = text[-2 * self._longest :]
        joined = _without_breaks(window)
        if joined[-HELD_PREFIX_CHARS:] not in self._ends:
            return len(text)
        base = len(text) - len(window)
        breaks = [m.start() for m in _BREAKS.finditer(window)]
        tail = joined[-(self._longest - 1) :]
        for skip in range(len(tail) - HELD_PREFIX_CHARS + 1):
            if tail[skip:] in self._starts:
                start = _shifted(len(joined) - len(tail) + skip, breaks)
                return text.rfind("\n", 0, base + start) + 1
        return len(text)


def _without_breaks(text: str) -> str:
    return text.replace("\r", "").replace("\n", "")


def _mask_spans(text: str, joined: str, found: list[str]) -> str:
    """Mask each occurrence of ``found`` in ``joined`` (``text`` without line breaks) in
    ``text``, keeping the line breaks inside a masked span so lines stay lines."""
    breaks = [m.start() for m in _BREAKS.finditer(text)]
    spans: list[tuple[int, int]] = []
    for form in found:
        at = joined.find(form)
        while at != -1:
            spans.append((at, at + len(form)))
            at = joined.find(form, at + len(form))
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    last = 0
    for start, end in merged:
        first = _shifted(start, breaks)
        after = _shifted(end - 1, breaks) + 1
        out += [text[last:first], MASK, "".join(_BREAKS.findall(text[first:after]))]
        last = after
    out.append(text[last:])
    return "".join(out)


def _shifted(joined_index: int, breaks: list[int]) -> int:
    """``_original_index`` by bisection: breaks before a character shift it right."""
    low, index = 0, joined_index
    while True:
        count = bisect.bisect_right(breaks, index, lo=low)
        if count == low:
            return index
        index += count - low
        low = count


def mask_text(
    text: str, environ: Mapping[str, str] | None = None, names: Iterable[str] = ()
) -> str:
    """``text`` with credentials replaced by ``MASK`` (``environ`` defaults to this process's;
    ``names``: variables whose values are masked whatever they are called, as ``gates.env``)."""
    env = os.environ if environ is None else environ
    return masker_for(named_secrets(env, names)).mask(text)


def worker_masker(names: Iterable[str] = ()) -> Masker:
    """The masker of this process's secret values and those of ``names``."""
    return masker_for(named_secrets(os.environ, names))


@functools.lru_cache(maxsize=8)
def masker_for(secrets: tuple[tuple[str, str], ...]) -> Masker:
    """One ``Masker`` per set of secrets (building the forms costs more than using them)."""
    return Masker(secrets)


class StreamMasker:
    """Masks a byte stream (a gate's output) line by line as it arrives.

    A line that ends with the beginning of a secret form is held back until the next one
    arrives, so a value cut by a line break is masked whole; a held stretch is let go once it
    passes ``MASK_LINE_BYTES``. Bytes that are not UTF-8 pass through unchanged.
    """

    def __init__(self, masker: Masker, max_line: int = MASK_LINE_BYTES) -> None:
        self.masker = masker
        self.max_line = max_line
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> bytes:
        """The masked bytes of ``chunk`` (and of what was held) that may be kept now."""
        self._pending += chunk
        cut = self._pending.rfind(b"\n") + 1
        if not cut and len(self._pending) > self.max_line:
            cut = max(self._pending.rfind(b" "), self._pending.rfind(b"\t")) + 1
            cut = cut or len(self._pending)
        if cut and len(self._pending) <= self.max_line:
            cut = self._held(cut)
        if not cut:
            return b""
        done = self._masked(bytes(self._pending[:cut]))
        del self._pending[:cut]
        return done

    def close(self) -> bytes:
        """The masked rest, at the end of the stream."""
        rest = self._masked(bytes(self._pending))
        self._pending.clear()
        return rest

    def _held(self, cut: int) -> int:
        if not self.masker.forms:
            return cut
        text = bytes(self._pending[:cut]).decode("utf-8", "surrogateescape")
        at = self.masker.held_from(text.rstrip("\r\n"))
        if at >= len(text.rstrip("\r\n")):
            return cut
        return len(text[:at].encode("utf-8", "surrogateescape"))

    def _masked(self, data: bytes) -> bytes:
        if not data:
            return data
        if self.masker.forms:
            text = data.decode("utf-8", "surrogateescape")
            masked = self.masker.mask_values(text)
            if masked is not text:  # unchanged text is handed back as it came
                data = masked.encode("utf-8", "surrogateescape")
        # Shapes on the bytes: only the lines that may hold one are decoded.
        return mask_shapes_bytes(data)


def mask_shapes(text: str) -> str:
    """``text`` with credential shapes and secret-named assignments replaced by ``MASK``."""
    return _mask_anchored_lines(text, _ANCHOR_TEXT, _GITHUB, "\n", "")


def mask_shapes_bytes(data: bytes) -> bytes:
    """``mask_shapes`` of UTF-8 ``data`` (other bytes pass through), decoding only the lines
    that may hold a shape."""
    if not data.translate(None, _NOT_IN_ANCHORS):
        return data  # a flood of lower-case text or digits: one pass at memory speed
    return _mask_anchored_lines(data, _ANCHOR_BYTES, _GITHUB_BYTES, b"\n", b"")


def _mask_anchored_lines(
    data: AnyStr,
    anchor: re.Pattern[AnyStr],
    github: tuple[AnyStr, AnyStr],
    newline: AnyStr,
    empty: AnyStr,
) -> AnyStr:
    """``_PATTERN.sub`` over ``data``, run only on the lines ``anchor`` or ``github`` finds. A
    match never crosses a line break except ``Bearer\\s+token``, whose span runs on to the
    token's line; lines start after a break, which the pattern's look-behind sees as it sees a
    break."""
    found_spans: list[tuple[int, int]] = []
    found = anchor.search(data)
    while found is not None:
        end = data.find(newline, found.end())
        end = len(data) if end == -1 else end
        if found.group("bearer") is not None:
            checked = found.end()
            while end < len(data) and _blank(data[checked:end]):
                checked = end
                after = data.find(newline, end + 1)
                end = len(data) if after == -1 else after
        found_spans.append((data.rfind(newline, 0, found.start()) + 1, end))
        # From just after this one: a later Bearer on the line may run on to the next.
        found = anchor.search(data, found.end())
    for literal in github:
        at = data.find(literal)
        while at != -1:
            end = data.find(newline, at)
            end = len(data) if end == -1 else end
            found_spans.append((data.rfind(newline, 0, at) + 1, end))
            at = data.find(literal, end)
    spans: list[list[int]] = []
    for start, end in sorted(found_spans):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return data
    out: list[AnyStr] = []
    last = 0
    for start, end in spans:
        out += [data[last:start], _sub_shapes(data[start:end])]
        last = end
    out.append(data[last:])
    return empty.join(out)


def _blank(piece: str | bytes) -> bool:
    """True when ``piece`` is empty or whitespace as ``\\s`` sees it (Unicode's, once decoded)."""
    text = piece.decode("utf-8", "surrogateescape") if isinstance(piece, bytes) else piece
    return not text or text.isspace()


def _sub_shapes(piece: AnyStr) -> AnyStr:
    if isinstance(piece, bytes):
        text = piece.decode("utf-8", "surrogateescape")
        return _PATTERN.sub(_replace, text).encode("utf-8", "surrogateescape")
    return _PATTERN.sub(_replace, piece)


def _replace(match: re.Match[str]) -> str:
    if match.group("name") is not None:
        return f"{match.group('name')}{match.group('sep')}{MASK}"
    return MASK
