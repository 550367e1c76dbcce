"""The settings output depends on, as a new session of the stopped cluster would start with them.

Owns guc-file.l's configuration files (``postgresql.conf`` with its include directives,
``postgresql.auto.conf``), the command line of the last start (``postmaster.opts``),
``ALTER DATABASE/ROLE ... SET`` (``pg_db_role_setting``), applied in the server's order of
precedence with the check hooks' canonical forms (DateStyle, enums, booleans).  Hands the
settings a ``Catalog`` records (TimeZone, DateStyle, ..., search_path, quote_all_identifiers).
"""

from __future__ import annotations

import os
import re
from typing import Callable

from ...pg.encoding import python_codec
from ...pg.quote import split_identifier_string
from ...heap.varlena import ToastPointer
from ..model import DEFAULT_SETTINGS, CatalogError
from ..pg_catalog import DbRoleSettingRelationId, TEXTARRAYOID, value_converter
from .catalogs import AttributeRows, DataDir, fetch_toast_value, shared_table
from .files import LOCAL, DataFiles, data_files

# guc-file.l: name [=] value [# comment]; a value is a quoted string ('' and backslash escapes),
# or an unquoted token (identifier, number with unit, …)
_CONF_ID = r"[A-Za-z_\x80-\uffff][A-Za-z0-9_$\x80-\uffff]*"
_CONF_LINE = re.compile(rf"""\s*({_CONF_ID}(?:\.{_CONF_ID})?)
                            \s*=?\s*
                            ('(?:[^'\\\n]|\\.|'')*'|[^\s#']+)?
                            \s*(?:\#.*)?$""", re.X)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _deescape(quoted: str) -> str:
    """guc-file.l DeescapeQuotedString: strip the quotes, undo '' and backslash escapes."""
    s = quoted[1:-1]
    out = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
            elif nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", s[i + 1:])
                out.append(chr(int(m.group(0), 8)))
                i += 1 + len(m.group(0))
            else:
                out.append(nxt)
                i += 2
        elif ch == "'" and i + 1 < len(s) and s[i + 1] == "'":
            out.append("'")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _text(data: bytes) -> str:
    """A configuration file's text as ``open(path, encoding="utf-8", errors="surrogateescape")`` reads it
    (universal newlines)."""
    return data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n").replace("\r", "\n")


def parse_config_file(path: str, into: dict[str, tuple[str, str]], depth: int = 0, strict: bool = True,
                      files: DataFiles = LOCAL) -> bool:
    """ParseConfigFile: ``name = value`` lines into ``into`` {lowercase name: (value, file)}, the
    last occurrence winning; ``include``, ``include_if_exists`` and ``include_dir`` followed
    (relative to the including file).  Returns False if the file does not exist and not ``strict``.
    Files are read through ``files`` (a backup holds none outside its data directory).
    """
    if depth > 10:
        raise CatalogError(f"{path}: configuration files nested too deeply (include loop?)")
    try:
        lines = _text(files.read(path)).split("\n")
    except FileNotFoundError:
        if strict:
            raise CatalogError(f"configuration file {path} is missing") from None
        return False
    except OSError as e:
        raise CatalogError(f"cannot read configuration file {path}: {e.strerror}") from None
    here = os.path.dirname(path)
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _CONF_LINE.match(line)
        if not m or m.group(2) is None:
            raise CatalogError(f"{path}:{lineno}: syntax error in configuration file: {line.strip()!r}")
        name, value = m.group(1).lower(), m.group(2)
        if value.startswith("'"):
            value = _deescape(value)
        if name in ("include", "include_if_exists", "include_dir"):
            target = value if os.path.isabs(value) else os.path.join(here, value)
            if name == "include_dir":
                if files.isdir(target):
                    for entry in sorted(files.listdir(target)):
                        if entry.endswith(".conf") and not entry.startswith("."):
                            parse_config_file(os.path.join(target, entry), into, depth + 1, files=files)
            else:
                parse_config_file(target, into, depth + 1, strict=name == "include", files=files)
            continue
        into[name] = (value, path)
    return True


def _postmaster_opts(files: DataFiles) -> list[tuple[str, str]]:
    """``-c name=value`` / ``--name=value`` options of the last start, from ``postmaster.opts``."""
    path = os.path.join(files.root, "postmaster.opts")
    try:
        text = _text(files.read(path))
    except OSError:
        return []
    args = re.findall(r'"((?:[^"\\]|\\.)*)"|(\S+)', text)
    argv = [a or b for a, b in args][1:]
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-c" and i + 1 < len(argv):
            a = "--" + argv[i + 1]
            i += 1
        if a.startswith("--") and "=" in a:
            name, _, value = a[2:].partition("=")
            out.append((name.replace("-", "_").lower(), value))
        i += 1
    return out


def _canonical_datestyle(value: str, base: str) -> str:
    """variable.c check_datestyle: the canonical "Style, Order" string (partial specs keep ``base``'s part)."""
    style, order = [p.strip() for p in base.split(",")]
    toks = split_identifier_string(value)
    if toks is None:
        return value
    for tok in toks:
        t = tok.lower()
        if t == "iso":
            style = "ISO"
        elif t == "sql":
            style = "SQL"
        elif t.startswith("postgres"):
            style = "Postgres"
        elif t == "german":
            style = "German"
            if not any(x.lower() in ("ymd", "dmy", "mdy", "us") or x.lower().startswith(("euro", "noneuro"))
                       for x in toks):
                order = "DMY"
        elif t == "ymd":
            order = "YMD"
        elif t == "dmy" or t.startswith("euro"):
            order = "DMY"
        elif t in ("mdy", "us") or t.startswith("noneuro"):
            order = "MDY"
        elif t == "default":
            style, order = "ISO", "MDY"
        else:
            return value  # the server would have rejected it
    return f"{style}, {order}"


