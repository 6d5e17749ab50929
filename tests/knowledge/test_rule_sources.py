"""Rule files of other tools (AGENTS.md, CLAUDE.md, .cursor/rules, .github/instructions) read by
``sources sync`` on a real Oxigraph store: scope, precedence, front matter in the shapes
published files use, a real third-party AGENTS.md, and the knowledge page. Hostile files are in
``tests/security/test_hostile_rule_files.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pygit2
import pytest

from semspec.graph.store import GraphStore
from semspec.knowledge.sources.catalog import list_sops, show_sop
from semspec.knowledge.sources.claude_imports import import_tokens
from semspec.knowledge.sources.rule_front_matter import (
    glob_list,
    split_rule_front_matter,
)
from semspec.knowledge.sources.sync import sync_sources
from semspec.workflow.context.assembler_sops import matching_sops
from tests.support.knowledge_page import render_knowledge
from tests.support.repos import make_repo


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    make_repo(root, files)
    return root


def test_nested_agents_files_apply_to_their_folder_and_the_nearest_takes_precedence(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = _repo(
        tmp_path,
        {
            "AGENTS.md": "# Root\n\nUse typed errors.\n",
            "src/AGENTS.md": "# Src\n\nNever print in src.\n",
            "src/app.py": "x = 1\n",
            "docs/a.md": "doc\n",
        },
    )
    report = sync_sources(store, repo)
    assert report.added == ["AGENTS.md", "src/AGENTS.md"] and report.failed == []
    entries = {e.sop_id: e for e in list_sops(store)}
    assert entries["AGENTS.md"].applies_to == ["**"]
    assert entries["src/AGENTS.md"].applies_to == ["src/**"]
    assert {e.origin for e in entries.values()} == {"agents_md"}
    in_src = matching_sops(store, ["src/app.py"])
    assert [s.sop_id for s in in_src] == ["AGENTS.md", "src/AGENTS.md"]
    assert in_src[1].overrides == ["AGENTS.md"]
    assert "Takes precedence over AGENTS.md" in in_src[1].parent
    assert [s.sop_id for s in matching_sops(store, ["docs/a.md"])] == ["AGENTS.md"]


def test_cursor_globs_that_are_not_yaml_and_copilot_apply_to_are_read(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = _repo(
        tmp_path,
        {
            ".cursor/rules/ts.mdc": "---\ndescription: TS\nglobs: *.ts, src/**/*.{tsx,jsx}\n"
            "alwaysApply: false\nseverity: error\n---\n# TS\n\nNo any.\n",
            ".cursor/rules/ask.mdc": "---\ndescription: Ask first\n---\nAsk before deleting.\n",
            ".github/instructions/py.instructions.md": '---\napplyTo: "**/*.py"\n---\nShort.\n',
            ".github/copilot-instructions.md": "Be kind.\n",
        },
    )
    assert sync_sources(store, repo).failed == []
    entries = {e.sop_id: e for e in list_sops(store)}
    ts = entries[".cursor/rules/ts.mdc"]
    assert (ts.applies_to, ts.severity, ts.origin) == (
        ["*.ts", "src/**/*.jsx", "src/**/*.tsx"],
        "error",
        "cursor_rules",
    )
    # Cursor gives a rule without globs only when its agent asks: every file, at info.
    assert (
        entries[".cursor/rules/ask.mdc"].applies_to,
        entries[".cursor/rules/ask.mdc"].severity,
    ) == (
        ["**"],
        "info",
    )
    assert entries[".github/instructions/py.instructions.md"].applies_to == ["**/*.py"]
    assert entries[".github/copilot-instructions.md"].applies_to == ["**"]
    assert show_sop(store, ".cursor/rules/ts.mdc").summary == "TS"


def test_import_tokens_skip_code_and_emails() -> None:
    text = "Mail me@example.com, see @a.md.\n`@b.md`\n```\n@c.md\n```\n(@d/e.md)"
    assert import_tokens(text) == ["a.md", "d/e.md"]


def test_only_the_configured_kinds_are_read_and_a_dropped_kind_is_removed(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, {"AGENTS.md": "# A\n\nText.\n", "CLAUDE.md": "# C\n\nText.\n"})
    assert sync_sources(store, repo, ["agents_md", "claude_md"]).added == ["AGENTS.md", "CLAUDE.md"]
    report = sync_sources(store, repo, ["agents_md"])
    assert (report.skipped, report.removed) == (["AGENTS.md"], ["CLAUDE.md"])


def test_the_config_names_every_kind_the_table_has() -> None:
    from semspec.core.config.models import RULE_FILE_KINDS
    from semspec.knowledge.sources.rule_kinds import RULE_KINDS

    assert set(RULE_FILE_KINDS) == set(RULE_KINDS)


@pytest.mark.slow  # a third-party repository's whole AGENTS.md
def test_a_real_agents_md_of_a_third_party_repository_is_read_and_cut_by_the_budget(
    tmp_path: Path,
) -> None:
    """Temporal's Core SDK (installed with temporalio) ships its own AGENTS.md, written by
    people who never heard of semspec: it is read whole in a roomy window, in part in a tight
    one, and left out in a tighter one, and ``review context`` says which."""
    import json
    import shutil

    import temporalio
    from typer.testing import CliRunner

    from semspec.cli.app import app

    source = Path(temporalio.__file__).parent / "bridge" / "sdk-core"
    repo = tmp_path / "sdk-core"
    shutil.copytree(source, repo)
    git = pygit2.init_repository(str(repo))
    git.index.add_all()
    git.index.write()
    rust = next(p for p in sorted(git.index, key=lambda e: e.path) if p.path.endswith(".rs")).path

    def run(*args: str) -> dict[str, object]:
        done = CliRunner().invoke(app, ["--repo", str(repo), *args, "--json"])
        assert done.exit_code == 0, done.output
        result: dict[str, object] = json.loads(done.stdout)
        return result

    synced = run("sources", "sync")
    assert synced["added"] == ["AGENTS.md"] and synced["failed"] == []
    rules = {window: run("review", "context", "-f", rust, "--window", window)["rules"]
             for window in ("32000", "11800", "10000")}  # fmt: skip
    given = {w: [(r["rule_id"], r["given"]) for r in rs] for w, rs in rules.items()}  # type: ignore[attr-defined]
    assert given == {
        "32000": [("AGENTS.md", "full")],
        "11800": [("AGENTS.md", "cut")],
        "10000": [("AGENTS.md", "left_out")],
    }
    table = CliRunner().invoke(
        app, ["--repo", str(repo), "review", "context", "-f", rust, "--window", "11800"]
    )
    assert "rules for these files" in table.stdout
    assert re.search(r"AGENTS\.md\s+agents_md\s+warning\s+cut\s+\d+/10", table.stdout)


@pytest.mark.parametrize(
    ("front", "globs", "description"),
    [
        # Shapes seen in published .mdc files: empty keys, unquoted globs starting with
        # ``**`` (a YAML alias), flow lists, and keys nested under another tool's section.
        ("description: \nglobs: \nalwaysApply: false", [], None),
        (
            "globs: **/agent/*.md,**/releases/*/a.md\nalwaysApply: false",
            ["**/agent/*.md", "**/releases/*/a.md"],
            None,
        ),
        ('description: TS\nglobs: ["src/**/*.ts"]', ["src/**/*.ts"], "TS"),
        ("tools:\n  cursor:\n    globs:\n      - 'lib/**'\nname: x", [], None),
        ("globs:\n  - 'a/**'\n  - \"b/*.py\"", ["a/**", "b/*.py"], None),
    ],
)
def test_front_matter_of_real_shapes_is_read_without_yaml(
    front: str, globs: list[str], description: str | None
) -> None:
    from semspec.knowledge.sources.rule_front_matter import text_value

    meta, body = split_rule_front_matter(f"---\n{front}\n---\n# Body\n")
    assert glob_list(meta, "globs") == globs
    assert text_value(meta, "description") == description
    assert body == "# Body\n"


def test_the_knowledge_page_shows_each_rules_origin(store: GraphStore, tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {"src/AGENTS.md": "# S\n\nText.\n", "CLAUDE.md": "# C\n\n@a.md\n", "a.md": "A.\n"},
    )
    sync_sources(store, repo)
    html = render_knowledge(store, repo)
    assert 'data-sop-id="src/AGENTS.md" data-severity="warning" data-matches="1"' in html
    assert 'data-origin="agents_md"' in html
    assert "(claude_md; imports a.md)" in html


def test_a_rule_file_deleted_from_the_working_tree_is_removed(
    store: GraphStore, tmp_path: Path
) -> None:
    repo = _repo(tmp_path, {"AGENTS.md": "# A\n\nText.\n", "src/AGENTS.md": "# S\n\nText.\n"})
    sync_sources(store, repo)
    (repo / "src" / "AGENTS.md").unlink()  # still in git's index
    report = sync_sources(store, repo)
    assert (report.removed, report.failed) == (["src/AGENTS.md"], [])
