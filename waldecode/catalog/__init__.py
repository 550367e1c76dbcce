"""The catalog: what decoding needs to know about relations and types, and where it comes from.

``model`` is the snapshot (``Catalog``, its JSON file), re-exported here with the catalog
constants other stages use; ``pg_catalog`` the system catalogs' OIDs and the one row decoder;
``relcache`` the server's derived facts (format_type, replica identity key, attmissingval
text); ``dsn`` and ``datadir`` take a snapshot from a live server or a data directory;
``history`` follows the catalog through the WAL as a ``CatalogTimeline`` the decoder queries
by (LSN, transaction).
"""

from .model import (
    DEFAULT_SETTINGS,
    FORMAT_NAME,
    FORMAT_VERSION,
    SETTING_NAMES,
    Attribute,
    Catalog,
    CatalogError,
    CatalogPages,
    PackedBlock,
    Publication,
    PublicationNamespace,
    PublicationRel,
    Relation,
    TypeInfo,
)
from .pg_catalog import (
    TRACKED_CATALOGS,
    AttributeRelationId,
    EnumRelationId,
    FirstCatalogUserObjectId,
    IndexRelationId,
    NamespaceRelationId,
    ProcedureRelationId,
    RangeRelationId,
    RelationRelationId,
    RELKIND_COMPOSITE_TYPE,
    RELKIND_FOREIGN_TABLE,
    RELKIND_MATVIEW,
    RELKIND_PARTITIONED_TABLE,
    RELKIND_RELATION,
    RELKIND_SEQUENCE,
    RELKIND_TOASTVALUE,
    RELPERSISTENCE_PERMANENT,
    REPLICA_IDENTITY_DEFAULT,
    REPLICA_IDENTITY_FULL,
    REPLICA_IDENTITY_INDEX,
    REPLICA_IDENTITY_NOTHING,
    TypeRelationId,
)

__all__ = [
    "Catalog", "Relation", "Attribute", "TypeInfo", "CatalogPages", "PackedBlock", "CatalogError",
    "Publication", "PublicationRel", "PublicationNamespace",
    "FORMAT_NAME", "FORMAT_VERSION", "SETTING_NAMES", "DEFAULT_SETTINGS", "TRACKED_CATALOGS",
    "FirstCatalogUserObjectId", "TypeRelationId", "AttributeRelationId", "ProcedureRelationId",
    "RelationRelationId", "IndexRelationId", "NamespaceRelationId", "EnumRelationId", "RangeRelationId",
    "RELKIND_RELATION", "RELKIND_TOASTVALUE", "RELKIND_SEQUENCE", "RELKIND_MATVIEW", "RELKIND_COMPOSITE_TYPE",
    "RELKIND_FOREIGN_TABLE", "RELKIND_PARTITIONED_TABLE", "RELPERSISTENCE_PERMANENT", "REPLICA_IDENTITY_DEFAULT",
    "REPLICA_IDENTITY_NOTHING", "REPLICA_IDENTITY_FULL", "REPLICA_IDENTITY_INDEX",
]
