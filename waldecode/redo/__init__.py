"""Heap redo: relation pages replayed from full-page images and heap records, as recovery does.

The first part of reading a table as it was at any moment (issue 23): ``bufpage`` (page layout
operations, bufpage.c), ``htup_details`` (tuple header macros), ``bufmask`` and
``heapam_xlog.heap_mask`` (masking, for comparisons as wal_consistency_checking makes them),
``xlogutils`` (the page-LSN rule and full-page images for one block reference), ``heapam_xlog``
(the heap and heap2 redo routines), ``visibilitymap`` (the map's bits), ``pagestore`` (pages on
disk, never a relation in memory), ``md`` (a base backup's relation files into the store) and
``xlogrecovery`` (which records change heap pages, and the consistency check).  ``docs/redo.md``
says what is covered and how it is verified.
"""
