"""Server encodings (src/common/encnames.c pg_enc2name_tbl) and the Python codec for each.

Catalog names and text are stored in the database's encoding; every reader of catalog rows
(the data directory, the history through the WAL) decodes them with this one table.
"""

from __future__ import annotations

# PostgreSQL encoding name -> Python codec; the client-only encodings (SJIS, BIG5, GBK, UHC,
# GB18030, JOHAB, SHIFT_JIS_2004) cannot be server encodings.  SQL_ASCII stores bytes as given:
# read as UTF-8, with undecodable bytes kept (surrogateescape) by the callers.
PY_CODECS = {
    "SQL_ASCII": "utf-8", "EUC_JP": "euc_jp", "EUC_CN": "gb2312", "EUC_KR": "euc_kr", "EUC_JIS_2004": "euc_jis_2004",
    "UTF8": "utf-8", "LATIN1": "latin-1", "LATIN2": "iso8859_2", "LATIN3": "iso8859_3", "LATIN4": "iso8859_4",
    "LATIN5": "iso8859_9", "LATIN6": "iso8859_10", "LATIN7": "iso8859_13", "LATIN8": "iso8859_14",
    "LATIN9": "iso8859_15", "LATIN10": "iso8859_16", "WIN1256": "cp1256", "WIN1258": "cp1258", "WIN866": "cp866",
    "WIN874": "cp874", "KOI8R": "koi8_r", "WIN1251": "cp1251", "WIN1252": "cp1252", "ISO_8859_5": "iso8859_5",
    "ISO_8859_6": "iso8859_6", "ISO_8859_7": "iso8859_7", "ISO_8859_8": "iso8859_8", "WIN1250": "cp1250",
    "WIN1253": "cp1253", "WIN1254": "cp1254", "WIN1255": "cp1255", "WIN1257": "cp1257", "KOI8U": "koi8_u",
    # EUC_TW has no Python codec: its names are kept byte for byte (surrogateescape over UTF-8)
    "EUC_TW": "utf-8", "MULE_INTERNAL": "utf-8",
}


# src/include/mb/pg_wchar.h: enum pg_enc (the server encodings, by number), names as encnames.c prints them
PG_ENCODING_NAMES = (
    "SQL_ASCII", "EUC_JP", "EUC_CN", "EUC_KR", "EUC_TW", "EUC_JIS_2004", "UTF8", "MULE_INTERNAL",
    "LATIN1", "LATIN2", "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8", "LATIN9", "LATIN10",
    "WIN1256", "WIN1258", "WIN866", "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5", "ISO_8859_6",
    "ISO_8859_7", "ISO_8859_8", "WIN1250", "WIN1253", "WIN1254", "WIN1255", "WIN1257", "KOI8U",
)


def encoding_name(number: int) -> str:
    """pg_encoding_to_char: the name of server encoding ``number`` (pg_database.encoding)."""
    return PG_ENCODING_NAMES[number] if 0 <= number < len(PG_ENCODING_NAMES) else str(number)


def python_codec(encoding: str | None) -> str:
    """The codec for a server encoding name (UTF-8 when unknown or not given)."""
    return PY_CODECS.get(encoding or "UTF8", "utf-8")
