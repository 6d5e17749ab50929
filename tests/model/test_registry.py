"""The model registry: shipped profiles, per-repository overrides, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from semspec.cli.app import app
from semspec.core.errors import ConfigError, NotFoundError
from semspec.model.registry import DEFAULT_MODELS_PATH, load_registry


def write_override(repo: Path, text: str) -> Path:
    path = repo / ".semspec" / "models.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_registry_covers_the_common_model_families() -> None:
    registry = load_registry()
    for ident in ("gpt-4o", "gpt-4.1", "o3", "claude-sonnet-4-5", "claude-opus-4-1"):
        assert ident in registry
    for ident in ("claude-haiku-4-5", "qwen2.5-coder-7b", "qwen2.5-coder-32b", "scripted"):
        assert ident in registry
    assert "llama3.1-8b" in registry
    assert "deepseek-coder-v2-lite" in registry


def test_every_shipped_number_has_a_source_comment() -> None:
    numbers = ("context_window:", "sweet_spot:", "effective_context:", "max_output_tokens:")
    lines = DEFAULT_MODELS_PATH.read_text(encoding="utf-8").splitlines()
    in_scripted = False
    for line in lines:
        in_scripted = in_scripted or line.strip() == "scripted:"
        if not in_scripted and line.strip().startswith(numbers):
            assert "#" in line, f"no source comment on: {line.strip()}"


def test_gpt_4o_profile_matches_the_vendor_documentation() -> None:
    spec = load_registry().get("gpt-4o")
    assert spec.provider == "openai"
    assert spec.tokenizer == "o200k_base"
    assert spec.context.context_window == 128_000
    assert spec.context.max_output_tokens == 16_384
    assert spec.endpoint.api_key_env == "OPENAI_API_KEY"


def test_override_changes_one_field_and_keeps_the_rest(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    context: {sweet_spot: 30000}\n")
    spec = load_registry(tmp_path).get("gpt-4o")
    assert spec.context.sweet_spot == 30_000
    assert spec.context.context_window == 128_000
    assert spec.cost is not None and spec.cost.input_per_1m == 2.50


def test_override_adds_a_new_local_model(tmp_path: Path) -> None:
    write_override(
        tmp_path,
        """\
models:
  my-vllm:
    provider: openai-compatible
    api_model: org/model
    endpoint: {base_url: "http://127.0.0.1:8000/v1"}
    capabilities: [developer]
    context:
      context_window: 16000
      effective_context: 12000
      sweet_spot: 8000
      system_prompt_overhead: 1000
      recommended_max_file_tokens: 3000
