"""Turn the bytes of a file (or of an attachment) into a plain text Document: one reader per
format, behind one registry, :data:`READERS`.

Each format goes through a well-kept library (pypdf, python-docx, odfpy, ebooklib, striprtf,
beautifulsoup4 with lxml, markdown-it-py, openpyxl, python-pptx; charset-normalizer for text
that is not UTF-8) and comes out as paragraphs separated by blank lines, because
``engine.ingest.segment`` cuts passages on blank lines (a spreadsheet's sheet or a
presentation's slide is one paragraph, a line per row or text paragraph: see
``engine.ingest.documents.LINE_KINDS``). Every failure -- a corrupt or encrypted document,
binary data posing as text, a zip bomb -- becomes an ``ExtractionError`` naming the file and
the reason, so one bad file never stops an indexing run; a format that is not read at all
(``UNSUPPORTED_FORMATS``, unknown binary data) is an ``UnsupportedFormat`` error, which the
indexer records as skipped.

The modules: ``common`` (limits, reading a file and a zip within bounds, text clean-up and
decoding, the :class:`~engine.ingest.readers.common.Reader` record), ``text`` (plain text,
Markdown), ``html``, ``pdf``, ``office`` (DOCX, XLSX, PPTX), ``opendocument`` (ODT, ODS,
ODP), ``tables`` (what sheets and slides share), ``epub``, ``rtf``, ``ocr`` (pictures, and
the PDF pages without a text layer, by RapidOCR). The unit-level entry points are in
:mod:`engine.ingest.extract`, e-mail (with its attachments) in :mod:`engine.ingest.mail`,
Outlook's .msg files and .pst/.ost stores in :mod:`engine.ingest.outlook`, all built on
:func:`document_from_bytes`. docs/formats.md lists every format, its library and licence.

Everything about a format is its ``Reader`` entry: :data:`EXTENSION_KINDS`, :data:`MIME_KINDS`,
:data:`EXTRACTORS` and :func:`sniff_kind` are derived from :data:`READERS`. Adding a format is
one new module and one entry. FictionBook, say, in ``engine/ingest/readers/fb2.py``::

    from engine.ingest.readers.common import Extracted, clean, decode_text

    def read_fb2(data: bytes, where: str) -> Extracted:
        from lxml import etree
        ...
        return clean(text), title, notes

and, ``fb2`` added to the ``from engine.ingest.readers import ...`` line, in :data:`READERS`::

    Reader("fb2", fb2.read_fb2, extensions=(".fb2",), mime_types=("application/x-fictionbook+xml",),
           needs=("lxml",), sniff=lambda head: b"<FictionBook" in head[:512]),

(a zip-based format names its ``zip_mimetype`` or a ``zip_member`` instead of ``sniff``).
"""

from __future__ import annotations

import os
import zipfile
import zlib

from engine.ingest.documents import Document
from engine.ingest.readers import epub, html, ocr, office, opendocument, pdf, rtf, text
from engine.ingest.readers.common import Extractor, Reader, looks_like_mail, zip_contents

_ODF = "application/vnd.oasis.opendocument."
_OOXML = "application/vnd.openxmlformats-officedocument."
_HTML = ("bs4", "lxml")

#: Every format read, in the order a zip archive's members are tried (``sniff_kind``).
READERS: tuple[Reader, ...] = (
    Reader(
        "text",
        text.read_text,
        extensions=(".txt", ".text"),
        mime_types=("text/plain",),
        needs=("charset_normalizer",),
    ),
    Reader(
        "markdown",
        text.read_markdown,
        extensions=(".md", ".markdown", ".mdown", ".mkd"),
        mime_types=("text/markdown", "text/x-markdown"),
        needs=("markdown_it", *_HTML, "charset_normalizer"),
    ),
    Reader(
        "html",
        html.read_html,
        extensions=(".html", ".htm", ".xhtml"),
        mime_types=("text/html", "application/xhtml+xml"),
        needs=(*_HTML, "charset_normalizer"),
        sniff=html.looks_like_html,
    ),
    Reader(
        "pdf",
        pdf.read_pdf,
        extensions=(".pdf",),
        mime_types=("application/pdf",),
        needs=("pypdf",),
        sniff=pdf.looks_like_pdf,
    ),
    Reader(
        "docx",
        office.read_docx,
        extensions=(".docx",),
        mime_types=(_OOXML + "wordprocessingml.document",),
        needs=("docx", "lxml"),
        zip_member="word/document.xml",
    ),
    Reader(
        "odt",
        opendocument.read_odt,
        extensions=(".odt",),
        mime_types=(_ODF + "text",),
        needs=("odf",),
        zip_mimetype=(_ODF + "text").encode(),
    ),
    Reader(
        "epub",
        epub.read_epub,
        extensions=(".epub",),
        mime_types=("application/epub+zip",),
        needs=("ebooklib", *_HTML),
        zip_mimetype=b"application/epub+zip",
    ),
    Reader(
        "rtf",
        rtf.read_rtf,
        extensions=(".rtf",),
        mime_types=("application/rtf", "text/rtf"),
        needs=("striprtf",),
        sniff=rtf.looks_like_rtf,
    ),
    # read by engine.ingest.mail (a message and its attachments), which extract hands it to;
    # .emlx: Apple Mail's, one message per file (mail.emlx_message); .msg: Outlook's, an OLE
    # compound file of MAPI properties (engine.ingest.outlook), told apart by its first bytes
    Reader(
        "email",
        None,
        extensions=(".eml", ".emlx", ".msg"),
        mime_types=("message/rfc822", "application/vnd.ms-outlook"),
        needs=(*_HTML, "olefile"),
        sniff=looks_like_mail,
    ),
    Reader(
        "xlsx",
        office.read_xlsx,
        extensions=(".xlsx", ".xlsm"),
        mime_types=(_OOXML + "spreadsheetml.sheet",),
        needs=("openpyxl",),
        zip_member="xl/workbook.xml",
    ),
    Reader(
        "pptx",
        office.read_pptx,
        extensions=(".pptx",),
        mime_types=(_OOXML + "presentationml.presentation",),
        needs=("pptx",),
        zip_member="ppt/presentation.xml",
    ),
    Reader(
        "ods",
        opendocument.read_ods,
        extensions=(".ods",),
        mime_types=(_ODF + "spreadsheet",),
        needs=("odf",),
        zip_mimetype=(_ODF + "spreadsheet").encode(),
    ),
    Reader(
        "odp",
        opendocument.read_odp,
        extensions=(".odp",),
        mime_types=(_ODF + "presentation",),
        needs=("odf",),
        zip_mimetype=(_ODF + "presentation").encode(),
    ),
    # by name only (no sniffing: binary data of no known kind stays "not supported"), files on
    # disk only (an attached picture is found by its name), walked only while OCR is on
    # (engine.ingest.walk.OCR_IMAGE_EXTENSIONS)
    Reader(
        "image",
        ocr.read_image,
        extensions=(".png", ".jpg", ".jpeg", ".tif", ".tiff"),
        mime_types=("image/png", "image/jpeg", "image/tiff"),
        needs=("PIL", "rapidocr", "onnxruntime", "cv2"),  # without them a picture is listed as skipped
        attachments=False,
    ),
)

