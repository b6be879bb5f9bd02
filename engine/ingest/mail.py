"""E-mail: ``.eml`` files, Apple Mail's ``.emlx``, mbox files and Maildir folders, as Documents
(Outlook's ``.msg`` files and ``.pst``/``.ost`` stores: :mod:`engine.ingest.outlook`).

A message is its Document (its fields from :mod:`engine.ingest.mailheaders`, the one owner of
e-mail semantics; its text from :mod:`engine.ingest.mailbody`: its own words, then what it
quotes), then its attachments' Documents: attachments in a supported format become
Documents of their own pointing at the message, others are found by their name. In an mbox
file or Maildir folder a bad message is yielded as an ExtractionError and the rest of the
store goes on. This module re-exports the names of those two modules for older callers.
"""

from __future__ import annotations

import logging
import mailbox as mailbox_mod
import os
from collections.abc import Callable, Iterator
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path

from engine.ingest.documents import Document, ExtractionError, UnsupportedFormat
from engine.ingest.formats import (
    MAX_FILE_BYTES,
    UNSUPPORTED_FORMATS,
    document_from_bytes,
    kind_for_name,
    read_file,
    sniff_kind,
    too_large,
)
from engine.ingest.mailbody import MAX_LIBRARY_CHARS, MAX_QUOTED_CHARS, body_text, clean_body, quoted_history
from engine.ingest.mailheaders import (
    ADDRESS,
    EMAIL_ADDRESS,
    FORWARD_SUBJECT,
    LINE_CHARS,
    PEOPLE_PER_LINE,
    QUOTED_AT,
    RECIPIENT_FIELDS,
    addresses,
    cut_list,
    message_date,
    message_fields,
    people_of,
    sender_address,
)
from engine.ingest.mailheaders import _comma_list as _comma_list
from engine.ingest.mailheaders import _header as _header
from engine.ingest.mailheaders import _ids as _ids
from engine.ingest.walk import is_maildir

__all__ = [
    "ADDRESS",
    "EMAIL_ADDRESS",
    "FORWARD_SUBJECT",
    "LINE_CHARS",
    "MAX_LIBRARY_CHARS",
    "MAX_NESTING",
    "MAX_QUOTED_CHARS",
    "MESSAGE_READERS",
    "PEOPLE_PER_LINE",
    "QUOTED_AT",
    "RECIPIENT_FIELDS",
    "ReadOnlyMbox",
    "addresses",
    "apple_mailbox",
    "body_text",
    "clean_body",
    "cut_list",
    "emlx_message",
    "extract_bytes",
    "iter_mailbox",
    "message_date",
    "message_fields",
    "parse_message",
    "people_of",
    "quoted_history",
    "sender_address",
]

# Malformed mail is ordinary: each fallback below keeps the content and logs at DEBUG (the
# extraction worker's log goes nowhere; in-process extraction shows them with -v).
log = logging.getLogger(__name__)

# Attached messages inside attached messages are followed this deep.
MAX_NESTING = 3


# --------------------------------------------------------------------------- body and attachments


def _part_text(part: Message) -> str:
    """A text part's content as str, surviving unknown or lying charsets."""
    try:
        content = part.get_content()  # type: ignore[attr-defined]
        if isinstance(content, str):
            return content
    except Exception as exc:  # an unknown or lying charset: decoded by hand below
        log.debug("text part decoded by hand: %s: %s", type(exc).__name__, exc)
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload.decode("cp1252", errors="replace")


def _attachment_parts(msg: EmailMessage, body: Message | None) -> list[Message]:
    """Leaf parts that are not the body: files, attached messages, inline non-text parts."""
    found: list[Message] = []

    def visit(part: Message, top: bool) -> None:
        if part is body:
            return
        ctype = part.get_content_type()
        if ctype == "message/rfc822" and not top:
            found.append(part)
            return
        if part.is_multipart():
            for sub in part.get_payload():  # type: ignore[union-attr]
                if isinstance(sub, Message):
                    visit(sub, False)
            return
        if (
            part.get_filename()
            or part.get_content_disposition() == "attachment"
            or part.get_content_maintype() != "text"
        ):
            found.append(part)

    visit(msg, True)
    return found


