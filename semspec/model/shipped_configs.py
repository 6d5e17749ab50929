"""Where the ``configs/`` data folder shipped with semspec is.

In a source checkout or an editable install it sits beside the packages. A built wheel carries it
as data files, installed under ``<prefix>/share/semspec/configs``: the environment's data
directory, the user base for ``pip install --user``, the prefix the package was installed
under (``--prefix``, or system site-packages seen from a virtualenv), or the base Python's.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from pathlib import Path

_SOURCE_ROOT = Path(__file__).resolve().parents[2]
INSTALLED_RELATIVE = Path("share") / "semspec" / "configs"


def configs_dir(data_dirs: list[Path] | None = None, source_root: Path = _SOURCE_ROOT) -> Path:
    """The shipped ``configs/`` folder; the installed location when none is found, so an error
    about a missing file names the place the wheel should have put it."""
    # A checkout is recognised by its pyproject.toml, not by a bare "configs" folder that some
    # other package might have dropped into site-packages.
    if (source_root / "pyproject.toml").is_file() and (source_root / "configs").is_dir():
        return source_root / "configs"
    if data_dirs is None:
        data_dirs = _data_dirs(source_root)
    candidates = [base / INSTALLED_RELATIVE for base in data_dirs]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def _data_dirs(source_root: Path) -> list[Path]:
    """Where an installer may have put data files, most likely first."""
    dirs = [Path(sysconfig.get_path("data")), Path(site.getuserbase())]
    # The prefix the package itself was installed under (``pip install --prefix``, or system
    # site-packages seen from a virtualenv): <prefix>/lib/pythonX.Y/site-packages.
    if source_root.name in ("site-packages", "dist-packages") and len(source_root.parents) > 2:
        dirs.append(source_root.parents[2])
    dirs.append(Path(sys.base_prefix))
    return list(dict.fromkeys(dirs))
