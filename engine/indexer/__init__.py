"""The crash-safe incremental indexer: scan, produce, encode, commit."""
