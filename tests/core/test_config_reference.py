"""The generated config reference stays in step with the config models."""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.reference import render_reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_docs_configuration_md_matches_the_config_models() -> None:
    assert DOC.read_text(encoding="utf-8") == render_reference(), (
        "regenerate with `semspec config reference > docs/configuration.md`"
    )


def test_every_config_key_has_a_description() -> None:
    undocumented = [line for line in render_reference().splitlines() if line.endswith("|  |")]
    assert undocumented == []
