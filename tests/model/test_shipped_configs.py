"""The shipped configs/ folder is found in a checkout and travels inside a built wheel."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from semspec.model.shipped_configs import INSTALLED_RELATIVE, configs_dir

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_uses_its_own_configs_folder() -> None:
    assert configs_dir() == ROOT / "configs"
    assert (configs_dir() / "models.yaml").is_file()


def test_the_first_data_directory_holding_configs_wins(tmp_path: Path) -> None:
    empty, user = tmp_path / "prefix", tmp_path / "user"
    (user / INSTALLED_RELATIVE).mkdir(parents=True)
    site_packages = tmp_path / "site-packages"  # as in an installed wheel: no pyproject.toml
    (site_packages / "configs").mkdir(parents=True)  # someone else's folder of that name
    assert configs_dir([empty, user], site_packages) == user / INSTALLED_RELATIVE
    # Nowhere found: the environment's own location, so errors name where it should be.
    assert configs_dir([empty], site_packages) == empty / INSTALLED_RELATIVE


def test_a_package_installed_under_a_prefix_finds_the_configs_beside_it(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    site_packages = prefix / "lib" / "python3.11" / "site-packages"
    site_packages.mkdir(parents=True)
    (prefix / INSTALLED_RELATIVE).mkdir(parents=True)
    assert configs_dir(source_root=site_packages) == prefix / INSTALLED_RELATIVE


def test_a_built_wheel_carries_the_configs_as_data_files(tmp_path: Path) -> None:
    # Only what the build reads: the checkout may hold a virtualenv and caches.
    source = tmp_path / "src"
    keep = ("semspec", "configs")
    for name in keep:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if built.returncode != 0 and "No module named pip" in built.stderr:
        pytest.skip("pip is not available in this interpreter")
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("semspec-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.data/data/share/semspec/configs"
    expected = {"models.yaml"} | {f"gates/{p.name}" for p in (ROOT / "configs" / "gates").iterdir()}
    assert {f"{data}/{name}" for name in expected} <= names
    # One import name only: generic top-level names (agents, model, workflow…) collide with other
    # distributions and with users' own code (ADR 0003).
    top_level = {n.split("/")[0] for n in names} - {
        n.split("/")[0] for n in names if ".dist-info/" in n or ".data/" in n
    }
    assert top_level == {"semspec"}
