"""The catalog through the WAL: a timeline of the catalog as of every (LSN, transaction).

``redo`` keeps the tracked catalogs' pages and decodes the rows catalog records write;
``builder`` (``CatalogHistory``) files them per transaction as the transaction tracker tells
it and commits them into epochs; ``layers`` is the versioned row store; ``timeline``
(``CatalogTimeline``) the immutable, serialisable result; ``view`` (``HistoricCatalog``) the
catalog at one point, with ``Catalog``'s interface.
"""

from ..pg_catalog import DECODED_COLUMNS, TRACKED_CATALOGS, CatalogLayout
from .builder import CatalogHistory, CatalogProblem
from .timeline import BaseFacts, CatalogTimeline
from .view import HistoricCatalog

__all__ = ["CatalogHistory", "CatalogTimeline", "HistoricCatalog", "CatalogProblem", "BaseFacts", "CatalogLayout",
           "TRACKED_CATALOGS", "DECODED_COLUMNS"]
