"""What the format readers share: the limits, a reader's claims (:class:`Reader`), reading a
file and a zip archive within bounds, the text clean-up, and decoding bytes that should be text.

A reader is ``read(data, where) -> (text, title, notes)``: the text as paragraphs separated by
blank lines, the title the document gives itself (or None), and notes for ``Document.fields``.
Every failure is an ``ExtractionError`` naming ``where`` and the reason.

Text that is neither UTF-8 nor marked by a byte-order mark is decoded with the encoding
charset-normalizer guesses from at most ``DETECT_BYTES`` of it (cp1252 when it guesses
nothing, or when cp1252 reads the bytes as well as its guess): a Russian or Japanese file
saved by an old editor reads as its words, not as cp1252 mojibake.
"""

from __future__ import annotations

import bisect
import importlib.util
import io
import os
import re
import stat
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from engine.ingest.documents import ExtractionError
from engine.ingest.walk import MAX_FILE_BYTES, open_regular

# --------------------------------------------------------------------------- limits

#: A document whose text is longer than this is not indexed (its name is): ~3,000 pages.
MAX_TEXT_CHARS = 6_000_000
#: Zip-based formats (DOCX, ODT, EPUB, XLSX, PPTX, ODS, ODP): what the archive's directory
#: says its members expand to is checked before anything is decompressed. A zip bomb named
#: .docx, or a 205 KB ODT holding a 200 MB paragraph, is refused instead of parsed.
MAX_UNZIPPED_BYTES = 256 * 1024 * 1024
#: ... and past this size, at most this many times the archive's own size (office XML
#: compresses 5-20 times).
ZIP_RATIO_FROM = 16 * 1024 * 1024
MAX_ZIP_RATIO = 100
# Share of control characters above which decoded "text" is taken to be binary data.
MAX_CONTROL_SHARE = 0.05
#: Text that is not UTF-8: how many of its bytes charset-normalizer sees to guess its
#: encoding (the whole is then decoded with the guess). Enough for a clear guess, and a
#: bounded cost however large the file.
DETECT_BYTES = 64 * 1024

#: The reason for bytes that should be text but are not.
BINARY_DATA = "binary data, not text"

CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
SPACES = re.compile(r"[ \t\u00a0]+")
_MANY_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")


# --------------------------------------------------------------------------- a reader's claims

#: What a reader returns: the text, the document's own title (or None), notes for its fields.
Extracted = tuple[str, "str | None", dict[str, str]]
Extractor = Callable[[bytes, str], Extracted]


@dataclass(frozen=True)
class Reader:
    """One format: its kind (``Document.kind``), the function that reads its bytes, and what
    it claims -- the file extensions and MIME types that name it, how its bytes are told
    apart when nothing names them (``sniff`` on the first 4 KiB; a zip archive by its
    ``mimetype`` member or by a member it always holds) -- and the modules it ``needs``
    installed. ``read`` is None for a kind read elsewhere (e-mail: ``engine.ingest.mail``).
    ``attachments`` False: read as a file on disk only; an e-mail's attachment of this kind is
    indexed by its name (pictures: OCR would read every signature logo of a mailbox)."""

    kind: str
    read: Extractor | None
    extensions: tuple[str, ...] = ()
    mime_types: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    zip_mimetype: bytes | None = None
    zip_member: str | None = None
    attachments: bool = True

    def missing(self) -> list[str]:
        """The modules in ``needs`` that are not installed."""
        return [name for name in self.needs if importlib.util.find_spec(name) is None]


# --------------------------------------------------------------------------- helpers


def _fmt_size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def too_large(size: int, limit: int) -> str:
    """The reason text for a unit over the size limit."""
    return f"file too large ({_fmt_size(size)} > {_fmt_size(limit)} limit)"


def iso_utc(timestamp: float) -> str:
    """A POSIX time as ISO 8601 in UTC, to the second."""
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def join_paragraphs(paragraphs: list[str]) -> str:
    """Non-empty paragraphs, each trimmed, separated by one blank line."""
    return "\n\n".join(p for p in (q.strip() for q in paragraphs) if p)


