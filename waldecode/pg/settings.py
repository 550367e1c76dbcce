"""The server settings that shape type output, and their defaults (guc_tables.c's boot values).

A catalog snapshot records them as its server had them (``catalog.model``); type output reads
them (``types``).  Below both, so that neither imports the other for them.
"""

from __future__ import annotations

#: the settings a snapshot records: what the output functions of the types read
SETTING_NAMES = ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output",
                 "lc_monetary", "search_path")

#: their values in a snapshot that does not say (a fresh server's, guc_tables.c)
DEFAULT_SETTINGS = {"TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
                    "extra_float_digits": "1", "bytea_output": "hex", "lc_monetary": "C",
                    "search_path": '"$user", public'}
