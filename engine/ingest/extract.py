"""A unit (a file, an mbox file or a Maildir folder) as Documents: the one entry point
the indexer, the extraction worker and the adaptation corpus read files through.

``extract(path)`` returns a list of Documents for one unit; ``iter_extract(path)`` yields
Documents and per-message or per-attachment errors, for callers that must not lose them.
Formats are read by :mod:`engine.ingest.readers`, e-mail by :mod:`engine.ingest.mail`, Outlook's
.msg files and .pst/.ost stores by :mod:`engine.ingest.outlook`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from engine.ingest.documents import Document, ExtractionError, UnsupportedFormat
from engine.ingest.mail import apple_mailbox, emlx_message, iter_mailbox, parse_message
from engine.ingest.outlook import is_msg, iter_outlook_store, msg_documents
from engine.ingest.readers import (
    EXTRACTORS,
    UNSUPPORTED_FORMATS,
    document_from_bytes,
    kind_for_name,
    sniff_kind,
)
from engine.ingest.readers.common import BINARY_DATA, MAX_FILE_BYTES, iso_utc, read_file
from engine.ingest.walk import classify

log = logging.getLogger(__name__)


def iter_extract(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Document | ExtractionError]:
    """Documents of one unit from ``engine.ingest.walk.walk``, and errors for the parts that failed.

    A file gives one Document (an e-mail file: the message and its attachments); an mbox
    file or Maildir folder gives one per message. A failure of the whole unit is yielded
    as a single ExtractionError; nothing is raised.
    """
    path = Path(os.path.abspath(path))
    try:
        unit = classify(path)
    except OSError as exc:
        yield ExtractionError(path, exc.strerror or str(exc))
        return
    if unit in ("maildir", "mbox"):
        yield from iter_mailbox(path, max_bytes=max_bytes)
        return
    if unit == "outlook":
        yield from iter_outlook_store(path, max_bytes=max_bytes)
        return
    if unit == "dir":
        yield ExtractionError(path, "is a folder, not a file or mail store")
        return
    try:
        unsupported = UNSUPPORTED_FORMATS.get(path.suffix.lower())
        if unsupported:  # not even read
            raise UnsupportedFormat(path, unsupported)
        data, st = read_file(path, max_bytes)
        kind = kind_for_name(path.name, file=True)
        if not data or data.isspace():
            # Empty (or whitespace-only) file: one Document with no text, not an error,
            # so the catalog knows the file and does not retry it on every run.
            fields = {"date": iso_utc(st.st_mtime), "note": "empty file"}
            yield Document(
                str(path), str(path), kind if kind in EXTRACTORS else "text", path.name, "", fields
            )
            return
        sniffed = kind is None
        if kind is None:
            kind = sniff_kind(data)
        unknown = UnsupportedFormat(
            path,
            "binary data in a format that is not supported" + (f" ({path.suffix})" if path.suffix else ""),
        )
        if kind is None:
            raise unknown
        if kind == "email":
            if is_msg(data):  # Outlook's .msg
                yield from msg_documents(
                    data, key=str(path), path=str(path), mailbox=path.parent.name, max_bytes=max_bytes
                )
                return
            if path.suffix.lower() == ".emlx":
                data, mailbox = emlx_message(data), apple_mailbox(path)
            else:
                mailbox = path.parent.name
            yield from parse_message(data, key=str(path), path=str(path), mailbox=mailbox, max_bytes=max_bytes)
            return
        fields = {"date": iso_utc(st.st_mtime)}
        try:
            doc = document_from_bytes(
                data, kind, key=str(path), path=str(path), title=path.name, fields=fields
            )
        except ExtractionError as exc:
            if sniffed and exc.reason == BINARY_DATA:  # no extension we know, and not text either
                raise unknown from None
            raise
        yield doc
    except ExtractionError as exc:
        yield exc
    except (MemoryError, RecursionError):
        raise  # a limit, not a damaged file: the extraction worker reports it
    except Exception as exc:  # a library bug on odd input must not stop an indexing run
        yield ExtractionError(path, f"extraction failed: {type(exc).__name__}: {exc}")


def name_only_document(path: str | Path) -> Document:
    """A file whose content could not be read, or is in a format that is not read, as a
    Document with no text: the indexer still indexes its name. Its kind is the one its
    extension names (``other`` when none, or for an e-mail file, which would need headers)."""
    p = Path(path)
    kind = kind_for_name(p.name, file=True)
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):  # undated: the failure this document stands in for says why
        fields["date"] = iso_utc(os.stat(p).st_mtime)
    return Document(str(path), str(path), kind if kind and kind != "email" else "other", p.name, "", fields)


def extract(path: Path, max_bytes: int = MAX_FILE_BYTES) -> list[Document]:
    """Documents of one unit (file, mbox file or Maildir folder); raises ExtractionError if it fails.

    For a single file any failure raises. For a mail store (or an e-mail with attachments),
    a bad message or attachment is logged and skipped so the rest is kept -- use
    ``iter_extract`` to receive those errors. An empty file gives one Document with empty
    text (so the catalog knows the file), not an error.
    """
    docs: list[Document] = []
    errors: list[ExtractionError] = []
    for item in iter_extract(path, max_bytes=max_bytes):
        if isinstance(item, ExtractionError):
            errors.append(item)
        else:
            docs.append(item)
    if errors and not docs:
        raise errors[0]
    for error in errors:
        log.warning("skipped: %s", error)
    return docs
