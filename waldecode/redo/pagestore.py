"""The page store: relation pages kept on disk while redo runs, never a whole relation in memory.

Owns where redone pages live: one sparse file per relation fork under a directory, block N at
byte N * BLCKSZ, as smgr (src/backend/storage/smgr/md.c) keeps a relation, but in one file however
large the relation is (the 1 GB segments are md.c's business, not ours), and beside it an index of
the blocks present (one bit per block), since a hole in a sparse file reads as zeros and a page of
zeros is a page too (PageIsNew).  Keyed by ``(spcOid, dbOid, relNumber)``, the fork number and the
block number, as a buffer tag is.  Hands pages (``bytearray``) to redo and takes them back.

Only the presence bitmaps of the relation forks in use are held in memory (one bit per block:
16 kB for a 1 GB fork) and a bounded number of open files; ``flush`` writes the bitmaps out so
that a store can be opened again (``PageStore(directory)``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from ..errors import WALError
from ..pg.relpath import fork_name
from ..wal.xlogrecord import BLCKSZ

_MAX_OPEN = 64


class _Fork:
    __slots__ = ("fd", "present", "dirty", "path")

    def __init__(self, fd: int, present: bytearray, path: Path):
        self.fd = fd
        self.present = present
        self.dirty = False
        self.path = path


class PageStore:
    """Pages by ``(locator, fork, blkno)`` in sparse files under ``directory`` (created if missing).

    ``read`` gives a copy of a present page or None; ``write`` stores one; ``truncate`` drops the
    blocks from a number on (smgrtruncate); ``blocks`` lists a fork's present blocks in order.
    """

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._open: OrderedDict[tuple, _Fork] = OrderedDict()

    def _name(self, locator: tuple, fork: int) -> Path:
        spc, db, rel = locator
        return self.directory / ("%u_%u_%u_%s" % (spc, db, rel, fork_name(fork)))

    def _fork(self, locator: tuple, fork: int, create: bool) -> _Fork | None:
        key = (tuple(locator), fork)
        f = self._open.get(key)
        if f is not None:
            self._open.move_to_end(key)
            return f
        path = self._name(locator, fork)
        if not create and not path.exists():
            return None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            mapfile = path.with_name(path.name + ".map")
            present = bytearray(mapfile.read_bytes()) if mapfile.exists() else bytearray()
        except OSError as e:
            raise WALError(f"cannot open the page store file: {e.strerror}", path=str(path), what="file") from None
        f = _Fork(fd, present, path)
        self._open[key] = f
        if len(self._open) > _MAX_OPEN:
            _key, old = self._open.popitem(last=False)
            self._close(old)
        return f

    def _close(self, f: _Fork) -> None:
        self._save(f)
        os.close(f.fd)

    def _save(self, f: _Fork) -> None:
        if f.dirty:
            tmp = f.path.with_name(f.path.name + ".map.tmp")
            tmp.write_bytes(f.present)
            os.replace(tmp, f.path.with_name(f.path.name + ".map"))
            f.dirty = False

    def has(self, locator: tuple, fork: int, blkno: int) -> bool:
        f = self._fork(locator, fork, False)
        if f is None:
            return False
        i = blkno >> 3
        return i < len(f.present) and bool(f.present[i] & (1 << (blkno & 7)))

    def read(self, locator: tuple, fork: int, blkno: int) -> bytearray | None:
        if not self.has(locator, fork, blkno):
            return None
        f = self._fork(locator, fork, False)
        data = os.pread(f.fd, BLCKSZ, blkno * BLCKSZ)
        if len(data) != BLCKSZ:
            raise WALError(f"block {blkno} is marked present but the file holds {len(data)} bytes of it",
                           path=str(f.path), what="page store file")
        return bytearray(data)

    def write(self, locator: tuple, fork: int, blkno: int, page) -> None:
        if len(page) != BLCKSZ:
            raise ValueError(f"a page is {BLCKSZ} bytes, not {len(page)}")
        f = self._fork(locator, fork, True)
        os.pwrite(f.fd, bytes(page), blkno * BLCKSZ)
        i = blkno >> 3
        if i >= len(f.present):
            f.present.extend(bytes(i + 1 - len(f.present)))
        bit = 1 << (blkno & 7)
        if not f.present[i] & bit:
            f.present[i] |= bit
            f.dirty = True

    def write_blocks(self, locator: tuple, fork: int, first: int, data) -> None:
        """Store the consecutive pages of ``data`` (a whole number of them) from block ``first`` on, in
        one write: how a relation file is copied in."""
        n, rest = divmod(len(data), BLCKSZ)
        if rest:
            raise ValueError(f"pages are {BLCKSZ} bytes: {len(data)} bytes are not a whole number of them")
        if not n:
            return
        f = self._fork(locator, fork, True)
        os.pwrite(f.fd, data, first * BLCKSZ)
        last = first + n - 1
        if (last >> 3) >= len(f.present):
            f.present.extend(bytes((last >> 3) + 1 - len(f.present)))
        present = f.present
        blkno = first
        while blkno <= last:  # bit by bit up to a byte boundary, then whole bytes
            if blkno & 7 == 0 and blkno + 7 <= last:
                stop = (last + 1) >> 3
                present[blkno >> 3:stop] = b"\xff" * (stop - (blkno >> 3))
                blkno = stop << 3
                continue
            present[blkno >> 3] |= 1 << (blkno & 7)
            blkno += 1
        f.dirty = True

    def truncate(self, locator: tuple, fork: int, nblocks: int) -> None:
        """smgrtruncate: the fork ends before block ``nblocks``."""
        f = self._fork(locator, fork, False)
        if f is None:
            return
        os.ftruncate(f.fd, nblocks * BLCKSZ)
        i = nblocks >> 3
        if i < len(f.present):
            f.present[i] &= (1 << (nblocks & 7)) - 1
            del f.present[i + 1:]
            f.dirty = True

    def blocks(self, locator: tuple, fork: int):
        """The present blocks of a fork, in order."""
        f = self._fork(locator, fork, False)
        if f is None:
            return
        for i, byte in enumerate(f.present):
            if byte:
                for b in range(8):
                    if byte >> b & 1:
                        yield i * 8 + b

    def relations(self) -> list[tuple[tuple, int]]:
        """``(locator, fork)`` of every relation fork in the store."""
        out = []
        names = {name: n for n, name in enumerate(("main", "fsm", "vm", "init"))}
        for p in sorted(self.directory.iterdir()):
            parts = p.name.split("_")
            if len(parts) == 4 and parts[3] in names and all(x.isdigit() for x in parts[:3]):
                out.append(((int(parts[0]), int(parts[1]), int(parts[2])), names[parts[3]]))
        return out

    def flush(self) -> None:
        for f in self._open.values():
            self._save(f)

    def close(self) -> None:
        while self._open:
            _key, f = self._open.popitem()
            self._close(f)

    def __enter__(self) -> "PageStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