#: The kind of text whose bytes no reader claims (``sniff_kind``).
TEXT_KIND = "text"

READER_BY_KIND: dict[str, Reader] = {r.kind: r for r in READERS}
EXTENSION_KINDS: dict[str, str] = {ext: r.kind for r in READERS for ext in r.extensions}
MIME_KINDS: dict[str, str] = {mime: r.kind for r in READERS for mime in r.mime_types}
#: The kinds read here, and their readers (not e-mail: ``engine.ingest.mail``).
EXTRACTORS: dict[str, Extractor] = {r.kind: r.read for r in READERS if r.read is not None}

#: Document formats that are recognised but not read, and what to do about them. Such a file
#: is indexed by its name only and listed as skipped with this reason.
UNSUPPORTED_FORMATS: dict[str, str] = {
    ".doc": "Word 97-2003 document (.doc) is not supported; save it as .docx to search its text",
    ".dot": "Word 97-2003 template (.dot) is not supported; save it as .docx to search its text",
    ".xls": "Excel 97-2003 workbook (.xls) is not supported; save it as .xlsx to search its text",
    ".ppt": "PowerPoint 97-2003 presentation (.ppt) is not supported; save it as .pptx to search its text",
    ".pps": "PowerPoint 97-2003 slide show (.pps) is not supported; save it as .pptx to search its text",
    ".pptm": "macro-enabled PowerPoint presentation (.pptm) is not supported; save it as .pptx to search its text",
    ".key": "Keynote presentation (.key) is not supported; export it as .pptx to search its text",
    ".numbers": "Numbers spreadsheet (.numbers) is not supported; export it as .xlsx to search its text",
    ".pages": "Pages document (.pages) is not supported; export it as .docx to search its text",
}


def sniff_kind(data: bytes) -> str | None:
    """The format of bytes whose name says nothing, from their first bytes; None for unknown binary."""
    head = data[:4096]
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(data)
    for reader in READERS:
        if reader.sniff is not None and reader.sniff(head):
            return reader.kind
    return TEXT_KIND


def _zip_kind(data: bytes) -> str | None:
    """The format of a zip archive: by its ``mimetype`` member (EPUB, OpenDocument), else by
    a member only that format holds (Office Open XML); None for any other archive."""
    try:
        names, mimetype = zip_contents(data)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError, EOFError, zlib.error):
        return None
    for reader in READERS:
        if reader.zip_mimetype is not None and reader.zip_mimetype == mimetype:
            return reader.kind
    for reader in READERS:
        if reader.zip_member is not None and reader.zip_member in names:
            return reader.kind
    return None


def kind_for_name(name: str, content_type: str | None = None, *, file: bool = False) -> str | None:
    """The format named by a file name's extension, else by a MIME type; None when neither says,
    and, unless ``file`` (a file on disk, not an attachment), for a kind read from files only."""
    kind = EXTENSION_KINDS.get(os.path.splitext(name)[1].lower())
    if kind is None and content_type:
        kind = MIME_KINDS.get(content_type.split(";")[0].strip().lower())
    if kind is not None and not file and not READER_BY_KIND[kind].attachments:
        return None
    return kind


def document_from_bytes(
    data: bytes,
    kind: str,
    *,
    key: str,
    path: str,
    title: str,
    fields: dict[str, str],
    parent_key: str | None = None,
) -> Document:
    """Run one format's reader over bytes; errors name ``key``."""
    content, found_title, notes = EXTRACTORS[kind](data, key)
    out_fields = dict(fields)
    if found_title:
        out_fields["title"] = found_title
    out_fields.update(notes)
    return Document(
        key=key,
        path=path,
        kind=kind,
        title=found_title or title,
        text=content,
        fields=out_fields,
        parent_key=parent_key,
    )
