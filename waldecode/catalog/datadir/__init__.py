"""Catalog snapshots from a stopped cluster's data directory or a base backup, no server needed.

``control`` (PG_VERSION, pg_control), ``relmap`` (pg_filenode.map), ``clog`` (pg_xact,
pg_multixact: tuple visibility), ``heapscan`` (heap pages and scans), ``catalogs`` (catalog
tables and their rows), ``settings`` (configuration files and ALTER ... SET) and ``snapshot``
(the ``Catalog``) read the files as the server itself would at startup, each through ``files``
(where they are kept: a directory, a pgBackRest backup set, a barman backup).
"""

from .catalogs import PG_ATTRIBUTE_FIXED, read_pg_authid, read_pg_database
from .clog import (
    TRANSACTION_STATUS_ABORTED,
    TRANSACTION_STATUS_COMMITTED,
    TRANSACTION_STATUS_IN_PROGRESS,
    TRANSACTION_STATUS_SUB_COMMITTED,
    TransactionStatus,
    tuple_is_visible,
)
from .control import SUPPORTED_MAJORS, read_pg_control, read_pg_version
from .heapscan import HeapScan, heap_page_items, heap_page_tuples, read_heap_page
from .relmap import read_relmap_file
from .settings import parse_config_file, read_pg_db_role_setting, read_settings
from .snapshot import DatadirWarning, FormatType, snapshot_from_datadir

__all__ = ["snapshot_from_datadir", "DatadirWarning", "FormatType", "SUPPORTED_MAJORS", "read_pg_version",
           "read_pg_control", "read_relmap_file", "read_heap_page", "heap_page_items", "heap_page_tuples",
           "HeapScan", "TransactionStatus", "tuple_is_visible", "TRANSACTION_STATUS_IN_PROGRESS",
           "TRANSACTION_STATUS_COMMITTED", "TRANSACTION_STATUS_ABORTED", "TRANSACTION_STATUS_SUB_COMMITTED",
           "read_pg_database", "read_pg_authid", "read_pg_db_role_setting", "read_settings", "parse_config_file",
           "PG_ATTRIBUTE_FIXED"]
