"""Values the type-output tests share: the session settings they compare under, float edges, and
hypothesis strategies for text and JSON (the live tests against the server, the offline parity
tests between the native and the Python output)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

# Session settings the server's ::text and our output_text are compared under.
SETTINGS = [
    {},
    {"TimeZone": "America/New_York", "DateStyle": "SQL, DMY", "IntervalStyle": "sql_standard",
     "extra_float_digits": "0", "bytea_output": "escape"},
    {"TimeZone": "Asia/Kolkata", "DateStyle": "Postgres, MDY", "IntervalStyle": "iso_8601",
     "extra_float_digits": "3"},
    {"TimeZone": "Europe/Berlin", "DateStyle": "German, DMY", "IntervalStyle": "postgres_verbose",
     "extra_float_digits": "-3"},
    {"TimeZone": "Australia/Lord_Howe", "DateStyle": "Postgres, DMY", "extra_float_digits": "2"},
    {"TimeZone": "UTC+3", "DateStyle": "SQL, MDY", "IntervalStyle": "postgres_verbose"},
    {"TimeZone": "America/St_Johns", "DateStyle": "ISO, YMD", "extra_float_digits": "-15", "lc_monetary": "C.utf8"},
    {"TimeZone": "<+05:30>-05:30", "DateStyle": "Postgres, YMD", "IntervalStyle": "sql_standard"},
    {"TimeZone": "europe/london", "DateStyle": "sql, ymd", "IntervalStyle": "iso_8601", "bytea_output": "escape"},
]

FLOAT8_EDGES = [0.0, -0.0, math.nan, math.inf, -math.inf, 1e-310, 5e-324, -5e-324, 2.2250738585072014e-308,
                1.7976931348623157e308, 0.1, 1.5, 1e15, 1e16, 123456789012345.6, 1e-5, 1e-4, 1e-3, 100000.0,
                1e6, 2.0**53, 2.0**53 + 2, 9007199254740993.0, 1e22, 1e23, 5e-5, 3.4e38, 1.5e300, -2.5e-300,
                0.3, 2.0 / 3, 1 / 3, 123456.7, 999999999999999.9, 99999999999999.99]

safe_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20)
    | st.floats(allow_nan=False, allow_infinity=False) | safe_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(safe_text, children, max_size=4),
    max_leaves=12)