_ENUM_SETTINGS = {
    "intervalstyle": ("postgres", "postgres_verbose", "sql_standard", "iso_8601"),
    "bytea_output": ("escape", "hex"),
}
_BOOL_TRUE = ("on", "true", "yes", "1")
_BOOL_FALSE = ("off", "false", "no", "0")

# catalog.dsn's setting names, with the names configuration files use (case-insensitive)
_SETTING_NAMES = {"timezone": "TimeZone", "datestyle": "DateStyle", "intervalstyle": "IntervalStyle",
                  "extra_float_digits": "extra_float_digits", "bytea_output": "bytea_output",
                  "lc_monetary": "lc_monetary", "search_path": "search_path",
                  "quote_all_identifiers": "quote_all_identifiers"}
# guc_tables.c boot values (what a setting is when nothing sets it)
_BOOT_VALUES = {"TimeZone": "GMT", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
                "extra_float_digits": "1", "bytea_output": "hex", "lc_monetary": "C",
                "search_path": DEFAULT_SETTINGS["search_path"], "quote_all_identifiers": "off"}


def _normalise(name: str, value: str, previous: str) -> str:
    """The value as pg_settings.reset_val shows it (check hooks, enum and bool canonical names)."""
    key = name.lower()
    if key == "datestyle":
        return _canonical_datestyle(value, previous)
    if key in _ENUM_SETTINGS:
        v = value.strip().lower()
        return v if v in _ENUM_SETTINGS[key] else value
    if key == "extra_float_digits":
        try:
            return str(int(value.strip(), 0))
        except ValueError:
            return value
    if key == "quote_all_identifiers":
        v = value.strip().lower()
        if v and any(t.startswith(v) for t in _BOOL_TRUE) and v not in ("o",):
            return "on"
        if v and any(t.startswith(v) for t in _BOOL_FALSE) and v not in ("o",):
            return "off"
        return value
    return value


def read_settings(pgdata, db_settings: list[list[str]] = (), warn: Callable[[str], None] | None = None
                  ) -> dict[str, str]:
    """The settings output functions and format_type depend on, as a new session would start with them.

    Precedence, lowest first (guc.h GucSource): built-in defaults; ``postgresql.conf`` and
    ``postgresql.auto.conf`` (last occurrence wins, include directives followed); the command
    line of the last start (``postmaster.opts``, absent from base backups); then
    ``db_settings``: ``pg_db_role_setting.setconfig`` arrays in increasing precedence.
    """
    files = data_files(pgdata)  # a path or a DataFiles
    pgdata = files.root
    found: dict[str, tuple[str, str]] = {}
    conf = os.path.join(pgdata, "postgresql.conf")
    argv = _postmaster_opts(files)
    for name, value in argv:
        if name == "config_file":
            conf = value
    if not parse_config_file(conf, found, strict=False, files=files) and warn is not None:
        warn(f"{conf} does not exist: settings take PostgreSQL's defaults unless set by ALTER SYSTEM, "
             "ALTER DATABASE or ALTER ROLE (was the configuration kept elsewhere, e.g. /etc/postgresql?)")
    parse_config_file(os.path.join(pgdata, "postgresql.auto.conf"), found, strict=False, files=files)
    layers = [[(name, value) for name, (value, _f) in found.items()], argv]
    for config in db_settings:
        layer = []
        for item in config or ():
            if item is None or "=" not in item:
                continue
            name, _, value = item.partition("=")
            layer.append((name.lower(), value))
        layers.append(layer)
    settings = dict(_BOOT_VALUES)
    for layer in layers:
        for name, value in layer:
            key = _SETTING_NAMES.get(name.lower())
            if key is not None:
                settings[key] = _normalise(key, value, settings[key])
    return settings


def read_pg_db_role_setting(dd: DataDir, atts: AttributeRows, datoid: int, role_oid: int | None) -> list:
    """pg_db_role_setting.setconfig arrays in increasing precedence (postinit.c process_settings):
    (0, 0) ALTER ROLE ALL, (db, 0) ALTER DATABASE, (0, role), (db, role)."""
    if DbRoleSettingRelationId not in dd.shared_map:
        return []
    table = shared_table(dd, atts, "pg_db_role_setting", DbRoleSettingRelationId)
    found = {}
    for setdatabase, setrole, raw in dd.rows(table, ("setdatabase", "setrole", "setconfig")):
        if isinstance(raw, ToastPointer):  # stored in pg_db_role_setting's TOAST table
            raw = value_converter(TEXTARRAYOID, python_codec(dd.encoding))(
                fetch_toast_value(dd, raw, dd.shared_map, os.path.join(dd.pgdata, "global")))
        found[(setdatabase, setrole)] = raw
    order = [(0, 0), (datoid, 0)]
    if role_oid is not None:
        order += [(0, role_oid), (datoid, role_oid)]
    return [found[k] for k in order if k in found]
