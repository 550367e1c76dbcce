"""``waldecode catalog``: the catalog snapshot decoding needs, from a live server, a data directory or a
backup."""

from __future__ import annotations

import sys

from .. import argtypes
from ..errors import CatalogError, UsageError, format_lsn
from . import options as opt


def add_parser(sub) -> None:
    cat = sub.add_parser("catalog", help="write a catalog snapshot for decode",
                         description="Write the catalog snapshot 'waldecode decode' needs, from a live server "
                                     "(--dsn), from a stopped cluster's data directory or a base backup "
                                     "(--datadir), or from a backup a pgBackRest repository or barman keeps "
                                     "(--backup).")
    src = cat.add_mutually_exclusive_group(required=True)
    src.add_argument("--dsn", help="libpq connection string of the database to decode")
    src.add_argument("--datadir", metavar="PGDATA", help="data directory of a stopped cluster, or a base backup "
                                                          "(a barman backup directory too, tar archives included)")
    src.add_argument("--backup", metavar="PATH",
                     help="a pgBackRest repository (its root, backup/<stanza>, or one set) or a barman server or "
                          "backup directory: the catalog is read from one backup's files (default: the latest)")

    def before_arg(text: str):
        from ..catalog.backups import before_arg  # lazy: 50 ms, only when --before is given

        return before_arg(text)

    opt.add_backup_set(cat)
    cat.add_argument("--before", metavar="LSN|TIME", type=before_arg,
                     help="with --backup: the latest backup whose stop LSN (its consistency point) is at or before "
                          "LSN, or that stopped at or before TIME (ISO 8601; UTC unless it gives an offset)")
    cat.add_argument("--database", help="with --datadir or --backup: the database to decode (default: the only "
                                        "user database)")
    cat.add_argument("--pages", choices=("auto", "get_raw_page", "pg_read_binary_file", "none"),
                     help="with --dsn: how the catalogs' pages are read (default auto: pageinspect's get_raw_page "
                          "if installed and permitted, else the relation files after a CHECKPOINT); none: a snapshot "
                          "without them (no CHECKPOINT)")
    cat.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write the JSON snapshot")
    # --stanza, and how to reach a repository in object storage (--backup s3://bucket/repo)
    argtypes.add_input_options(cat)
    cat.set_defaults(func=cmd_catalog)


def cmd_catalog(args) -> int:
    """Take a snapshot from a live server, a data directory or a backup and write its JSON.  A snapshot
    that cannot be taken is one error line (exit 1); warnings (a server may be running on the data
    directory, it was not shut down cleanly, wal_level is not logical, catalog pages are missing) are
    one line each, and the snapshot is still written."""
    prog = "waldecode"

    def warn(message: str) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    if not args.backup and (args.stanza or args.backup_set or args.before):
        raise UsageError("--stanza, --backup-set and --before go with --backup")
    try:
        backup = None
        if args.backup:
            from ..catalog.backups import find_backup  # lazy: 50 ms that --help, inspect and decode never need

            before_lsn, before_time = args.before or (None, None)
            backup = find_backup(args.backup, args.stanza, args.backup_set, before_lsn, before_time,
                                 argtypes.input_options(args))
        elif args.datadir:
            from ..catalog.backups import datadir_backup  # lazy: as find_backup

            backup = datadir_backup(args.datadir)
        if backup is not None:
            if args.pages:
                raise UsageError("--pages goes with --dsn; from a backup the pages are read from its files")
            from ..catalog.datadir import snapshot_from_datadir  # lazy: as find_backup

            print(f"{prog}: catalog from {backup.describe()}", file=sys.stderr)
            try:
                catalog = snapshot_from_datadir(backup.source, args.database, warn=warn)
            finally:
                backup.close()
            where = f"the last start of the cluster in {backup.tool} backup {backup.label}"
        elif args.datadir:
            if args.pages:
                raise UsageError("--pages goes with --dsn; with --datadir the pages are read from the files")
            from ..catalog.datadir import snapshot_from_datadir  # lazy: as find_backup

            catalog = snapshot_from_datadir(args.datadir, args.database, warn=warn)
            where = f"the last start of {args.datadir}"
        else:
            if args.database:
                raise UsageError("--database goes with --datadir; with --dsn, name the database in the DSN")
            from ..catalog.dsn import redact_dsn, snapshot_from_dsn  # lazy: as find_backup

            catalog = snapshot_from_dsn(args.dsn, args.pages or "auto")
            where = redact_dsn(args.dsn)
    except CatalogError as e:
        if args.traceback:
            raise
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    text = catalog.to_json()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            print(f"{prog}: error: cannot write catalog snapshot {args.output}: {e.strerror}", file=sys.stderr)
            return 1
    if args.output != "-":
        print(f"{prog}: {catalog_summary(catalog, args.output)}", file=sys.stderr)
    if catalog.catalog_pages_note:
        warn(catalog.catalog_pages_note)
    wal_level = catalog.settings.get("wal_level")
    if wal_level != "logical":
        warn(f"wal_level is {wal_level!r} on {where}, not 'logical': its WAL does not carry what logical decoding "
             "needs")
    return 0


def catalog_summary(catalog, path: str) -> str:
    """``catalog``'s one line on what it wrote: the file, the database, the cluster, the version, the LSN."""
    cluster = f" of cluster {catalog.system_identifier}" if catalog.system_identifier is not None else ""
    return (f"wrote {path}: database {catalog.database}{cluster}, PostgreSQL {catalog.major}, "
            f"taken at {format_lsn(catalog.lsn)}")