""",
    )
    registry = load_registry(tmp_path)
    spec = registry.get("my-vllm")
    assert spec.wire_name == "org/model"
    assert spec.cost is None
    assert [s.id for s in registry.for_role("developer")].count("my-vllm") == 1
    assert "my-vllm" not in [s.id for s in registry.for_role("reviewer")]


def test_override_with_null_removes_a_shipped_model(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  o3: null\n")
    assert "o3" not in load_registry(tmp_path)


def test_bad_field_names_the_override_file_field_and_line(tmp_path: Path) -> None:
    path = write_override(tmp_path, "models:\n  gpt-4o:\n    context:\n      sweet_spot: lots\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.path == str(path)
    assert caught.value.field == "models.gpt-4o.context.sweet_spot"
    assert caught.value.line == 4


def test_profile_numbers_out_of_order_are_rejected(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    context: {sweet_spot: 500000}\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert "sweet_spot must not exceed effective_context" in str(caught.value)
    assert caught.value.field == "models.gpt-4o.context"


def test_unknown_key_is_reported_with_its_field(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    temprature: 0.2\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.field == "models.gpt-4o.temprature"
    assert "unknown key" in str(caught.value)


def test_new_model_missing_its_context_is_reported(tmp_path: Path) -> None:
    path = write_override(
        tmp_path, "models:\n  half:\n    provider: openai\n    capabilities: [developer]\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.path == str(path)
    assert caught.value.field == "models.half.context"


def test_an_api_key_pasted_instead_of_a_variable_name_is_refused(tmp_path: Path) -> None:
    write_override(
        tmp_path, "models:\n  gpt-4o:\n    endpoint: {api_key_env: sk-abcdefghijklmnop}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.field == "models.gpt-4o.endpoint.api_key_env"
    assert "sk-abcdefghijklmnop" not in str(caught.value)


def test_invalid_yaml_reports_the_line(tmp_path: Path) -> None:
    path = write_override(tmp_path, "models:\n  gpt-4o: [unclosed\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.path == str(path)
    assert caught.value.line is not None


def test_a_file_without_a_models_mapping_is_refused(tmp_path: Path) -> None:
    write_override(tmp_path, "- gpt-4o\n")
    with pytest.raises(ConfigError, match="models"):
        load_registry(tmp_path)


def test_unknown_model_id_suggests_near_matches() -> None:
    with pytest.raises(NotFoundError) as caught:
        load_registry().get("gpt4o")
    assert caught.value.ident == "gpt4o"
    assert caught.value.hint is not None and "gpt-4o" in caught.value.hint


def test_models_list_prints_json_of_the_effective_registry(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  o3: null\n")
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "models", "list", "--json"])
    assert result.exit_code == 0, result.output
    ids = [entry["id"] for entry in json.loads(result.stdout)]
    assert "gpt-4o" in ids
    assert "o3" not in ids


def test_models_list_filters_by_role(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["--repo", str(tmp_path), "models", "list", "--role", "reviewer", "--json"]
    )
    assert result.exit_code == 0, result.output
    entries = json.loads(result.stdout)
    assert entries and all("reviewer" in entry["capabilities"] for entry in entries)


def test_cli_reports_a_bad_registry_file_and_exits_2(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    context: {sweet_spot: many}\n")
    done = subprocess.run(
        [sys.executable, "-m", "semspec", "--repo", str(tmp_path), "models", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "models.gpt-4o.context.sweet_spot" in done.stderr
    assert done.stderr.startswith("error: ")


def test_every_shipped_price_names_its_source_and_date() -> None:
    priced = [spec for spec in load_registry() if spec.cost is not None]
    assert priced
    for spec in priced:
        assert spec.cost is not None
        assert spec.cost.source, f"{spec.id}: price without a source"
        assert spec.cost.as_of is not None, f"{spec.id}: price without an as_of date"


def test_shipped_vendor_models_carry_their_cache_prices() -> None:
    registry = load_registry()
    for ident in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o3", "o4-mini"):
        cost = registry.get(ident).cost
        assert cost is not None and cost.cached_input_per_1m is not None
        assert cost.cached_input_per_1m < cost.input_per_1m, ident
    for ident in ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"):
        cost = registry.get(ident).cost
        assert cost is not None
        # Anthropic: a cache read costs a tenth of input, a 5-minute cache write a quarter more.
        assert cost.cached_input_per_1m == pytest.approx(cost.input_per_1m * 0.1), ident
        assert cost.cache_write_per_1m == pytest.approx(cost.input_per_1m * 1.25), ident


def test_an_overridden_price_without_a_source_loses_the_shipped_source_and_date(
    tmp_path: Path,
) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    cost: {input_per_1m: 1.0}\n")
    cost = load_registry(tmp_path).get("gpt-4o").cost
    assert cost is not None
    assert (cost.input_per_1m, cost.output_per_1m) == (1.0, 10.0)
    assert cost.source is None and cost.as_of is None


def test_an_overridden_price_keeps_the_source_and_date_it_names(tmp_path: Path) -> None:
    write_override(
        tmp_path,
        "models:\n  gpt-4o:\n    cost:\n      input_per_1m: 1.0\n"
        "      source: our contract\n      as_of: 2026-01-31\n",
    )
    cost = load_registry(tmp_path).get("gpt-4o").cost
    assert cost is not None
    assert (cost.source, str(cost.as_of)) == ("our contract", "2026-01-31")


def test_a_negative_cached_price_is_refused_at_its_line(tmp_path: Path) -> None:
    path = write_override(
        tmp_path, "models:\n  gpt-4o:\n    cost:\n      cached_input_per_1m: -1\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.field == "models.gpt-4o.cost.cached_input_per_1m"
    assert (caught.value.path, caught.value.line) == (str(path), 4)


def test_a_price_date_that_is_not_a_date_is_refused(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    cost: {as_of: last spring}\n")
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.field == "models.gpt-4o.cost.as_of"


def test_models_list_shows_cached_prices_dates_and_sources(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["--repo", str(tmp_path), "models", "list"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    gpt_4o = next(line for line in result.stdout.splitlines() if " gpt-4o " in line)
    assert "$2.5 / $1.25 / $10" in gpt_4o
    assert "2026-11-26" in gpt_4o
    assert "price source https://platform.openai.com/docs/pricing: gpt-4.1," in result.stdout


def test_models_list_says_when_a_price_has_no_recorded_date_or_source(tmp_path: Path) -> None:
    write_override(tmp_path, "models:\n  gpt-4o:\n    cost: {input_per_1m: 1.0}\n")
    result = CliRunner().invoke(
        app, ["--repo", str(tmp_path), "models", "list"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    gpt_4o = next(line for line in result.stdout.splitlines() if " gpt-4o " in line)
    assert "not recorded" in gpt_4o
    assert "price source not recorded: gpt-4o" in result.stdout


def test_models_show_prints_each_price_with_its_source_and_date(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "models", "show", "claude-opus-4-1"])
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert "cached input $1.5 per 1M tokens" in lines
    assert "cache write $18.75 per 1M tokens" in lines
    assert "price source https://platform.claude.com/docs/en/about-claude/pricing" in lines
    assert "price as of 2026-11-26" in lines


def test_models_show_json_carries_the_cost_fields(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["--repo", str(tmp_path), "models", "show", "gpt-4o-mini", "--json"]
    )
    assert result.exit_code == 0, result.output
    cost = json.loads(result.stdout)["cost"]
    assert cost["cached_input_per_1m"] == 0.075
    assert cost["source"] == "https://platform.openai.com/docs/pricing"
    assert cost["as_of"] == "2026-11-26"


def test_models_show_of_a_model_without_price_says_it_is_unknown(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "models", "show", "llama3.1-8b"])
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert "price unknown (a task with a dollar budget escalates before using it)" in lines


def test_the_price_override_example_of_the_costs_page_loads(tmp_path: Path) -> None:
    page = (DEFAULT_MODELS_PATH.parent.parent / "docs" / "costs.md").read_text(encoding="utf-8")
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    write_override(tmp_path, example)
    registry = load_registry(tmp_path)
    gpt_4o, qwen = registry.get("gpt-4o").cost, registry.get("qwen2.5-coder-7b").cost
    assert gpt_4o is not None and gpt_4o.source == "our enterprise agreement"
    assert qwen is not None and (qwen.input_per_1m, qwen.source) == (0.0, "self-hosted")


def test_models_list_json_carries_each_price_with_its_source_and_date(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--repo", str(tmp_path), "models", "list", "--json"])
    assert result.exit_code == 0, result.output
    costs = {entry["id"]: entry["cost"] for entry in json.loads(result.stdout)}
    assert costs["claude-haiku-4-5"] == {
        "input_per_1m": 1.0,
        "output_per_1m": 5.0,
        "cached_input_per_1m": 0.1,
        "cache_write_per_1m": 1.25,
        "source": "https://platform.claude.com/docs/en/about-claude/pricing",
        "as_of": "2026-11-26",
    }
    assert costs["llama3.1-8b"] is None
