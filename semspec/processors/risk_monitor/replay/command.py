"""What ``semspec monitor replay`` does with its files, apart from printing."""

from __future__ import annotations

from pathlib import Path

from semspec.core.config.models import RiskConfig
from semspec.model.pricing import Price, price_of
from semspec.model.registry import load_registry
from semspec.processors.risk_monitor.replay.backtest import RunReport, backtest
from semspec.processors.risk_monitor.replay.chat_log import Pricer
from semspec.processors.risk_monitor.replay.files import read_runs
from semspec.processors.risk_monitor.replay.runs import ReplayFileError


def replay_files(
    paths: list[Path], risk: RiskConfig, pricer: Pricer
) -> tuple[list[RunReport], list[ReplayFileError]]:
    """A report per run recorded in ``paths`` and an error per file that could not be read."""
    reports: list[RunReport] = []
    errors: list[ReplayFileError] = []
    for path in paths:
        try:
            runs = read_runs(path, pricer)
        except ReplayFileError as exc:
            errors.append(exc)
            continue
        reports.extend(backtest(run, risk) for run in runs)
    return reports, errors


def registry_pricer(repo: Path | None) -> Pricer:
    """Prices from the model registry (with ``repo``'s own entries); None for unknown models."""
    registry = load_registry(repo)

    def price(model: str) -> Price | None:
        return price_of(registry.get(model)) if model in registry else None

    return price
