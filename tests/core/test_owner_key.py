"""The stack owner's signing key: created private, never overwritten, refused when exposed."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from semspec.core.config.models import SecurityConfig, SemspecConfig
from semspec.core.owner_key import (
    KEY_FILE,
    OwnerKey,
    OwnerKeyError,
    canonical,
    load,
    load_or_create,
    owner_key_path,
    verify,
)


def test_a_new_key_file_is_private_to_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "run" / KEY_FILE
    load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == [KEY_FILE]  # no temp file left


def test_an_existing_key_is_loaded_not_replaced(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    first = load_or_create(path)
    before = path.read_bytes()
    again = load_or_create(path)
    assert again.public_key == first.public_key
    assert path.read_bytes() == before


def test_a_key_others_may_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    load_or_create(path)
    path.chmod(0o644)
    with pytest.raises(OwnerKeyError) as caught:
        load_or_create(path)
    assert str(path) in caught.value.message and "0644" in caught.value.message
    assert caught.value.hint == f"make it a regular file only you can read: `chmod 600 {path}`"


def test_a_symlinked_key_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.key"
    load_or_create(real)
    link = tmp_path / KEY_FILE
    link.symlink_to(real)
    with pytest.raises(OwnerKeyError, match="symbolic link"):
        load(link)
    with pytest.raises(OwnerKeyError, match="symbolic link"):
        load_or_create(link)


def test_a_key_path_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / KEY_FILE
    os.mkfifo(fifo, 0o600)
    with pytest.raises(OwnerKeyError, match="not a regular file"):
        load(fifo)


def test_a_file_that_is_no_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"not a key\n")
    os.close(fd)
    with pytest.raises(OwnerKeyError, match="not a PEM private key"):
        load(path)


def test_the_key_lives_in_the_run_folder_unless_the_config_names_one(tmp_path: Path) -> None:
    assert owner_key_path(SemspecConfig(), tmp_path) == tmp_path / ".semspec" / "run" / KEY_FILE
    shared = SemspecConfig(security=SecurityConfig(owner_key="../shared/owner.key"))
    assert owner_key_path(shared, tmp_path) == tmp_path / "../shared/owner.key"


def test_a_signature_verifies_only_for_its_purpose_fields_and_key() -> None:
    owner, other = OwnerKey.generate(), OwnerKey.generate()
    fields = {"task_id": "t1", "ratio": 0.5, "timeout": 600}
    signature = owner.sign("p", fields)
    assert verify(owner.public_key, signature, "p", fields)
    assert verify(owner.public_key, signature, "p", {**fields, "timeout": 600.0})
    assert not verify(owner.public_key, signature, "q", fields)
    assert not verify(owner.public_key, signature, "p", {**fields, "task_id": "t2"})
    assert not verify(other.public_key, signature, "p", fields)
    assert not verify(owner.public_key, "", "p", fields)
    assert not verify(owner.public_key, "not base64!", "p", fields)
    assert not verify("", signature, "p", fields)


def test_canonical_json_sorts_keys_and_writes_integral_floats_as_integers() -> None:
    assert canonical({"b": [1.0, 2.5], "a": {"y": 1, "x": None}}) == (
        '{"a":{"x":null,"y":1},"b":[1,2.5]}'
    )
