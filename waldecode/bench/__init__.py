"""The benchmark ``waldecode bench`` runs (its command: ``cli.bench``): waldecode against PostgreSQL's own
tools, on the same WAL from a real server.

``workloads`` writes the WAL on throw-away PostgreSQL 15 clusters; ``runner`` times the tools on it
(``tools``: pg_waldump, the server's decoding, pg_recvlogical, waldecode's commands; ``sparkrun``:
``spark decode`` on local masters and a standalone cluster) and checks the outputs are equal;
``measure`` and ``rusage`` take wall time, CPU and peak RSS; ``report`` prints and writes the results.
"""
