"""The SQLite catalog: every table and its migrations; no SQL lives outside this package."""
