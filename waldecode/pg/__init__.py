"""PostgreSQL's basics every stage shares (src/include, src/common, utils/adt): one copy of each rule.

``lsn`` (LSN text), ``transam`` (transaction and multixact ID comparison), ``encoding``
(server encodings and their codecs), ``quote`` (identifier splitting and quoting): what the
WAL reader, the catalog readers (live server, data directory, WAL history) and the output
plugins must all do exactly alike.
"""
