"""waldecode: PostgreSQL logical decoding, offline, from WAL segment files."""

__version__ = "0.1.0"
