"""Outlook's ``.pst`` (personal folders) and ``.ost`` (offline copy of an Exchange or
Outlook.com mailbox) stores: a store of folders, read with libpff's Python binding ``pypff``
(libpff-python, LGPL-3.0-or-later; docs/formats.md says what that asks of the bundled app), each
item into a :class:`~engine.ingest.outlook_mapi.MapiMessage`. Its folders are the mailboxes
("Inbox", "Sent Items", "Projects/2024"); its mail, meetings, posts, tasks and notes are
indexed, its contacts and system items are not. Without pypff a store is listed as skipped,
naming the package it needs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.ingest.documents import Document, ExtractionError, UnsupportedFormat
from engine.ingest.mail import MAX_NESTING, _ids
from engine.ingest.outlook_mapi import (
    ATTACH_EMBEDDED_MSG,
    PR_ADDRTYPE,
    PR_ATTACH_CONTENT_ID,
    PR_ATTACH_FILENAME,
    PR_ATTACH_LONG_FILENAME,
    PR_ATTACH_METHOD,
    PR_ATTACH_MIME_TAG,
    PR_ATTACHMENT_HIDDEN,
    PR_CLIENT_SUBMIT_TIME,
    PR_CREATION_TIME,
    PR_DISPLAY_BCC,
    PR_DISPLAY_CC,
    PR_DISPLAY_NAME,
    PR_DISPLAY_TO,
    PR_EMAIL_ADDRESS,
    PR_IN_REPLY_TO_ID,
    PR_INTERNET_CPID,
    PR_INTERNET_MESSAGE_ID,
    PR_INTERNET_REFERENCES,
    PR_MESSAGE_CLASS,
    PR_MESSAGE_CODEPAGE,
    PR_MESSAGE_DELIVERY_TIME,
    PR_RECIPIENT_TYPE,
    PR_SENDER_ADDRTYPE,
    PR_SENDER_EMAIL,
    PR_SENDER_NAME,
    PR_SENDER_SMTP_ADDRESS,
    PR_SENT_REPRESENTING_ADDRTYPE,
    PR_SENT_REPRESENTING_EMAIL,
    PR_SENT_REPRESENTING_NAME,
    PR_SENT_REPRESENTING_SMTP_ADDRESS,
    PR_SMTP_ADDRESS,
    PR_SUBJECT,
    PR_TRANSPORT_MESSAGE_HEADERS,
    Attachment,
    MapiMessage,
    attachment_of,
    decode_html,
    lzfu_decompress,
    message_docs,
    prop_text,
)
from engine.ingest.readers.common import MAX_FILE_BYTES

log = logging.getLogger(__name__)

#: The properties read from a store's items (a message's body and an attachment's data are
#: read through pypff's own calls, once).
WANTED = frozenset(
    {
        *(PR_MESSAGE_CLASS, PR_SUBJECT, PR_CLIENT_SUBMIT_TIME, PR_SENT_REPRESENTING_NAME),
        *(PR_SENT_REPRESENTING_ADDRTYPE, PR_SENT_REPRESENTING_EMAIL, PR_TRANSPORT_MESSAGE_HEADERS),
        *(PR_RECIPIENT_TYPE, PR_SENDER_NAME, PR_SENDER_ADDRTYPE, PR_SENDER_EMAIL, PR_DISPLAY_BCC),
        *(PR_DISPLAY_CC, PR_DISPLAY_TO, PR_MESSAGE_DELIVERY_TIME, PR_INTERNET_MESSAGE_ID),
        *(PR_INTERNET_REFERENCES, PR_IN_REPLY_TO_ID, PR_DISPLAY_NAME, PR_ADDRTYPE, PR_EMAIL_ADDRESS),
        *(PR_CREATION_TIME, PR_ATTACH_FILENAME, PR_ATTACH_METHOD, PR_ATTACH_LONG_FILENAME),
        *(PR_ATTACH_MIME_TAG, PR_ATTACH_CONTENT_ID, PR_SMTP_ADDRESS, PR_INTERNET_CPID),
        *(PR_MESSAGE_CODEPAGE, PR_SENDER_SMTP_ADDRESS, PR_SENT_REPRESENTING_SMTP_ADDRESS),
        PR_ATTACHMENT_HIDDEN,
    }
)

#: The item classes of a store that are indexed (by prefix, without case): mail, meeting
#: requests and replies, delivery reports, posts, appointments, tasks and notes. Contacts,
#: distribution lists, journal entries and Outlook's own configuration items are not.
INDEXED_CLASSES = ("ipm.note", "ipm.schedule", "report.ipm", "ipm.post", "ipm.appointment", "ipm.task", "ipm.stickynote")
#: Folders of a store that only wrap its mail folders: left out of a mailbox's name.
WRAPPER_FOLDERS = frozenset({"top of personal folders", "root - mailbox", "ipm_subtree", "top of information store"})


def iter_outlook_store(path: Path, max_bytes: int = MAX_FILE_BYTES) -> Iterator[Document | ExtractionError]:
    """Documents of every message of a .pst or .ost file, folder by folder; a bad message
    yields an error and the rest goes on. Keys are ``"PATH#<message-id>"``, or
    ``"PATH#item-<n>"`` (the item's id in the store) for a message without one or repeating
    one; a document's ``mailbox`` is its folder's path in the store ("Inbox", "Projects/2024")."""
    path = Path(os.path.abspath(path))
    try:
        import pypff
    except ImportError:
        yield UnsupportedFormat(
            path,
            f"Outlook data file ({path.suffix.lower()}) not read: it needs libpff-python"
            " (pip install libpff-python), which is not installed",
        )
        return
    store = pypff.file()
    try:
        with open(path, "rb"):  # a clear reason for a missing or unreadable file
            pass
        store.open(str(path))
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            yield ExtractionError(path, exc.strerror or str(exc))
        else:  # pypff reports a damaged or encrypted store as IOError
            yield ExtractionError(path, f"cannot read Outlook data file: {exc}")
        return
    except Exception as exc:
        yield ExtractionError(path, f"cannot read Outlook data file: {type(exc).__name__}: {exc}")
        return
    seen: set[str] = set()
    try:
        root = store.get_root_folder()
        stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
        while stack:
            folder, names = stack.pop()
            yield from _folder_messages(folder, names, str(path), seen, max_bytes)
            try:
                subs = [folder.get_sub_folder(i) for i in range(folder.get_number_of_sub_folders())]
            except Exception as exc:
                yield ExtractionError(f"{path}#{'/'.join(names)}", f"cannot read folder: {type(exc).__name__}: {exc}")
                continue
            for sub in reversed(subs):
                name = (_safe(lambda s=sub: s.get_name()) or "").strip()
                stack.append((sub, names if name.lower() in WRAPPER_FOLDERS or not name else (*names, name)))
    except Exception as exc:
        yield ExtractionError(path, f"cannot read Outlook data file: {type(exc).__name__}: {exc}")
    finally:
        store.close()


def _safe(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # libpff raises IOError for a value it cannot read
        log.debug("Outlook item value unreadable: %s: %s", type(exc).__name__, exc)
        return None


def _folder_messages(
    folder: Any, names: tuple[str, ...], store: str, seen: set[str], max_bytes: int
) -> Iterator[Document | ExtractionError]:
    mailbox = "/".join(names)
    try:
        count = folder.get_number_of_sub_messages()
    except Exception as exc:
        yield ExtractionError(f"{store}#{mailbox}", f"cannot read folder: {type(exc).__name__}: {exc}")
        return
    for i in range(count):
        where = f"{store}#{mailbox}/{i}"
        try:
            item = folder.get_sub_message(i)
            message = _pst_message(item, depth=0)
        except Exception as exc:
            yield ExtractionError(where, f"cannot read message: {type(exc).__name__}: {exc}")
            continue
        if message is None:
            continue  # a contact, a configuration item: not indexed
        ident = _safe(item.get_identifier)
        fallback = f"item-{ident}" if ident is not None else f"{mailbox}/{i}"
        ids = _ids(prop_text(message.props, PR_INTERNET_MESSAGE_ID))
        key = f"{store}#{ids[0]}" if ids else f"{store}#{fallback}"
        if key in seen:
            key = f"{store}#{fallback}"
        seen.add(key)
        yield from message_docs(message, key=key, path=store, mailbox=mailbox, max_bytes=max_bytes)


def _pst_props(item: Any) -> dict[int, Any]:
    """The ``WANTED`` properties of a store's item (its first record set)."""
    props: dict[int, Any] = {}
    try:
        record = item.get_record_set(0) if item.get_number_of_record_sets() else None
    except Exception as exc:
        log.debug("Outlook item properties unreadable: %s: %s", type(exc).__name__, exc)
        return props
    if record is None:
        return props
    for e in record.entries:
        pid = _safe(e.get_entry_type)
        if pid not in WANTED or pid in props:
            continue
        ptype = _safe(e.get_value_type)
        if ptype in (0x001F, 0x001E):
            value = _safe(e.get_data_as_string)
        elif ptype == 0x0040:
            value = _safe(e.get_data_as_datetime)
        elif ptype in (0x0002, 0x0003, 0x0014):
            value = _safe(e.get_data_as_integer)
        elif ptype == 0x000B:
            value = _safe(e.get_data_as_boolean)
        elif ptype == 0x0102:
            value = _safe(e.get_data)
        else:
            continue
        if value is not None:
            props[pid] = value
    return props


def _decode_body(data: Any) -> str | None:
    if not data:
        return None
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return bytes(data).decode("cp1252", errors="replace")


def _pst_message(item: Any, depth: int) -> MapiMessage | None:
    """A store's item as a MapiMessage; None for an item class that is not indexed."""
    props = _pst_props(item)
    cls = prop_text(props, PR_MESSAGE_CLASS).lower()
    if cls and cls != "ipm" and not cls.startswith(INDEXED_CLASSES):
        return None
    message = MapiMessage(props)
    message.plain = _decode_body(_safe(item.get_plain_text_body))
    if not (message.plain or "").strip():
        html = _safe(item.get_html_body)
        message.html = decode_html(bytes(html)) if html else None
        if not (message.html or "").strip():
            rtf = _safe(item.get_rtf_body)
            if rtf:
                rtf = bytes(rtf)
                message.rtf = rtf if rtf.lstrip()[:5] == b"{\\rtf" else _safe(lambda: lzfu_decompress(rtf))
    recipients = _safe(lambda: item.recipients)
    if recipients is not None:
        for i in range(_safe(recipients.get_number_of_record_sets) or 0):
            record = _safe(lambda i=i: recipients.get_record_set(i))
            if record is not None:
                message.recipients.append(_pst_props(_OneRecord(record)))
    for i in range(_safe(item.get_number_of_attachments) or 0):
        try:
            message.attachments.append(_pst_attachment(item.get_attachment(i), depth))
        except Exception as exc:
            message.attachments.append(
                Attachment(f"attachment {i + 1}", "", 0, False, error=f"unreadable attachment: {type(exc).__name__}: {exc}")
            )
    return message


class _OneRecord:
    """A recipient's record set, posing as an item with one record set (``_pst_props``)."""

    def __init__(self, record: Any) -> None:
        self.record = record

    def get_number_of_record_sets(self) -> int:
        return 1

    def get_record_set(self, _i: int) -> Any:
        return self.record


def _pst_attachment(a: Any, depth: int) -> Attachment:
    props = _pst_props(a)
    att = attachment_of(props)
    att.name = att.name or (_safe(a.get_long_filename) or "")
    if props.get(PR_ATTACH_METHOD) == ATTACH_EMBEDDED_MSG:
        if depth >= MAX_NESTING:
            att.error = f"message nested more than {MAX_NESTING} deep: not read"
            return att
        inner = _safe(lambda: a.get_sub_item(0)) if (_safe(a.get_number_of_sub_items) or 0) else None
        message = _pst_message(inner, depth + 1) if inner is not None and hasattr(inner, "get_plain_text_body") else None
        if message is not None:
            att.message = message
            return att
        att.unread = "attached message not read: libpff-python gives no access to it"
        return att
    size = _safe(a.get_size) or 0
    att.size = int(size)
    att.load = lambda: bytes(a.read_buffer(int(size))) if size else b""
    return att
