"""Keeping a data folder usable: self-repair when it opens (``repair``) and the one-writer
lock (``writelock``). Protocols over the catalog and the index together, so they sit above
both; ``engine.home`` below them holds only the file helpers everything shares."""
