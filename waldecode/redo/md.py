"""Relation files of a base backup into the page store, as md.c lays them out.

Owns the naming and segmentation of src/backend/storage/smgr/md.c and src/common/relpath.c: a
relation fork is ``<relNumber>`` (main), ``<relNumber>_fsm``, ``_vm`` or ``_init`` under its
database's directory (``base/<dbOid>``, ``global`` for shared relations, ``pg_tblspc/<spcOid>/
PG_<major>_<catversion>/<dbOid>``), cut into segment files of RELSEG_SIZE blocks (1 GB), the second
and later ones suffixed ``.1``, ``.2``...  ``load_base_backup`` copies every block of every relation
fork but the free space map (of every relation, or of the ``wanted`` ones) from a ``DataFiles``
source (a plain backup, a pgBackRest set, a tar: ``waldecode.catalog.datadir.files``) into a
``PageStore``, 1 MiB at a time: never a relation in memory.  Hands the store to redo, which
starts from these pages at the backup's redo point.

A backup's pages may be newer than the redo point (it is copied while the cluster runs) or torn;
the page-LSN rule and the full-page images that follow a checkpoint put them right during redo.
Temporary relations (``t<backend>_<relNumber>``) are not copied by pg_basebackup and are skipped.
"""

from __future__ import annotations

import re

from ..errors import WALError
from ..pg.relpath import DEFAULTTABLESPACE_OID, GLOBALTABLESPACE_OID, forkNames
from ..wal.xlogrecord import BLCKSZ

# src/include/common/relpath.h: ForkNumber
FSM_FORKNUM = 1
# src/include/pg_config.h: RELSEG_SIZE (blocks per segment file, the default 1 GB)
RELSEG_SIZE = 131072

#: blocks read and stored at a time (1 MiB): a relation is never held whole
_CHUNK_BLOCKS = 128

_FILE_RE = re.compile(r"^(\d+)(?:_(fsm|vm|init))?(?:\.(\d+))?$")


def relation_files(files, major: int):
    """``(locator, forknum, segno, path)`` of every relation segment file of the data directory."""
    out = []

    def database_dir(spc: int, db: int, path: str) -> None:
        for name in files.listdir(path):
            m = _FILE_RE.match(name)
            if m is None:
                continue
            fork = forkNames.index(m.group(2)) if m.group(2) else 0
            out.append(((spc, db, int(m.group(1))), fork, int(m.group(3) or 0), path + "/" + name))

    if files.isdir("global"):
        database_dir(GLOBALTABLESPACE_OID, 0, "global")
    if files.isdir("base"):
        for db in files.listdir("base"):
            if db.isdigit() and files.isdir("base/" + db):
                database_dir(DEFAULTTABLESPACE_OID, int(db), "base/" + db)
    if files.isdir("pg_tblspc"):
        for spc in files.listdir("pg_tblspc"):
            if not spc.isdigit():
                continue
            for version_dir in files.listdir("pg_tblspc/" + spc):
                if not version_dir.startswith("PG_%d_" % major):
                    continue
                base = "pg_tblspc/%s/%s" % (spc, version_dir)
                for db in files.listdir(base):
                    if db.isdigit():
                        database_dir(int(spc), int(db), base + "/" + db)
    return sorted(out)


def load_base_backup(store, files, major: int, wanted=None) -> int:
    """Copy the relation forks of a data directory (``wanted(locator)`` ones only, when given) into
    ``store``; the number of blocks copied.  A segment file whose size is not a whole number of
    blocks is an error naming it (md.c would not read past its last whole block either)."""
    n = 0
    for locator, fork, segno, path in relation_files(files, major):
        if fork == FSM_FORKNUM or (wanted is not None and not wanted(locator)):
            continue  # the free space map is not WAL-logged, and redo does not keep it
        size = files.size(path)
        if size % BLCKSZ:
            raise WALError(f"a relation segment file of {size} bytes, not a multiple of {BLCKSZ}",
                           path=files.path(path), what="file")
        first = segno * RELSEG_SIZE
        with files.open(path) as f:
            for i in range(0, size // BLCKSZ, _CHUNK_BLOCKS):
                want = min(_CHUNK_BLOCKS, size // BLCKSZ - i) * BLCKSZ
                pages = f.read(want)
                if len(pages) != want:
                    raise WALError(f"block {first + i + len(pages) // BLCKSZ} ends early", path=files.path(path),
                                   what="file")
                store.write_blocks(locator, fork, first + i, pages)
                n += want // BLCKSZ
    return n
