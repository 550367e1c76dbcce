"""Logical decoding's stages (src/backend/replication/logical): ``txn``, the one transaction tracker."""
