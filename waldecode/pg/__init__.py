"""PostgreSQL's basics every stage shares (src/include, src/common, utils/adt): one copy of each rule.

LSN text, transaction-id arithmetic, server encodings, identifier splitting and quoting,
page and tuple-header layouts: what the WAL reader, the catalog readers (live server, data
directory, WAL history) and the output plugins must all do exactly alike.
"""