def _attachment_docs(
    part: Message, n: int, *, key: str, path: str, date: str, depth: int, max_bytes: int
) -> Iterator[Document | ExtractionError]:
    ctype = part.get_content_type()
    filename = _safe_filename(part)
    if ctype == "message/rfc822":
        inner = part.get_payload()
        inner_msg = inner[0] if isinstance(inner, list) and inner else inner
        if not isinstance(inner_msg, Message):
            return
        sub_key = f"{key}/attachment/{n}:{filename or 'message.eml'}"
        if depth >= MAX_NESTING:
            yield ExtractionError(sub_key, f"message nested more than {MAX_NESTING} deep: not read")
            return
        yield from _message_docs(
            inner_msg,
            key=sub_key,
            path=path,
            mailbox="",
            parent_key=key,
            depth=depth + 1,
            max_bytes=max_bytes,
        )
        return
    if kind_for_name(filename, ctype) is None:
        # images, archives, unknown binaries: not read. One attached as a named file is found
        # by its name, as such a file on disk is; an inline picture (a signature's logo) is not
        if filename and part.get_content_disposition() == "attachment":
            yield Document(
                f"{key}/attachment/{n}:{filename}", path, "other", filename, "", {"date": date, "filename": filename}, key
            )
        return
    sub_key = f"{key}/attachment/{n}:{filename or ctype}"
    try:
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            data = b""
        docs = extract_bytes(
            data,
            filename,
            key=sub_key,
            path=path,
            parent_key=key,
            content_type=ctype,
            fields={"date": date, "filename": filename},
            max_bytes=max_bytes,
        )
    except ExtractionError as exc:
        yield exc
        return
    except Exception as exc:
        yield ExtractionError(sub_key, f"attachment failed: {type(exc).__name__}: {exc}")
        return
    yield from docs


def _safe_filename(part: Message) -> str:
    try:
        name = part.get_filename() or ""
    except Exception as exc:  # a malformed Content-Disposition: the attachment goes unnamed
        log.debug("attachment name unreadable: %s: %s", type(exc).__name__, exc)
        name = ""
    return " ".join(name.replace("/", "_").replace("\\", "_").split())


