"""Rule files are hostile input (issue 29): a repository may hold anything where ``sources
sync`` looks for ``AGENTS.md``, ``CLAUDE.md``, ``.cursor/rules`` and ``.github/instructions``.

A FIFO or a link in place of a rule file fails that file without waiting; ``CLAUDE.md`` imports
never leave the repository (absolute, home, ``..`` paths and links are refused and named),
loops end and depth is bounded; a huge or unclosed front matter block and a glob that expands
without end are refused; file names full of SPARQL syntax are bound, never formatted in. Every
case runs on a real Oxigraph store, and one through the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from semspec.graph.store import GraphStore
from semspec.knowledge.sources.catalog import list_sops, show_sop
from semspec.knowledge.sources.claude_imports import MAX_IMPORT_DEPTH
from semspec.knowledge.sources.rule_front_matter import (
    MAX_FRONT_MATTER_LINES,
    glob_list,
    split_rule_front_matter,
)
from semspec.knowledge.sources.rule_reader import RuleProblem
from semspec.knowledge.sources.sync import sync_sources
from tests.support.repos import make_repo
from tests.support.stack import cli_env


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    make_repo(root, files)
    return root


def test_huge_or_unclosed_front_matter_fails_that_file_alone(
    store: GraphStore, tmp_path: Path
) -> None:
    huge = "---\n" + "".join(f"k{i}: {'v' * 100}\n" for i in range(MAX_FRONT_MATTER_LINES - 5))
    repo = _repo(
        tmp_path,
        {
            ".cursor/rules/huge.mdc": huge + "---\nbody\n",
            ".cursor/rules/open.mdc": "---\nglobs: '*'\n" + "x: y\n" * 5000,
            "AGENTS.md": "# Fine\n\nStill read.\n",
        },
    )
    report = sync_sources(store, repo)
    failed = dict(report.failed)
    assert "more than 8000 characters" in failed[".cursor/rules/huge.mdc"]
    assert "no closing '---' within 100 lines" in failed[".cursor/rules/open.mdc"]
    assert report.added == ["AGENTS.md"]


def test_a_brace_bomb_glob_is_refused() -> None:
    meta, _ = split_rule_front_matter("---\nglobs: " + "{a,b}" * 8 + "\n---\n")
    with pytest.raises(RuleProblem, match="expands to more than"):
        glob_list(meta, "globs")


def test_claude_imports_stay_inside_the_repository_and_loops_end(
    store: GraphStore, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("TOP SECRET\n")
    repo = _repo(
        tmp_path,
        {
            "CLAUDE.md": "# Claude\n\nRead @docs/a.md, @../secret.md, @/etc/passwd, "
            "@~/.ssh/id_rsa, @docs/../../secret.md and @link.md. `@docs/code.md` is code.\n"
            "```\n@docs/code.md\n```\nMention @pytest.fixture in prose.\n",
            "docs/a.md": "A text. Back to @../CLAUDE.md and on to @b.md\n",
            "docs/b.md": "B text, which imports @a.md again.\n",
            "docs/code.md": "CODE ONLY\n",
        },
    )
    os.symlink(outside, repo / "link.md")
    git = pygit2.Repository(str(repo))
    git.index.add("link.md")
    git.index.write()
    report = sync_sources(store, repo)
    assert report.failed == []
    detail = show_sop(store, "CLAUDE.md")
    text = "\n".join(detail.chunks)
    assert "A text." in text and "B text" in text
    assert "TOP SECRET" not in text and "CODE ONLY" not in text
    assert detail.entry.imports == ["docs/a.md", "docs/b.md"]
    warned = {problem.split(":")[0] for _, problem in report.warnings}
    assert warned == {
        "../secret.md",
        "/etc/passwd",
        "~/.ssh/id_rsa",
        "docs/../../secret.md",
        "link.md",
    }
    # Editing an imported file re-ingests the rule.
    (repo / "docs" / "b.md").write_text("B changed.\n")
    assert sync_sources(store, repo).updated == ["CLAUDE.md"]


def test_claude_imports_stop_at_the_depth_bound(store: GraphStore, tmp_path: Path) -> None:
    files = {"CLAUDE.md": "# C\n\nStart @d1.md\n"}
    for i in range(1, MAX_IMPORT_DEPTH + 3):
        files[f"d{i}.md"] = f"level {i} @d{i + 1}.md\n"
    repo = _repo(tmp_path, files)
    report = sync_sources(store, repo)
    imports = show_sop(store, "CLAUDE.md").entry.imports
    assert imports == [f"d{i}.md" for i in range(1, MAX_IMPORT_DEPTH + 1)]
    assert any("imports deep" in p for _, p in report.warnings)


def test_a_fifo_or_a_link_in_place_of_a_rule_file_is_refused_without_waiting(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, {"AGENTS.md": "# A\n\nText.\n", "src/AGENTS.md": "# S\n\nText.\n"})
    (repo / "AGENTS.md").unlink()
    os.mkfifo(repo / "AGENTS.md")
    (repo / "src" / "AGENTS.md").unlink()
    (repo / "src" / "AGENTS.md").symlink_to("/etc/hostname")
    report = sync_sources(store, repo)
    assert {f for f, _ in report.failed} == {"AGENTS.md", "src/AGENTS.md"}
    assert all("not a regular file" in p for _, p in report.failed)


def test_odd_file_names_are_bound_into_queries_not_formatted(
    store: GraphStore, tmp_path: Path
) -> None:
    name = 'we"ird} }\\ INSERT/AGENTS.md'
    repo = _repo(tmp_path, {name: "# W\n\nText.\n"})
    assert sync_sources(store, repo).added == [name]
    assert [e.sop_id for e in list_sops(store)] == [name]
    assert show_sop(store, name).entry.path == name


def test_sources_sync_on_a_hostile_repository_names_each_file_and_leaks_nothing(
    tmp_path: Path,
) -> None:
    repo = _repo(
        tmp_path,
        {
            "AGENTS.md": "# A\n\nText.\n",
            "CLAUDE.md": "# C\n\nRead @/etc/passwd and @../../../../etc/hostname\n",
        },
    )
    (repo / "AGENTS.md").unlink()
    os.mkfifo(repo / "AGENTS.md")
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(repo), "sources", "sync", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(),
        check=False,
    )
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout)
    assert [f["file"] for f in report["failed"]] == ["AGENTS.md"]
    assert "not a regular file" in report["failed"][0]["problem"]
    assert [w["problem"].split(":")[0] for w in report["warnings"]] == [
        "/etc/passwd",
        "../../../../etc/hostname",
    ]
    assert "root:" not in done.stdout + done.stderr
