"""Where a database's and a relation's files live under a data directory (src/common/relpath.c).

One copy of GetDatabasePath / GetRelationPath for the data-directory reader (which knows the
cluster's own catalog version) and pg_waldump's record descriptions (which name the release's).
"""

from __future__ import annotations

# src/include/catalog/pg_tablespace.dat
DEFAULTTABLESPACE_OID = 1663
GLOBALTABLESPACE_OID = 1664

# src/common/relpath.c: forkNames[] (src/include/common/relpath.h: ForkNumber)
MAIN_FORKNUM = 0
forkNames = ("main", "fsm", "vm", "init")


def tablespace_version_directory(major: int, catalog_version_no: int) -> str:
    """src/include/catalog/catalog.h: TABLESPACE_VERSION_DIRECTORY."""
    return "PG_%d_%d" % (major, catalog_version_no)


def database_path(spc: int, db: int, version_directory: str) -> str:
    """GetDatabasePath, relative to the data directory."""
    if spc == GLOBALTABLESPACE_OID:
        return "global"
    if spc == DEFAULTTABLESPACE_OID:
        return "base/%u" % db
    return "pg_tblspc/%u/%s/%u" % (spc, version_directory, db)


def fork_name(forknum: int) -> str:
    if 0 <= forknum < len(forkNames):
        return forkNames[forknum]
    return "(invalid fork %d)" % forknum


def relation_path(spc: int, db: int, rel: int, forknum: int, version_directory: str) -> str:
    """GetRelationPath with InvalidBackendId (relpathperm), relative to the data directory."""
    path = "%s/%u" % (database_path(spc, db, version_directory), rel)
    if forknum != MAIN_FORKNUM:
        path += "_" + fork_name(forknum)
    return path
