"""The server settings that shape type output, and their defaults (guc_tables.c's boot values); the
reorder buffer's spilling limits.

A catalog snapshot records the type-output settings as its server had them (``catalog.model``); type
output reads them (``types``).  Below both, so that neither imports the other for them.  The spilling
limits are read by the reorder buffer and by what asks for a run (``logical.request``, the command line),
which must not load the reorder buffer to know them.
"""

from __future__ import annotations

#: the settings a snapshot records: what the output functions of the types read
SETTING_NAMES = ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output",
                 "lc_monetary", "search_path")

#: their values in a snapshot that does not say (a fresh server's, guc_tables.c)
DEFAULT_SETTINGS = {"TimeZone": "UTC", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
                    "extra_float_digits": "1", "bytea_output": "hex", "lc_monetary": "C",
                    "search_path": '"$user", public'}


#: src/backend/replication/logical/reorderbuffer.c: max_changes_in_memory, the changes of one
#: (sub)transaction kept in memory before it spills
DEFAULT_SPILL_THRESHOLD = 4096
#: logical_decoding_work_mem's boot value (guc_tables.c: 65536 kB): all buffered changes past it spill
#: the largest transaction
DEFAULT_MEMORY_BUDGET = 64 * 1024 * 1024