def tidy(text: str) -> str:
    """Unify line ends, trim trailing spaces, collapse runs of blank lines to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _MANY_BLANKS.sub("\n\n", text).strip()


def heading_starts(text: str, headings: list[str]) -> list[tuple[int, str]]:
    """Where each of a document's ``headings`` (in reading order) starts in ``text``, its text
    as read: a heading is a paragraph of its own (spaces aside), found after the last one
    found, so the same words earlier in the text ("see Installation below") are not taken for
    it; one not found as a paragraph (a heading inside a table) is left out."""
    where: dict[str, list[int]] = {}
    at = 0
    for paragraph in text.split("\n\n"):
        where.setdefault(" ".join(paragraph.split()), []).append(at)
        at += len(paragraph) + 2
    starts: list[tuple[int, str]] = []
    after = 0
    for heading in headings:
        key = " ".join(heading.split())
        offsets = where.get(key) if key else None
        i = bisect.bisect_left(offsets, after) if offsets else 0
        if offsets and i < len(offsets):
            starts.append((offsets[i], key))
            after = offsets[i] + 1
    return starts


def clean(text: str) -> str:
    """``tidy`` text with its control characters dropped."""
    return tidy(CONTROL.sub("", text))


def read_file(path: Path, max_bytes: int = MAX_FILE_BYTES) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file, refusing (without reading) one over ``max_bytes``."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ExtractionError(path, exc.strerror or str(exc)) from None
    if stat.S_ISDIR(st.st_mode):
        raise ExtractionError(path, "is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        # Opening a FIFO would block until a writer appears; devices may never end.
        raise ExtractionError(path, "not a regular file (FIFO, socket or device)")
    if st.st_size > max_bytes:
        raise ExtractionError(path, too_large(st.st_size, max_bytes))
    try:
        with open_regular(path) as handle:  # never blocks on a file swapped for a FIFO
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ExtractionError(path, exc.strerror or str(exc)) from None
    if len(data) > max_bytes:  # grew between stat and read
        raise ExtractionError(path, too_large(len(data), max_bytes))
    return data, st


# --------------------------------------------------------------------------- zip archives


def check_zip(data: bytes, where: str, name: str) -> None:
    """Refuse an archive that would expand too much (see ``MAX_UNZIPPED_BYTES``), from the
    sizes in its directory (Python's zipfile never reads past a member's stated size)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ExtractionError(where, f"corrupt {name}: {type(exc).__name__}: {exc}") from None
    total = sum(max(0, i.file_size) for i in infos)
    if total > MAX_UNZIPPED_BYTES or (total > ZIP_RATIO_FROM and total > MAX_ZIP_RATIO * max(1, len(data))):
        raise ExtractionError(
            where,
            f"{name} expands to {_fmt_size(total)} from {_fmt_size(len(data))} (limit {_fmt_size(MAX_UNZIPPED_BYTES)},"
            f" or {MAX_ZIP_RATIO}x past {_fmt_size(ZIP_RATIO_FROM)}): a zip bomb or a damaged file; skipped",
        )
    if len(infos) > 100_000:
        raise ExtractionError(where, f"{name} holds {len(infos):,} parts: skipped")


