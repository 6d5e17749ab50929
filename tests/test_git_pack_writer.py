"""Snapshot objects written as one pack: git itself reads and verifies what we write."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pygit2

from semspec.workflow.git.pack_writer import (
    BLOB,
    COMMIT,
    TREE,
    PendingObjects,
    index_bytes,
    object_id,
    pack_bytes,
)
from semspec.workflow.git.snapshot import snapshot_branch
from semspec.workflow.git.worktree import ensure_worktree


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def test_object_ids_match_the_ones_git_computes(tmp_path: Path) -> None:
    data = b"hello\n"
    (tmp_path / "f").write_bytes(data)
    assert object_id(BLOB, data).hex() == git(tmp_path, "hash-object", "f").strip()
    assert object_id(TREE, b"").hex() == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_a_written_pack_passes_git_verify_pack_and_fsck(git_repo: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    pending = PendingObjects()
    blob = pending.add(BLOB, b"print('packed')\n" * 50)  # small: stored, not compressed
    big = pending.add(BLOB, b"".join(b"line %d\n" % n for n in range(5_000)))  # compressed
    tree = pending.add(TREE, b"100644 big.txt\0" + big + b"100644 packed.py\0" + blob)
    head = repo.head.target
    text = f"tree {tree.hex()}\nparent {head}\nauthor a <a@x> 0 +0000\ncommitter a <a@x> 0 +0000\n"
    commit = pending.add(COMMIT, (text + "\npacked\n").encode())
    assert pending.add(BLOB, b"print('packed')\n" * 50) == blob and len(pending) == 4
    pack_dir = git_repo / ".git" / "objects" / "pack"
    name = pending.write(pack_dir)
    assert name is not None and len(pending) == 0
    listing = git(git_repo, "verify-pack", "-v", str(pack_dir / f"{name}.idx"))
    assert {blob.hex(), big.hex(), tree.hex(), commit.hex()} <= {
        line.split(" ")[0] for line in listing.splitlines()
    }
    git(git_repo, "branch", "packed", commit.hex())
    git(git_repo, "fsck", "--full", "--strict")
    assert git(git_repo, "show", "packed:packed.py") == "print('packed')\n" * 50
    assert git(git_repo, "show", "packed:big.txt").splitlines()[-1] == "line 4999"
    assert PendingObjects().write(pack_dir) is None  # nothing queued, nothing written


def test_a_half_written_pack_left_by_a_crash_is_written_again(git_repo: Path) -> None:
    pending = PendingObjects()
    blob = pending.add(BLOB, b"survives a torn write\n")
    pack_dir = git_repo / ".git" / "objects" / "pack"
    pack, _ = pack_bytes({blob: (BLOB, b"survives a torn write\n")})
    torn = pack_dir / f"pack-{pack[-20:].hex()}.pack"
    torn.write_bytes(pack[: len(pack) // 2])
    name = pending.write(pack_dir)
    assert torn.name == f"{name}.pack" and torn.read_bytes() == pack
    assert git(git_repo, "cat-file", "-p", blob.hex()) == "survives a torn write\n"


def test_offsets_past_two_gib_go_to_the_large_offset_table() -> None:
    small, large = 12, 2**31 + 5
    entries = [(b"\x01" * 20, 7, small), (b"\x02" * 20, 9, large)]
    index = index_bytes(entries, b"\xaa" * 20)
    count_offset = 8 + 256 * 4 + 2 * 20 + 2 * 4
    offsets = struct.unpack(">2I", index[count_offset : count_offset + 8])
    assert offsets == (small, 0x80000000)
    assert struct.unpack(">Q", index[count_offset + 8 : count_offset + 16]) == (large,)
    assert index[count_offset + 16 : count_offset + 36] == b"\xaa" * 20
    assert len(index) == count_offset + 16 + 40


def test_snapshot_branch_writes_one_pack_and_a_retry_returns_the_same_commit(
    git_repo: Path, tmp_path: Path
) -> None:
    info = ensure_worktree(git_repo, "packed", "main", tmp_path / "wt")
    wt = Path(info.path)
    (wt / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n")
    (wt / "docs").mkdir()
    (wt / "docs" / "notes.md").write_text("notes\n")
    pack_dir = git_repo / ".git" / "objects" / "pack"
    packs_before = set(pack_dir.glob("*.idx"))
    branch = "semspec/checkpoint/packed/1"
    changed = ["calc.py", "docs/notes.md"]
    commit = snapshot_branch(git_repo, wt, info.base_commit, info.branch, changed, "cp 1", branch)
    assert len(set(pack_dir.glob("*.idx")) - packs_before) == 1
    # A retried checkpoint finds its branch and writes nothing more.
    again = snapshot_branch(git_repo, wt, info.base_commit, info.branch, changed, "cp 1", branch)
    assert again == commit and len(set(pack_dir.glob("*.idx")) - packs_before) == 1
    assert git(git_repo, "show", f"{branch}:docs/notes.md") == "notes\n"
    assert git(git_repo, "rev-parse", f"{branch}^") == git(git_repo, "rev-parse", info.branch)
    git(git_repo, "fsck", "--full", "--strict")
    # Opened through the linked worktree, objects still go to the shared object store.
    (wt / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    second = snapshot_branch(
        wt, wt, info.base_commit, info.branch, ["calc.py"], "cp 2", "semspec/checkpoint/packed/2"
    )
    assert git(git_repo, "show", f"{second}:calc.py") == "def add(a, b):\n    return b + a\n"
