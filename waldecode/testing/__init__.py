"""Helpers for tests and fixture generation: throw-away PostgreSQL clusters (``cluster``)."""