def open_zipped(data: bytes, where: str, name: str, opener: Callable[[io.BytesIO], Any]) -> Any:
    """A zip-based document (DOCX, XLSX, PPTX, EPUB, OpenDocument) opened by its library's
    ``opener``, after ``check_zip``; whatever the library raises is "corrupt NAME" naming why."""
    check_zip(data, where, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # openpyxl and ebooklib warn about what they skip
            return opener(io.BytesIO(data))
    except Exception as exc:
        raise ExtractionError(where, f"corrupt {name}: {type(exc).__name__}: {exc}") from None


def zip_contents(data: bytes) -> tuple[set[str], bytes]:
    """The member names of a zip archive, and its ``mimetype`` member (EPUB, OpenDocument;
    ``b""`` when absent or over 256 bytes). Raises what zipfile raises on a damaged archive."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        small = "mimetype" in names and archive.getinfo("mimetype").file_size < 256
        return names, archive.read("mimetype").strip() if small else b""


_MAIL_HEADER = re.compile(
    rb"^(?:From|To|Subject|Date|Message-ID|Received|Return-Path|MIME-Version|Delivered-To|Reply-To|Cc):[ \t]",
    re.I | re.M,
)


def looks_like_mail(head: bytes) -> bool:
    """Whether a file's first bytes are an e-mail's header: a header line first, and two of
    the usual ones before the first blank line."""
    header_block = head.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    first_is_header = re.match(rb"[A-Za-z][A-Za-z0-9-]*:[ \t]", head) is not None
    return first_is_header and len(_MAIL_HEADER.findall(header_block)) >= 2


# --------------------------------------------------------------------------- text decoding


def decode_text(data: bytes, where: str) -> tuple[str, dict[str, str]]:
    """Decode bytes that should be text; returns the text and notes for ``Document.fields``.

    A byte-order mark decides (UTF-8, UTF-16, UTF-32); otherwise strict UTF-8; otherwise the
    encoding charset-normalizer guesses (``legacy_decode``), noted in the fields. NUL bytes
    without a UTF-16/32 BOM, or too many control characters, mean binary data.
    """
    notes: dict[str, str] = {}
    if data.startswith(b"\xef\xbb\xbf"):
        text, encoding = data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    elif data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        text, encoding = data.decode("utf-32", errors="replace"), "utf-32"
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text, encoding = data.decode("utf-16", errors="replace"), "utf-16"
    else:
        if b"\x00" in data:
            raise ExtractionError(where, BINARY_DATA)
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError as exc:
            text, encoding = legacy_decode(data, exc.start)
            notes["encoding"] = encoding
            notes["note"] = f"not valid UTF-8; decoded as {encoding}"
    sample = text[:65536]
    if sample and len(CONTROL.findall(sample)) > MAX_CONTROL_SHARE * len(sample):
        raise ExtractionError(where, BINARY_DATA)
    if encoding != "utf-8" and "encoding" not in notes:
        notes["encoding"] = encoding
    return text, notes


def legacy_decode(data: bytes, first_bad: int) -> tuple[str, str]:
    """Text that is not UTF-8 (its first invalid byte at ``first_bad``) and the encoding it
    was decoded with: charset-normalizer's guess from a sample, invalid bytes replaced; else
    cp1252, or latin-1 for the five bytes cp1252 leaves undefined."""
    guess = guess_encoding(detection_sample(data, first_bad))
    if guess is not None and guess != "cp1252":
        try:
            return data.decode(guess, errors="replace"), guess
        except LookupError:  # a name this Python does not know: the fallback reads it
            pass
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


# Bytes that are never part of a multi-byte character in an ASCII-compatible encoding
# (Shift-JIS, EUC, GBK, GB18030, Big5 use 0x30 and up): a sample cut after one splits none.
_CUT = re.compile(rb"[\x01-\x2f]")


def detection_sample(data: bytes, first_bad: int) -> bytes:
    """At most ``DETECT_BYTES`` of ``data`` for the guess: from a little before its first byte
    that is not UTF-8 (where the evidence starts: a long ASCII head says nothing), cut at
    both ends between characters."""
    start = max(0, first_bad - 1024)
    if start:
        found = _CUT.search(data, start, first_bad)
        start = found.end() if found else first_bad
    end = start + DETECT_BYTES
    if end < len(data):
        found = _CUT.search(data[max(start, end - 4096) : end][::-1])
        end -= found.start() if found else 0
    return data[start:end]


def guess_encoding(sample: bytes) -> str | None:
    """charset-normalizer's best guess for a sample of text, None when it has none (binary
    data). cp1252 wins a tie: on Western text its guess is often cp1250 or a Mac code page,
    which read as well by its measures but turn "crème" into "crčme"."""
    from charset_normalizer import from_bytes

    matches = from_bytes(sample)
    best = matches.best()
    if best is None:
        return None
    for match in matches:
        as_good = match.chaos <= best.chaos and match.coherence >= best.coherence
        if as_good and "cp1252" in match.could_be_from_charset:
            return "cp1252"
    return best.encoding
