"""waldecode: PostgreSQL logical decoding, offline, from WAL segment files."""

from .errors import Error

__version__ = "0.1.0"

__all__ = ["Error", "__version__"]
