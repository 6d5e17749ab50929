"""The stack owner's signing key: who may start tasks, answer escalations and send risk signals.

The embedded Temporal dev server lets any local user start workflows and send updates and
signals, so the task workflow checks who speaks itself (ADR 0004): every start, human answer and
risk signal carries an Ed25519 signature made with a key only the stack's owner can read, and
the workflow verifies it against the public key its input names.

The key is a PEM file (``owner.key`` in the run folder unless ``security.owner_key`` names
another), created 0600 and never overwritten. A file others can read, or one that is not a
regular file (a symlink, a pipe), is refused: ``OwnerKeyError`` names it and the fix.

What is signed is a canonical JSON text of ``purpose`` plus named fields (sorted keys, no
spaces, integral floats written as integers so ``600`` and ``600.0`` sign alike); ``verify`` is
pure computation, safe inside workflow code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from semspec.core.config.models import SemspecConfig
from semspec.core.errors import SemspecError
from semspec.core.run_folder import run_dir_of

KEY_FILE = "owner.key"


class OwnerKeyError(SemspecError):
    """The owner key file cannot be used (unsafe mode, not a regular file, unreadable)."""


def canonical(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, integral floats as integers."""
    return json.dumps(_normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON."""
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def _normal(value: Any) -> Any:
    # A float that a data converter may hand back as an int (or the reverse) must sign alike.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value


def _message(purpose: str, fields: Mapping[str, Any]) -> bytes:
    return canonical({"purpose": purpose, "fields": dict(fields)}).encode("utf-8")


def verify(public_key_b64: str, signature: str, purpose: str, fields: Mapping[str, Any]) -> bool:
    """Whether ``signature`` is the owner's over ``purpose`` and ``fields``; never raises."""
    if not public_key_b64 or not signature:
        return False
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64, validate=True))
        key.verify(base64.b64decode(signature, validate=True), _message(purpose, fields))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


@dataclass(frozen=True)
class OwnerKey:
    """The owner's private key; ``public_key`` is what workflow inputs carry."""

    private: Ed25519PrivateKey

    @classmethod
    def generate(cls) -> OwnerKey:
        """A fresh key held in memory only."""
        return cls(Ed25519PrivateKey.generate())

    @property
    def public_key(self) -> str:
        """The raw public key, base64."""
        raw = self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        return base64.b64encode(raw).decode("ascii")

    def sign(self, purpose: str, fields: Mapping[str, Any]) -> str:
        """A base64 signature over ``purpose`` and ``fields`` (see ``verify``)."""
        return base64.b64encode(self.private.sign(_message(purpose, fields))).decode("ascii")

    def pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def owner_key_path(config: SemspecConfig, repo: Path) -> Path:
    """Where the stack's key lives: ``security.owner_key`` (relative to the repo), else the
    run folder's ``owner.key``."""
    configured = config.security.owner_key
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else repo / path
    return run_dir_of(config, repo) / KEY_FILE


def load_owner_key(config: SemspecConfig, repo: Path) -> OwnerKey:
    """The stack's key, created on first use."""
    return load_or_create(owner_key_path(config, repo))


def load_or_create(path: Path) -> OwnerKey:
    """Read the key at ``path``, or create it (0600) when there is none; never overwrites."""
    try:
        return load(path)
    except FileNotFoundError:
        pass
    key = OwnerKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # Written under a private name, then linked into place: link() never replaces a file, so
    # of two processes creating the key at once one wins and the other reads the winner's
    # whole file, never half of it.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(key.pem())
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return load(path)
    finally:
        tmp.unlink(missing_ok=True)
    return key


def load(path: Path) -> OwnerKey:
    """Read the key at ``path``; ``FileNotFoundError`` when there is none.

    Refused (``OwnerKeyError``): a symlink or other non-regular file, a file group or others
    may read, and anything that is not an Ed25519 private key.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if os.path.islink(path):
            raise _unsafe(path, "is a symbolic link; the key must be a regular file") from None
        raise OwnerKeyError(f"cannot open the owner key {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _unsafe(path, "is not a regular file")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise _unsafe(path, f"may be read by other users (mode {mode:04o})")
        data = handle.read(64 * 1024)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise OwnerKeyError(
            f"the owner key {path} is not a PEM private key: {exc}",
            hint="remove it to let semspec create a new key (tasks signed with the old one "
            "can then no longer be answered)",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise OwnerKeyError(f"the owner key {path} is not an Ed25519 key")
    return OwnerKey(key)


def _unsafe(path: Path, why: str) -> OwnerKeyError:
    return OwnerKeyError(
        f"refusing the owner key {path}: it {why}",
        hint=f"make it a regular file only you can read: `chmod 600 {path}`",
    )
