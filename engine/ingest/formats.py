"""The names of the one-module format reader it was, for the callers that still import them
(``engine.ingest.mail``, ``app.welcome``); the readers are :mod:`engine.ingest.readers`, one
module per format behind a registry.

Setting one of these names here (a test's ``monkeypatch.setattr(formats, "open_regular", ...)``)
sets it in every reader module that holds it, as it did when they were one module.
"""

from __future__ import annotations

import sys
import types

from engine.ingest.readers import (
    EXTENSION_KINDS,
    EXTRACTORS,
    MIME_KINDS,
    UNSUPPORTED_FORMATS,
    document_from_bytes,
    kind_for_name,
    sniff_kind,
)
from engine.ingest.readers.common import (
    BINARY_DATA,
    MAX_CONTROL_SHARE,
    MAX_FILE_BYTES,
    MAX_TEXT_CHARS,
    MAX_UNZIPPED_BYTES,
    MAX_ZIP_RATIO,
    ZIP_RATIO_FROM,
    check_zip,
    decode_text,
    iso_utc,
    join_paragraphs,
    open_regular,
    read_file,
    tidy,
    too_large,
)
from engine.ingest.readers.html import MAX_HTML_DEPTH, html_depth, html_to_text
from engine.ingest.readers.tables import MAX_TABLE_CELLS, MAX_TABLE_CHARS
from engine.ingest.readers.text import markdown_to_text

__all__ = [
    "BINARY_DATA",
    "EXTENSION_KINDS",
    "EXTRACTORS",
    "MAX_CONTROL_SHARE",
    "MAX_FILE_BYTES",
    "MAX_HTML_DEPTH",
    "MAX_TABLE_CELLS",
    "MAX_TABLE_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_UNZIPPED_BYTES",
    "MAX_ZIP_RATIO",
    "MIME_KINDS",
    "UNSUPPORTED_FORMATS",
    "ZIP_RATIO_FROM",
    "check_zip",
    "decode_text",
    "document_from_bytes",
    "html_depth",
    "html_to_text",
    "iso_utc",
    "join_paragraphs",
    "kind_for_name",
    "markdown_to_text",
    "open_regular",
    "read_file",
    "sniff_kind",
    "tidy",
    "too_large",
]

_READERS = "engine.ingest.readers"


class _Forwarding(types.ModuleType):
    """This module, setting a name it re-exports in the reader modules too (where it is read)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in __all__:
            for module_name, module in list(sys.modules.items()):
                ours = module_name == _READERS or module_name.startswith(_READERS + ".")
                if ours and name in vars(module):
                    setattr(module, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Forwarding
