"""``waldecode table``: one table's rows as PostgreSQL's point-in-time recovery of a base backup to a
target would show them (issue 23; ``redo.table`` computes them), printed as ``COPY ... TO STDOUT``
does (``copy``, ``csv``), as JSON lines or as INSERT statements.

Nothing is written unless every row was read: the rows are spooled (to a temporary file past 64 MiB)
as they are read and copied out at the end (Parquet: written a row group at a time to a temporary
name, renamed at the end), so that a bad target, a missing segment or an unknown table leaves only
the error line on stderr.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile

from .. import argtypes
from ..errors import UsageError
from ..output.quote import quote_literal_cstr
from ..pg.quote import quote_qualified_identifier, split_identifier_string
from . import options as opt
from .report import EXIT_OK

FORMATS = ("copy", "csv", "jsonl", "sql", "parquet")


def add_parser(sub) -> None:
    tab = sub.add_parser("table", help="a table's rows as point-in-time recovery to a target would show them",
                         description="Read one table as PostgreSQL's point-in-time recovery of a base backup to "
                                     "a target would show it, from the backup and the WAL, without a server.")
    tab.add_argument("--backup", required=True, metavar="PATH",
                     help="the base backup (pg_basebackup -Fp: a directory with its backup_label), or a pgBackRest "
                          "repository (its root, backup/<stanza>, or one set) or a barman server or backup "
                          "directory: then the latest backup consistent at or before the target is read")
    opt.add_backup_set(tab, also="; else the latest consistent at or before the target")
    tab.add_argument("--table", required=True, metavar="SCHEMA.NAME", help="the table (schema public when omitted)")
    tab.add_argument("--at", required=True, metavar="LSN|TIME|XID",
                     help="the recovery target: an LSN (X/X: recovery_target_lsn), an xid (recovery_target_xid) "
                          "or a time (recovery_target_time, compared with commit timestamps; without an offset "
                          "in the cluster's TimeZone)")
    tab.add_argument("--inclusive", choices=("on", "off"), default="on",
                     help="recovery_target_inclusive: stop after (on, the default) or before the target")
    tab.add_argument("--format", choices=FORMATS, default="copy",
                     help="copy: COPY TO STDOUT's text format (default); csv: COPY's CSV format; jsonl: one JSON "
                          "object per row; sql: INSERT statements; parquet: one Parquet file (needs --output)")
    tab.add_argument("--database", help="the database of the table (default: the backup's only database that is "
                                        "neither a template nor postgres)")
    opt.add_timeline(tab)
    opt.add_output(tab)
    tab.add_argument("--work-dir", metavar="DIR", help="where the page store is kept while reading (default: the "
                                                       "temporary directory)")
    opt.add_paths(tab, required=False,
                  help="WAL segment files or directories (the archive), from the backup's start to the target; "
                       "with a repository as --backup, by default its archive")
    # --stanza, and how to reach a repository in object storage (--backup s3://bucket/repo)
    argtypes.add_input_options(tab)
    tab.set_defaults(func=cmd_table)


def _table_name(text: str) -> tuple[str, str]:
    parts = split_identifier_string(text, ".")
    if not parts or len(parts) > 2:
        raise UsageError(f"--table {text!r}: SCHEMA.NAME is needed")
    return (parts[0], parts[1]) if len(parts) == 2 else ("public", parts[0])


# src/backend/commands/copyto.c CopyAttributeOutText: the control characters with a letter escape
_COPY_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\\": "\\\\"}
_COPY_TRANS = str.maketrans(_COPY_ESCAPES)


def copy_text(value: str | None) -> str:
    """A column as COPY's text format prints it (delimiter tab, NULL ``\\N``); other control
    characters go out as they are, as CopyAttributeOutText sends them."""
    return "\\N" if value is None else value.translate(_COPY_TRANS)


def copy_csv(value: str | None, single_column: bool) -> str:
    """copyto.c CopyAttributeOutCSV with COPY's CSV defaults (delimiter ``,``, quote and escape ``"``,
    NULL the empty string): quoted when it holds the delimiter, the quote, CR or LF, when it is the
    empty string (which would read back as NULL), or is ``\\.`` alone on its line."""
    if value is None:
        return ""
    if value == "" or any(c in value for c in ',"\r\n') or (single_column and value == "\\."):
        return '"' + value.replace('"', '""') + '"'
    return value


def cmd_table(args) -> int:
    schema, name = _table_name(args.table)
    if args.format == "parquet" and not args.output:
        raise UsageError("--format parquet needs --output FILE")
    run = dict(database=args.database, timeline=args.timeline, work_dir=args.work_dir,
               options=argtypes.input_options(args))
    read = _reader(args)
    if args.format == "parquet":
        with _ParquetRows(args.output) as rows:
            result = read(args.backup, args.paths, schema, name, args.at, args.inclusive == "on", on_row=rows.add,
                          **run)
            rows.done(result)
        _say_backup(result)
        return EXIT_OK
    line = _line_writer(args.format, schema, name)
    with tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024, mode="w+b") as spool:
        result = read(args.backup, args.paths, schema, name, args.at, args.inclusive == "on",
                      on_row=lambda result, row: spool.write(line(result, result.texts(row)).encode()), **run)
        _say_backup(result)
        spool.seek(0)
        if args.output:
            with open(args.output, "wb") as f:
                shutil.copyfileobj(spool, f)
        else:
            shutil.copyfileobj(spool, sys.stdout.buffer)
            sys.stdout.buffer.flush()
    return EXIT_OK


def _reader(args):
    """``table_as_of`` for a plain base backup (a local directory holding PG_VERSION), else
    ``table_from_repository`` with the repository options bound."""
    from ..redo.table import table_as_of, table_from_repository  # lazy: the redo engine and the catalog readers

    if os.path.isfile(os.path.join(args.backup, "PG_VERSION")):
        if args.backup_set or args.stanza:
            raise UsageError("--backup-set and --stanza go with a pgBackRest or barman repository as --backup, "
                             f"not with the base backup {args.backup}")
        if not args.paths:
            raise UsageError(f"the WAL from the start of the base backup {args.backup} to the target is needed: "
                             "give the archive as PATH")
        return table_as_of
    return functools.partial(table_from_repository, stanza=args.stanza, label=args.backup_set)


def _say_backup(result) -> None:
    """One line on stderr naming the repository's backup read (nothing for a plain base backup)."""
    if result.backup is not None:
        print(f"waldecode: table from {result.backup.describe()}", file=sys.stderr)


