"""New git objects written together as one pack file and its index.

A loose object costs a file of its own (a temporary file, a link and an unlink); a snapshot
writes a handful of objects at once, so they go into a single pack instead. Both files are
renamed into place, the index last, and readers find packs through their index: either every
object of the snapshot is visible or none is, and a crashed process leaves at most a temporary
file. Files are synced to disk only when asked (``durable``), as git does for loose objects.

The formats are git's pack version 2 and pack index version 2, for SHA-1 repositories.
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import zlib
from pathlib import Path

COMMIT, TREE, BLOB = 1, 2, 3
"""Pack object type codes."""
_TYPE_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob"}
_LARGE_OFFSET = 0x80000000


def object_id(kind: int, data: bytes) -> bytes:
    """The raw SHA-1 id git gives an object of ``kind`` holding ``data``."""
    digest = hashlib.sha1(b"%s %d\0" % (_TYPE_NAMES[kind], len(data)))
    digest.update(data)
    return digest.digest()


class PendingObjects:
    """Objects to write in one pack, each once.

    Callers add only what they believe is new (a blob after a failed lookup, the trees and
    commit a snapshot builds): a duplicate of an object stored elsewhere is harmless in git,
    and skipping the lookup saves the object database a rescan of its packs on every miss.
    """

    def __init__(self) -> None:
        self._objects: dict[bytes, tuple[int, bytes]] = {}

    def add(self, kind: int, data: bytes) -> bytes:
        """Queue an object; returns its raw id."""
        oid = object_id(kind, data)
        self._objects.setdefault(oid, (kind, data))
        return oid

    def __len__(self) -> int:
        return len(self._objects)

    def write(self, pack_dir: Path, *, durable: bool = False) -> str | None:
        """Write the queued objects as ``pack-<checksum>.pack`` and ``.idx`` in ``pack_dir``.

        ``durable`` syncs both files and the folder to disk before returning (what a repository
        that asks git to sync its objects wants). Returns the pack's name, or None when there was
        nothing to write.
        """
        if not self._objects:
            return None
        if not pack_dir.is_dir():
            pack_dir.mkdir(parents=True, exist_ok=True)
        pack, entries = pack_bytes(self._objects)
        checksum = pack[-20:]
        name = f"pack-{checksum.hex()}"
        # Each file goes through a temporary name and a rename, so a final name only ever holds
        # a complete file, and an identical pack written twice simply replaces itself. The
        # index goes last: readers find packs through their index.
        _publish(pack_dir, f"{name}.pack", pack, durable)
        _publish(pack_dir, f"{name}.idx", index_bytes(entries, checksum), durable)
        if durable:
            _sync_folder(pack_dir)
        self._objects.clear()
        return name


def _entry_header(kind: int, size: int) -> bytes:
    # Type in bits 4-6 of the first byte with the size's low 4 bits, then 7 bits a byte;
    # the high bit says another byte follows.
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def pack_bytes(
    objects: dict[bytes, tuple[int, bytes]],
) -> tuple[bytes, list[tuple[bytes, int, int]]]:
    """A version 2 pack of ``objects`` (no deltas) and, per object, (id, CRC-32, offset)."""
    body = bytearray(b"PACK")
    body += struct.pack(">II", 2, len(objects))
    entries = []
    for oid, (kind, data) in objects.items():
        entry = _entry_header(kind, len(data)) + _deflate(data)
        entries.append((oid, zlib.crc32(entry), len(body)))
        body += entry
    body += hashlib.sha1(body).digest()
    return bytes(body), entries


SMALL_OBJECT = 4_096
"""Objects under this size are stored without compression (zlib level 0)."""


def _deflate(data: bytes) -> bytes:
    # A snapshot's trees are mostly binary ids that barely compress, and checkpoint objects
    # are short-lived (``git gc`` recompresses any that are kept): for small objects zlib's
    # set-up and search cost more than the bytes they save, so they are only framed.
    if len(data) < SMALL_OBJECT:
        compressor = zlib.compressobj(0, zlib.DEFLATED, 15, 1)
    else:
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION)
    return compressor.compress(data) + compressor.flush()


def index_bytes(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """The version 2 index of a pack: fan-out table, sorted ids, CRCs, offsets, checksums."""
    ordered = sorted(entries)
    fanout = [0] * 256
    for oid, _, _ in ordered:
        fanout[oid[0]] += 1
    running = 0
    for first_byte in range(256):
        running += fanout[first_byte]
        fanout[first_byte] = running
    small: list[int] = []
    large: list[int] = []
    for _, _, offset in ordered:
        # Offsets past 2 GiB go to a table of 8-byte offsets, pointed at with the high bit.
        if offset < _LARGE_OFFSET:
            small.append(offset)
        else:
            small.append(_LARGE_OFFSET | len(large))
            large.append(offset)
    count = len(ordered)
    index = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    index += struct.pack(">256I", *fanout)
    index += b"".join(oid for oid, _, _ in ordered)
    index += struct.pack(f">{count}I", *(crc for _, crc, _ in ordered))
    index += struct.pack(f">{count}I", *small)
    index += struct.pack(f">{len(large)}Q", *large)
    index += pack_checksum
    index += hashlib.sha1(index).digest()
    return bytes(index)


def _publish(folder: Path, name: str, data: bytes, durable: bool) -> None:
    """Write ``data`` to a temporary file in ``folder``, then rename it to ``name``."""
    # Created read-only (as git creates packs) less the umask, like any file git writes.
    temporary = folder / f"tmp_pack_{os.getpid()}_{threading.get_ident()}_{name}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        handle = os.open(temporary, flags, 0o444)
    except FileExistsError:  # left by a crashed writer of this very process and thread id
        temporary.unlink()
        handle = os.open(temporary, flags, 0o444)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, folder / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _sync_folder(folder: Path) -> None:
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
