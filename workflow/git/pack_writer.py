"""New git objects written together as one pack file and its index.

A loose object costs a file of its own (a temporary file, a link and an unlink); a snapshot
writes a handful of objects at once, so they go into a single pack instead. The index is
renamed into place last, and readers find packs through their index: either every object of
the snapshot is visible or none is, and a crash leaves at most an unreferenced temporary file.

The formats are git's pack version 2 and pack index version 2, for SHA-1 repositories.
"""

from __future__ import annotations

import hashlib
import os
import struct
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

    def write(self, pack_dir: Path) -> str | None:
        """Write the queued objects as ``pack-<checksum>.pack`` and ``.idx`` in ``pack_dir``.

        Returns the pack's name, or None when there was nothing to write.
        """
        if not self._objects:
            return None
        if not pack_dir.is_dir():
            pack_dir.mkdir(parents=True, exist_ok=True)
        pack, entries = pack_bytes(self._objects)
        checksum = pack[-20:]
        name = f"pack-{checksum.hex()}"
        # The pack is invisible until its index exists, so it is written in place; the index
        # goes through a temporary file so that no reader ever sees half of it.
        _write_pack(pack_dir / f"{name}.pack", pack)
        temporary = pack_dir / f"tmp_idx_{os.getpid()}_{checksum.hex()[:16]}"
        with open(temporary, "wb") as out:
            out.write(index_bytes(entries, checksum))
        os.replace(temporary, pack_dir / f"{name}.idx")
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
        entry = _entry_header(kind, len(data)) + zlib.compress(data)
        entries.append((oid, zlib.crc32(entry), len(body)))
        body += entry
    body += hashlib.sha1(body).digest()
    return bytes(body), entries


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


def _write_pack(path: Path, data: bytes) -> None:
    """Create the pack file, read-only as git writes them.

    A file of that name and size is this very pack (the name is its checksum); one of another
    size is what a crash left half written, and is written again.
    """
    for _ in range(2):
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        except FileExistsError:
            if path.stat().st_size == len(data):
                return
            path.unlink()
            continue
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        return
