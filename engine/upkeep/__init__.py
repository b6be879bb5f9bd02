"""Keeping a data folder usable: self-repair when it opens (``repair``), the one-writer lock
(``writelock``), the crash-safe restore of the previous model's index (``restore``) and removal
of a source (``removal``). Protocols over the catalog and the index together, so they sit above
both; ``engine.home`` below them holds only the file helpers everything shares."""
