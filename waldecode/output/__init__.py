"""Output plugins: turn committed transactions into text (test_decoding first).

A plugin receives transactions, relations (``catalog.Relation``) and decoded
tuples from ``waldecode.replay``; it never sees WAL.
"""
