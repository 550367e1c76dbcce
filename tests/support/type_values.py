"""Values the type-output tests share: the session settings they compare under, float edges,
hypothesis strategies for text and JSON (the live tests against the server, the offline parity
tests between the native and the Python output), and a column of every type the project
supports with edge values (the ``types`` fixture workload, the JSON lines / Parquet round trip)."""

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

# The user-defined types TYPE_COLUMNS uses
TYPE_SETUP_SQL = [
    "CREATE TYPE ty_mood AS ENUM ('sad', 'ok', 'happy', 'it''s complicated')",
    "CREATE TYPE ty_pair AS (x int, label text)",
    "CREATE DOMAIN ty_posint AS int CHECK (VALUE > 0)",
    "CREATE SCHEMA wd_other",
    "CREATE TYPE wd_other.color AS ENUM ('red', 'Dark Blue')",
]

# (column, type, values of rows 1-3 as SQL expressions); row 4 is all NULL.
TYPE_COLUMNS: list[tuple[str, str, list[str]]] = [
    ("c_int2", "int2", ["1", "-32768", "32767"]),
    ("c_int4", "int4", ["42", "-2147483648", "2147483647"]),
    ("c_int8", "int8", ["9000000000", "-9223372036854775808", "9223372036854775807"]),
    ("c_float4", "float4", ["1.5", "'NaN'", "'-Infinity'"]),
    ("c_float4b", "float4", ["'3.4028235e38'", "'-0'", "'1.4e-45'"]),
    ("c_float8", "float8", ["3.141592653589793", "'Infinity'", "'NaN'"]),
    ("c_float8b", "float8", ["0.1", "'-0'", "'4.9e-324'"]),
    ("c_numeric", "numeric", ["12345.6789", "'NaN'",
                              "-123456789012345678901234567890.123456789012345678901234567890"]),
    ("c_numeric_s", "numeric(12,4)", ["1.5", "-0.0001", "99999999.9999"]),
    ("c_numeric_x", "numeric", ["0", "'Infinity'", "'-Infinity'"]),
    ("c_numeric_e", "numeric", ["1e100", "0.000000000000000000001", "-1.50e-5"]),
    ("c_bool", "bool", ["true", "false", "true"]),
    ("c_text", "text", ["'hello, world'",
                        "E'line1\\nline2\\ttab ''quoted'' back\\\\slash \"dq\" ünïcødé ☃ 𝄞'",
                        "E'cr\\r vt\\x0b ff\\x0c ls\\u2028 nul-free'"]),
    ("c_varchar", "varchar(20)", ["'varchar'", "''", "'x'"]),
    ("c_char", "char(5)", ["'ab'", "''", "'abcde'"]),
    ("c_bytea", "bytea", ["'\\x00ff10'", "'\\x'", "decode(repeat('ab', 100), 'hex')"]),
    ("c_date", "date", ["'2024-02-29'", "'0044-03-15 BC'", "'infinity'"]),
    ("c_date2", "date", ["'5874897-12-31'", "'4714-11-24 BC'", "'-infinity'"]),
    ("c_time", "time", ["'13:45:30.123456'", "'24:00:00'", "'00:00:00'"]),
    ("c_timetz", "timetz", ["'13:45:30+05:30'", "'00:00:00-15:59'", "'23:59:59.999999+15:59'"]),
    ("c_ts", "timestamp", ["'2024-02-29 13:45:30.5'", "'infinity'", "'4713-01-01 00:00:00 BC'"]),
    ("c_tstz", "timestamptz", ["'2024-02-29 13:45:30.5+02'", "'-infinity'",
                               "'294276-12-31 23:59:59.999999+00'"]),
    ("c_interval", "interval", ["'1 year 2 mons 3 days 04:05:06.789'", "'-1 days -00:00:01'",
                                "'178000000 years'"]),
    ("c_uuid", "uuid", ["'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
                        "'00000000-0000-0000-0000-000000000000'",
                        "'ffffffff-ffff-ffff-ffff-ffffffffffff'"]),
    ("c_json", "json", ["'{\"b\": 1, \"a\": [1, 2.50, null], \"s\": \"x\\\"y\"}'",
                        "'\"just a string\"'", "'  [ ]  '"]),
    ("c_jsonb", "jsonb", ["'{\"b\": 1, \"a\": [1, 2.50, null, true, false], \"aa\": {\"n\": \"é\\n\"}, \"\": \"\"}'",
                          "'\"scalar\"'", "'12.50'"]),
    ("c_inet", "inet", ["'192.168.1.5/24'", "'::1'", "'2001:db8::1/64'"]),
    ("c_cidr", "cidr", ["'10.0.0.0/8'", "'2001:db8::/32'", "'0.0.0.0/0'"]),
    ("c_macaddr", "macaddr", ["'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'", "'00:00:00:00:00:00'"]),
    ("c_macaddr8", "macaddr8", ["'08:00:2b:01:02:03:04:05'", "'ff:ff:ff:ff:ff:ff:ff:ff'",
                                "'00:00:00:ff:fe:00:00:00'"]),
    ("c_money", "money", ["'1234.56'", "'-92233720368547758.08'", "'92233720368547758.07'"]),
    ("c_oid", "oid", ["12345", "4294967295", "0"]),
    ("c_qchar", "\"char\"", ["'x'", "'\\377'", "''"]),
    ("c_name", "name", ["'a_name'", "'it''s a name'", "repeat('n', 63)"]),
    ("c_bit", "bit(8)", ["B'10101010'", "B'00000000'", "B'11111111'"]),
    ("c_varbit", "varbit", ["B'101'", "B''", "repeat('10', 50)::varbit"]),
    ("c_int_arr", "int[]", ["'{1,2,NULL,4}'", "'[0:2]={5,6,7}'", "'{}'"]),
    ("c_text_arr", "text[]", ["'{\"a b\",\"\",NULL,\"NULL\",\"q\\\"x\",\"back\\\\slash\"}'", "'{}'",
                              "ARRAY['{braces}', 'comma,here', ' lead space', E'new\\nline']"]),
    ("c_int_2d", "int[][]", ["'{{1,2},{3,NULL}}'", "'[-1:0][3:4]={{1,2},{3,4}}'", "'{{{1}}}'"]),
    ("c_bool_arr", "bool[]", ["'{t,f,NULL}'", "'{}'", "'{t}'"]),
    ("c_float8_arr", "float8[]", ["'{1.5,NaN,-Infinity}'", "'{-0}'", "'{1e-300}'"]),
    ("c_enum", "ty_mood", ["'happy'", "'it''s complicated'", "'sad'"]),
    ("c_enum_arr", "ty_mood[]", ["'{sad,\"it''s complicated\"}'", "'{}'", "'{NULL,ok}'"]),
    ("c_other_enum", "wd_other.color", ["'red'", "'Dark Blue'", "'red'"]),
    ("c_comp", "ty_pair", ["ROW(1, 'x y')", "ROW(NULL, '')", "ROW(-5, 'quote \" and \\ backslash')"]),
    ("c_comp_arr", "ty_pair[]", ["ARRAY[ROW(1, 'a')::ty_pair, ROW(NULL, 'b,c')::ty_pair]", "'{}'",
                                 "ARRAY[ROW(2, NULL)::ty_pair]"]),
    ("c_domain", "ty_posint", ["7", "1", "2147483647"]),
    ("c_int4range", "int4range", ["'[1,10)'", "'empty'", "'(,5]'"]),
    ("c_tstzrange", "tstzrange", ["'[2024-01-01 00:00+00,2024-06-01 12:00+00)'", "'(,)'",
                                  "'[2024-01-01 00:00+00,infinity)'"]),
    ("c_numrange", "numrange", ["'(1.5,2.5]'", "'empty'", "'[-1e10,)'"]),
    ("c_daterange", "daterange", ["'[2024-01-01,2024-12-31]'", "'[2024-01-01,infinity)'", "'empty'"]),
    ("c_int4multirange", "int4multirange", ["'{[1,3), [5,8)}'", "'{}'", "'{(,0), [10,)}'"]),
    ("c_pg_lsn", "pg_lsn", ["'16/B374D848'", "'0/0'", "'FFFFFFFF/FFFFFFFF'"]),
    ("c_point", "point", ["'(1.5,-2)'", "'(0,0)'", "'(1e300,-1e-300)'"]),
    ("c_box_arr", "box[]", ["'{(1,1),(0,0);(3,3),(2,2)}'", "'{}'", "ARRAY['(1,2),(3,4)'::box]"]),
    ("c_tsvector", "tsvector", ["'the fat cat sat'", "''", "'a:1A b:2'"]),
    ("c_xml", "xml", ["'<a b=\"1\">t</a>'", "'<!-- c -->'", "'plain text'"]),
]