def _line_writer(fmt: str, schema: str, name: str):
    """(result, the row's output texts) -> the line ``fmt`` prints for it."""
    if fmt == "copy":
        return lambda _result, row: "\t".join(copy_text(v) for v in row) + "\n"
    if fmt == "csv":
        return lambda result, row: ",".join(copy_csv(v, len(result.columns) == 1) for v in row) + "\n"
    if fmt == "jsonl":
        # docs/jsonl-parquet.md's columns: name, type (format_type) and the output text (null: NULL)
        def jsonl(result, row):
            obj = {"v": 1, "schema": schema, "table": name,
                   "columns": [{"name": a.attname, "type": a.type_name, "value": v}
                               for a, v in zip(result.columns, row)]}
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        return jsonl
    qualified = quote_qualified_identifier(schema, name)

    def insert(result, row):
        names = ", ".join(quote_qualified_identifier(None, a.attname) for a in result.columns)
        values = ", ".join("NULL" if v is None else quote_literal_cstr(v) for v in row)
        return f"INSERT INTO {qualified} ({names}) VALUES ({values});\n"
    return insert


class _ParquetRows:
    """One Parquet file written a row group at a time as the rows come (``add``, ``table_as_of``'s
    ``on_row``): a field per column, typed as ``decode --parquet`` types them
    (``output.parquet.arrow_column``; the output text where no lossless type exists), and ``_text``, the
    output text of the values a typed column cannot hold (as ``new_text``: numeric NaN, infinities, a
    timestamp out of Arrow's range).  Written to a temporary name, renamed by ``done``; removed when
    reading fails."""

    #: rows of a row group: at most this many rows are held
    ROW_GROUP_ROWS = 65536

    def __init__(self, path: str):
        self.path, self.tmp = path, path + ".tmp"
        self.writer = None
        self.result = None
        self.typed, self.texts = [], []

    def _start(self, result) -> None:
        import pyarrow.parquet as pq  # lazy: pyarrow, only --format parquet

        from ..errors import format_lsn  # lazy: as above
        from ..output.parquet import _Columns, _pa  # lazy: as above

        pa = self.pa = _pa()
        self.result = result
        catalog = result.catalog
        self.columns = _Columns(catalog, result.relation, result.output)
        # _Columns indexes the relation's attributes (dropped ones included); the rows hold the others only
        self.kept = [i for i, a in enumerate(result.relation.attributes) if not a.attisdropped]
        self.fields = list(self.columns.struct) if self.columns.struct is not None else []
        self.text_type = pa.map_(pa.string(), pa.string())
        meta = {"waldecode.relation": f"{result.relation.nspname}.{result.relation.relname}",
                "waldecode.columns": json.dumps(self.columns.described),
                "waldecode.stop_lsn": format_lsn(result.stop_lsn)}
        self.schema = pa.schema(self.fields + [pa.field("_text", self.text_type)], metadata=meta)
        self.writer = pq.ParquetWriter(self.tmp, self.schema)

    def add(self, result, row: list) -> None:
        if self.writer is None:
            self._start(result)
        full = [None] * len(result.relation.attributes)
        for i, v in zip(self.kept, row):
            full[i] = v
        out, text, _size = self.columns.values(full, None, None)
        self.typed.append(out)
        self.texts.append(text)
        if len(self.typed) >= self.ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        from ..output.parquet import _array  # lazy: as above

        pa, typed = self.pa, self.typed
        arrays = [_array(pa, f.type, [r[k] for r in typed]) for k, f in enumerate(self.fields)]
        self.writer.write_table(pa.Table.from_arrays(arrays + [_array(pa, self.text_type, self.texts)],
                                                     schema=self.schema))
        self.typed, self.texts = [], []

    def done(self, result) -> None:
        """The last row group, and the file under its name (no rows: the schema alone)."""
        if self.writer is None:
            self._start(result)
        if self.typed:
            self._flush()
        self.writer.close()
        self.writer = None
        os.replace(self.tmp, self.path)

    def __enter__(self) -> "_ParquetRows":
        return self

    def __exit__(self, *exc) -> None:
        if self.writer is not None:
            self.writer.close()
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)
