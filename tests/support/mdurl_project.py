"""A throwaway project made of real third-party source, for the scenario tests.

The project is a copy of the installed ``mdurl`` package (MIT licensed, small, pure Python,
stable) with a pytest suite written here, committed to a new git repository together with a
``.semspec/config.yaml`` and, when a scenario wants them, SOPs and a model registry. The
repository joins a running stack like ``Stack.sibling_repo`` does: its config names the stack's
NATS and Temporal as external endpoints, so each scenario has its own gates, models and graph.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.repos import make_repo
from tests.support.stack import Stack

PACKAGE = "mdurl"
PACKAGE_FILES = ("__init__.py", "_decode.py", "_encode.py", "_format.py", "_parse.py", "_url.py")
SOP_DIR = ".semspec/sources/docs/sops"
FORMAT_PY = "mdurl/_format.py"

TEST_SUITE = '''\
"""Behaviour of the mdurl copy in this repository."""

from pathlib import Path

import mdurl

ROUND_TRIP = [
    "https://user@example.com:8080/a/b?q=1#top",
    "http://[::1]:80/x",
    "mailto:me@example.com",
    "//cdn.example.com/lib.js",
    "/relative/path?x#y",
]


def test_the_package_under_test_is_the_copy_in_this_checkout():
    here = Path(__file__).resolve().parent.parent
    assert Path(mdurl.__file__).resolve().parent.parent == here


def test_parse_splits_a_url_into_its_parts():
    url = mdurl.parse("https://user@example.com:8080/a/b?q=1#top")
    assert (url.protocol, url.auth, url.hostname, url.port) == (
        "https:", "user", "example.com", "8080"
    )
    assert (url.pathname, url.search, url.hash) == ("/a/b", "?q=1", "#top")


def test_format_turns_a_parsed_url_back_into_the_same_text():
    for text in ROUND_TRIP:
        assert mdurl.format(mdurl.parse(text)) == text


def test_encode_escapes_unsafe_characters_and_keeps_existing_escapes():
    assert mdurl.encode("a b%20c/\\u00e4") == "a%20b%20c/%C3%A4"
    assert mdurl.encode("a b", mdurl.ENCODE_COMPONENT_CHARS) == "a%20b"


def test_decode_reverses_encode_but_keeps_reserved_escapes():
    assert mdurl.decode(mdurl.encode("\\u00e4 \\u00f6")) == "\\u00e4 \\u00f6"
    assert mdurl.decode("a%20b%2Fc") == "a b%2Fc"
'''

ADDED_FUNCTION = '''

def format_without_hash(url: URL) -> str:
    """The URL as text without its fragment (``#...``)."""
    return format(url._replace(hash=None))
'''

ADDED_TEST = """\
import mdurl
from mdurl._format import format_without_hash


def test_format_without_hash_drops_only_the_fragment():
    url = mdurl.parse("https://example.com/a?q=1#top")
    assert format_without_hash(url) == "https://example.com/a?q=1"
"""


def package_sources() -> dict[str, str]:
    """The installed package's modules and licence, keyed by their path in the project."""
    spec = importlib.util.find_spec(PACKAGE)
    assert spec is not None and spec.origin is not None, f"{PACKAGE} is not installed"
    root = Path(spec.origin).parent
    files = {
        f"{PACKAGE}/{name}": (root / name).read_text(encoding="utf-8") for name in PACKAGE_FILES
    }
    licence = importlib.metadata.distribution(PACKAGE).read_text("LICENSE")
    files[f"{PACKAGE}/LICENSE"] = licence or "MIT (see the mdurl distribution)\n"
    return files


def original(path: str) -> str:
    """The unchanged text of one of the project's package files."""
    return package_sources()[path]


def with_new_function() -> str:
    """``mdurl/_format.py`` plus ``format_without_hash``: a change the test suite accepts."""
    return original(FORMAT_PY) + ADDED_FUNCTION


def without_fragment_support() -> str:
    """``mdurl/_format.py`` that forgets the fragment: the round-trip test fails."""
    text = original(FORMAT_PY)
    broken = text.replace('    result += url.hash or ""\n', "")
    assert broken != text, "mdurl/_format.py changed shape; update the scenario"
    return broken


def pytest_gate(timeout: float = 120.0) -> dict[str, Any]:
    """The project's test suite as a required gate, run by this interpreter in the worktree."""
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    return {"name": "tests", "command": command, "timeout": timeout}


def sleep_gate(seconds: float) -> dict[str, Any]:
    """A required gate that only waits (keeps a task busy in its gates step)."""
    command = f'{sys.executable} -c "import time; time.sleep({seconds})"'
    return {"name": "slow", "command": command, "timeout": seconds + 60}


def sop(
    sop_id: str,
    severity: str,
    applies_to: list[str],
    requirements: list[str],
    title: str = "",
) -> str:
    """The text of one SOP file: front matter, a title, a paragraph and its requirements."""
    meta = {"id": sop_id, "category": "sop", "applies_to": applies_to, "severity": severity}
    body = [
        f"# {title or sop_id}",
        "",
        f"What reviewers of this project check for {sop_id}.",
        "",
        "## Requirements",
        *(f"- {requirement}" for requirement in requirements),
        "",
        "## Why",
        "",
        "URLs reach users verbatim; a wrong escape or a lost part is a bug report.",
    ]
    return f"---\n{yaml.safe_dump(meta, sort_keys=False)}---\n\n" + "\n".join(body) + "\n"


def project_config(stack: Stack, name: str, **sections: Any) -> dict[str, Any]:
    """Config of a project served by ``stack``: the pytest gate, the stack's endpoints, and
    ``sections`` merged on top (one level deep)."""
    config: dict[str, Any] = {
        "project": {"name": name, "base_branch": "main"},
        "gates": {"preset": "none", "additional": [pytest_gate()]},
        "loop": {"max_retries": 1, "activity_attempts": 2},
        "services": {
            "nats": stack.nats_section(),
            "temporal": {"address": stack.temporal_address()},
            "run_dir": str(stack.root / name / "run"),
        },
        # The stack's worker runs only tasks its owner key signed: the project shares it.
        "security": {"owner_key": str(stack.owner_key_path)},
    }
    for key, value in sections.items():
        current = config.get(key)
        config[key] = {**current, **value} if isinstance(current, dict) else value
    return config


def make_project(
    stack: Stack,
    name: str,
    config: dict[str, Any],
    sops: dict[str, str] | None = None,
    registry: dict[str, Any] | None = None,
) -> Path:
    """Commit the project, its config, SOPs (file name → text) and registry to a new repo.

    The README names the scenario, so every project has its own root commit: the risk monitor
    treats repositories with one root commit as clones of one project.
    """
    files = {
        **package_sources(),
        "tests/test_mdurl.py": TEST_SUITE,
        "README.md": f"# mdurl, copied for the semspec scenario {name}\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
        ".semspec/.gitignore": "run/\ngraph/\n",
        ".semspec/config.yaml": yaml.safe_dump(config, sort_keys=False),
    }
    for file_name, text in (sops or {}).items():
        files[f"{SOP_DIR}/{file_name}"] = text
    if registry is not None:
        files[".semspec/models.yaml"] = yaml.safe_dump(registry, sort_keys=False)
    path = stack.root / name / "repo"
    make_repo(path, files)
    return path