def _message_docs(
    msg: Message,
    *,
    key: str,
    path: str,
    mailbox: str,
    parent_key: str | None = None,
    depth: int = 0,
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[Document | ExtractionError]:
    """The message's Document, then its attachments' Documents (or their errors)."""
    try:
        if not msg.keys():
            raise ValueError("no header fields")
        fields = message_fields(msg, mailbox)
        body = msg.get_body(preferencelist=("plain", "html")) if isinstance(msg, EmailMessage) else None
        text = ""
        if body is not None:
            text = body_text(_part_text(body), html=body.get_content_subtype() == "html", fields=fields)
        parts = _attachment_parts(msg, body) if isinstance(msg, EmailMessage) else []
    except Exception as exc:
        yield ExtractionError(key, f"malformed message: {exc}")
        return
    yield Document(
        key=key,
        path=path,
        kind="email",
        title=fields["subject"] or "(no subject)",
        text=text,
        fields=fields,
        parent_key=parent_key,
    )
    for n, part in enumerate(parts, start=1):
        yield from _attachment_docs(
            part, n, key=key, path=path, date=fields["date"], depth=depth, max_bytes=max_bytes
        )


def _parse(data: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(data)  # type: ignore[return-value]


def emlx_message(data: bytes) -> bytes:
    """The RFC 822 message of an Apple Mail ``.emlx`` file: its first line is the message's
    length in bytes, then the message, then a property list of Apple Mail's flags (not the
    message's). A file without that first line is read as a message whole. A ``.partial.emlx``
    is the same message with its attachments stored beside it; its text is all here."""
    head, newline, rest = data.partition(b"\n")
    if newline and head.strip().isdigit():
        return rest[: int(head.strip())]
    return data


def apple_mailbox(path: Path) -> str:
    """The Apple Mail mailbox of a ``.emlx`` file: the nearest folder named ``NAME.mbox``
    (``~/Library/Mail/V10/<account>/INBOX.mbox/<id>/Data/0/1/Messages/101.emlx`` is in
    ``INBOX``), else the folder holding it."""
    for parent in path.parents:
        if parent.suffix.lower() == ".mbox" and parent.stem:
            return parent.stem
    return path.parent.name


def parse_message(
    data: bytes,
    *,
    key: str,
    path: str,
    mailbox: str,
    parent_key: str | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[Document | ExtractionError]:
    """Documents of one RFC 822 message (the message first, then attachments) or errors."""
    try:
        msg = _parse(data)
    except Exception as exc:
        yield ExtractionError(key, f"malformed message: {exc}")
        return
    yield from _message_docs(
        msg, key=key, path=path, mailbox=mailbox, parent_key=parent_key, max_bytes=max_bytes
    )


# --------------------------------------------------------------------------- attachments

#: Readers of an attached message that is not RFC 822, tried in order on its bytes: (is it
#: one, its documents as ``parse_message`` gives them). ``engine.ingest.outlook`` adds
#: Outlook's .msg when it is imported (``engine.ingest.extract`` imports it); this module
#: cannot import it, as it imports this one.
MESSAGE_READERS: list[tuple[Callable[[bytes], bool], Callable[..., Iterator[Document | ExtractionError]]]] = []


def extract_bytes(
    data: bytes,
    filename: str,
    *,
    key: str,
    path: str,
    parent_key: str | None = None,
    content_type: str | None = None,
    fields: dict[str, str] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> list[Document]:
    """Documents from in-memory bytes (an e-mail attachment): format from name, MIME type, then content.

    Raises ExtractionError naming ``key`` for unsupported formats and damaged content.
    """
    if len(data) > max_bytes:
        raise ExtractionError(key, too_large(len(data), max_bytes))
    kind = kind_for_name(filename, content_type) or sniff_kind(data)
    if kind is None:
        ext = os.path.splitext(filename)[1].lower()
        raise UnsupportedFormat(key, UNSUPPORTED_FORMATS.get(ext, "unsupported format"))
    if kind == "email":
        read = next((read for is_it, read in MESSAGE_READERS if is_it(data)), parse_message)
        items = list(read(data, key=key, path=path, mailbox="", parent_key=parent_key, max_bytes=max_bytes))
        if items and isinstance(items[0], ExtractionError):
            raise items[0]
        return [d for d in items if isinstance(d, Document)]
    return [
        document_from_bytes(
            data,
            kind,
            key=key,
            path=path,
            title=filename or key,
            fields=fields or {},
            parent_key=parent_key,
        )
    ]


# --------------------------------------------------------------------------- stores


def _maildir_files(folder: Path) -> list[Path]:
    """The messages of a Maildir. An entry that is not a file -- a sub-folder, or a link
    that cannot be resolved (a symbolic link loop) -- is left out, never the whole folder:
    it is listed, so its error is reported by :func:`iter_mailbox`."""
    files: list[Path] = []
    for sub in ("new", "cur"):
        try:
            with os.scandir(folder / sub) as it:
                for e in it:
                    if e.name.startswith("."):
                        continue
                    try:
                        if e.is_dir():
                            continue
                    except OSError:  # a link loop: read_file reports it
                        pass
                    files.append(Path(e.path))
        except FileNotFoundError:
            continue
    return sorted(files, key=lambda p: p.name)


def _store_key(store: str, data_msg: Message, fallback: str, seen: set[str]) -> str:
    ids = _ids(_header(data_msg, "Message-ID"))
    key = f"{store}#{ids[0]}" if ids else f"{store}#{fallback}"
    if key in seen:  # the same message stored twice: keys must stay unique
        key = f"{store}#{fallback}"
    seen.add(key)
    return key


class ReadOnlyMbox(mailbox_mod.mbox):
    """An mbox that is never opened for writing. Python's ``mailbox.mbox`` opens its file
    ``rb+`` (read-write) whenever it may, so a search tool reading a user's mail store would
    hold it open for writing; this one opens it ``rb`` and has nothing to flush."""

    def __init__(self, path: str) -> None:
        self._message_factory = mailbox_mod.mboxMessage
        mailbox_mod.Mailbox.__init__(self, path, None, False)
        self._file = open(self._path, "rb")  # noqa: SIM115 - closed by close()
        self._toc = None
        self._next_key = 0
        self._pending = False
        self._pending_sync = False
        self._locked = False
        self._file_length = None


def iter_mailbox(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Document | ExtractionError]:
    """Documents of every message in an mbox file or Maildir folder; a bad message yields an error.

    Keys are ``"PATH#<message-id>"``, or ``"PATH#<n>"`` (mbox, 0-based position) /
    ``"PATH#<maildir unique name>"`` when a message has no Message-ID or repeats one. The
    size limit applies to each message, not to the store. A store that cannot be read at
    all gives a single error.
    """
    path = Path(os.path.abspath(path))
    store = str(path)
    seen: set[str] = set()
    if os.path.isdir(path):
        if not is_maildir(path):
            yield ExtractionError(path, "not a Maildir folder (no cur/new)")
            return
        mailbox = path.name.lstrip(".") or path.name
        try:
            files = _maildir_files(path)
        except OSError as exc:
            yield ExtractionError(path, f"cannot read Maildir: {exc.strerror or exc}")
            return
        for file in files:
            unique = file.name.split(":", 1)[0]
            try:
                data, _ = read_file(file, max_bytes)
                msg = _parse(data)
            except ExtractionError as exc:
                yield exc
                continue
            except Exception as exc:
                yield ExtractionError(file, f"malformed message: {exc}")
                continue
            key = _store_key(store, msg, unique, seen)
            yield from _message_docs(msg, key=key, path=str(file), mailbox=mailbox, max_bytes=max_bytes)
        return

    try:
        os.stat(path)
        box = ReadOnlyMbox(store)
        keys = box.keys()
    except OSError as exc:
        yield ExtractionError(path, exc.strerror or str(exc))
        return
    except Exception as exc:
        yield ExtractionError(path, f"cannot read mbox: {exc}")
        return
    try:
        if not keys and path.stat().st_size > 0:
            yield ExtractionError(path, "no messages found (not an mbox file?)")
        for index, mkey in enumerate(keys):
            where = f"{store}#{index}"
            try:
                data = box.get_bytes(mkey)
            except Exception as exc:
                yield ExtractionError(where, f"cannot read message: {exc}")
                continue
            if len(data) > max_bytes:
                yield ExtractionError(where, too_large(len(data), max_bytes))
                continue
            try:
                msg = _parse(data)
            except Exception as exc:
                yield ExtractionError(where, f"malformed message: {exc}")
                continue
            if not msg.keys():
                yield ExtractionError(where, "malformed message: no header fields")
                continue
            key = _store_key(store, msg, str(index), seen)
            yield from _message_docs(msg, key=key, path=store, mailbox=path.name, max_bytes=max_bytes)
    finally:
        box.close()


