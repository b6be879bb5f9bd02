"""Outlook: ``.msg`` files and ``.pst``/``.ost`` stores, as Documents: a message, then its
attachments, as :mod:`engine.ingest.mail` gives an RFC 822 message.

* A ``.msg`` file is one message saved by Outlook: an OLE compound file ([MS-CFB]) of MAPI
  properties ([MS-OXMSG]), read with olefile (BSD): each variable-size property is a stream
  ``__substg1.0_IIIITTTT`` (property id, type), the fixed-size ones (dates, flags) are entries
  of ``__properties_version1.0``; recipients are ``__recip_version1.0_#N`` storages,
  attachments ``__attach_version1.0_#N`` storages (an attached message is a storage of its own,
  ``__substg1.0_3701000D``, read the same way).
* A ``.pst`` (personal folders) or ``.ost`` (offline copy of an Exchange or Outlook.com
  mailbox) is a store of folders, read with libpff's Python binding ``pypff``
  (libpff-python, LGPL-3.0-or-later; docs/formats.md says what that asks of the bundled app).
  Its folders are the mailboxes ("Inbox", "Sent Items", "Projects/2024"); its mail, meetings,
  posts, tasks and notes are indexed, its contacts and system items are not. Without pypff
  a store is listed as skipped, naming the package it needs.

A message's fields come from its Internet headers when it kept them (received mail), else
from its MAPI properties (sent items, drafts): sender, recipients (the recipient table, else
the display lists), dates, subject, ids. Its body is the plain text, else the HTML, else the
compressed RTF ([MS-OXRTFCP], decompressed here), cleaned as any message's
(``mail.body_text``). Attachments in a readable format become documents of their own, others
are found by their name, as in ``engine.ingest.mail``.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email import policy
from email.parser import Parser
from pathlib import Path
from typing import Any

from engine.ingest.documents import Document, ExtractionError, UnsupportedFormat
from engine.ingest.mail import (
    MAX_NESTING,
    MESSAGE_READERS,
    _comma_list,
    _ids,
    body_text,
    extract_bytes,
    message_fields,
)
from engine.ingest.readers import kind_for_name
from engine.ingest.readers.common import MAX_FILE_BYTES, too_large

log = logging.getLogger(__name__)

#: The first bytes of every OLE compound file (.msg, but also .doc, .xls, .ppt).
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

# MAPI property ids ([MS-OXPROPS])
PR_MESSAGE_CLASS = 0x001A
PR_SUBJECT = 0x0037
PR_CLIENT_SUBMIT_TIME = 0x0039
PR_SENT_REPRESENTING_NAME = 0x0042
PR_SENT_REPRESENTING_ADDRTYPE = 0x0064
PR_SENT_REPRESENTING_EMAIL = 0x0065
PR_TRANSPORT_MESSAGE_HEADERS = 0x007D
PR_RECIPIENT_TYPE = 0x0C15
PR_SENDER_NAME = 0x0C1A
PR_SENDER_ADDRTYPE = 0x0C1E
PR_SENDER_EMAIL = 0x0C1F
PR_DISPLAY_BCC = 0x0E02
PR_DISPLAY_CC = 0x0E03
PR_DISPLAY_TO = 0x0E04
PR_MESSAGE_DELIVERY_TIME = 0x0E06
PR_BODY = 0x1000
PR_RTF_COMPRESSED = 0x1009
PR_HTML = 0x1013
PR_INTERNET_MESSAGE_ID = 0x1035
PR_INTERNET_REFERENCES = 0x1039
PR_IN_REPLY_TO_ID = 0x1042
PR_DISPLAY_NAME = 0x3001
PR_ADDRTYPE = 0x3002
PR_EMAIL_ADDRESS = 0x3003
PR_CREATION_TIME = 0x3007
PR_ATTACH_DATA = 0x3701
PR_ATTACH_FILENAME = 0x3704
PR_ATTACH_METHOD = 0x3705
PR_ATTACH_LONG_FILENAME = 0x3707
PR_ATTACH_MIME_TAG = 0x370E
PR_ATTACH_CONTENT_ID = 0x3712
PR_SMTP_ADDRESS = 0x39FE
PR_INTERNET_CPID = 0x3FDE
PR_MESSAGE_CODEPAGE = 0x3FFD
PR_SENDER_SMTP_ADDRESS = 0x5D01
PR_SENT_REPRESENTING_SMTP_ADDRESS = 0x5D02
PR_ATTACHMENT_HIDDEN = 0x7FFE

ATTACH_EMBEDDED_MSG = 5
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


def is_msg(data: bytes) -> bool:
    """Whether bytes named as e-mail are an Outlook .msg (an OLE compound file), not RFC 822."""
    return data[:8] == OLE_MAGIC


# --------------------------------------------------------------------------- one message


@dataclass
class Attachment:
    """An attachment of a MAPI message: a file (``load`` gives its bytes) or a message."""

    name: str
    mime: str
    size: int
    hidden: bool
    load: Callable[[], bytes] | None = None
    message: MapiMessage | None = None
    error: str = ""
    unread: str = ""  # why an attached message is not read (``_attachment_docs``)


@dataclass
class MapiMessage:
    """A message as MAPI properties (id -> str, bytes, int, bool or datetime), its recipients'
    properties, its bodies and its attachments, whichever container it came from."""

    props: dict[int, Any]
    recipients: list[dict[int, Any]] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    plain: str | None = None
    html: str | None = None
    rtf: bytes | None = None  # decompressed RTF


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _text(props: dict[int, Any], pid: int) -> str:
    """A string property on one line. A store's subject may start with "\x01" and a character
    whose code is the length of its prefix ("RE: "): that marker is dropped."""
    value = props.get(pid)
    if not isinstance(value, str):
        return ""
    if value.startswith("\x01"):
        value = value[2:]
    return " ".join(_CONTROL.sub(" ", value).split())


def _person(name: str, address: str) -> str:
    """"Name <address>" as a header writes it (a name with a comma or quote in quotes)."""
    name = name.replace('"', "'").strip()
    if address and name and name.lower() != address.lower():
        return f'"{name}" <{address}>' if re.search(r'[,;:<>@()\[\]\\.]', name) else f"{name} <{address}>"
    return address or name


def _smtp(props: dict[int, Any], addrtype: int, email: int, smtp: tuple[int, ...]) -> str:
    """The SMTP address of a sender or recipient: an Exchange one ("EX", a directory name)
    is replaced by the SMTP address Outlook stored beside it, else left out."""
    for pid in smtp:
        if "@" in _text(props, pid):
            return _text(props, pid)
    address = _text(props, email)
    if _text(props, addrtype).upper() == "EX" or "@" not in address:
        return ""
    return address


def _iso(value: Any) -> str:
    if not isinstance(value, datetime) or value.year < 1980:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat()


def mapi_fields(m: MapiMessage, mailbox: str) -> dict[str, str]:
    """The ``EMAIL_FIELDS`` of a MAPI message: from its Internet headers, each one they lack
    from its properties."""
    p = m.props
    headers = p.get(PR_TRANSPORT_MESSAGE_HEADERS)
    fields: dict[str, str] = {}
    if isinstance(headers, str) and ":" in headers:
        try:
            parsed = Parser(policy=policy.default).parsestr(headers.strip() + "\n\n", headersonly=True)
            fields = message_fields(parsed, mailbox)
        except Exception as exc:  # damaged headers: the properties below stand in
            log.debug("transport headers unreadable: %s: %s", type(exc).__name__, exc)
    for name in ("from", "to", "cc", "bcc", "date", "subject", "message_id", "in_reply_to", "references"):
        fields.setdefault(name, "")
    fields["mailbox"] = mailbox
    if _text(p, PR_SUBJECT):
        fields["subject"] = _text(p, PR_SUBJECT)  # the subject as Outlook shows it
    if not fields["from"]:
        name = _text(p, PR_SENDER_NAME) or _text(p, PR_SENT_REPRESENTING_NAME)
        address = _smtp(p, PR_SENDER_ADDRTYPE, PR_SENDER_EMAIL, (PR_SENDER_SMTP_ADDRESS,)) or _smtp(
            p, PR_SENT_REPRESENTING_ADDRTYPE, PR_SENT_REPRESENTING_EMAIL, (PR_SENT_REPRESENTING_SMTP_ADDRESS,)
        )
        fields["from"] = _person(name, address)
    lists: dict[int, list[str]] = {1: [], 2: [], 3: []}
    for r in m.recipients:
        kind = r.get(PR_RECIPIENT_TYPE)
        person = _person(_text(r, PR_DISPLAY_NAME), _smtp(r, PR_ADDRTYPE, PR_EMAIL_ADDRESS, (PR_SMTP_ADDRESS,)))
        if isinstance(kind, int) and (kind & 0xF) in lists and person:
            lists[kind & 0xF].append(person)
    for name, kind, display in (("to", 1, PR_DISPLAY_TO), ("cc", 2, PR_DISPLAY_CC), ("bcc", 3, PR_DISPLAY_BCC)):
        if not fields[name]:
            fields[name] = ", ".join(lists[kind]) or _comma_list(_text(p, display))
    if not fields["date"]:
        for pid in (PR_CLIENT_SUBMIT_TIME, PR_MESSAGE_DELIVERY_TIME, PR_CREATION_TIME):
            if _iso(p.get(pid)):
                fields["date"] = _iso(p.get(pid))
                break
    for name, pid in (("message_id", PR_INTERNET_MESSAGE_ID), ("in_reply_to", PR_IN_REPLY_TO_ID)):
        if not fields[name] and _text(p, pid):
            ids = _ids(_text(p, pid))
            fields[name] = ids[0] if ids else ""
    if not fields["references"] and _text(p, PR_INTERNET_REFERENCES):
        fields["references"] = " ".join(_ids(_text(p, PR_INTERNET_REFERENCES)))
    references = fields["references"].split()
    replied = [fields["in_reply_to"]] if fields["in_reply_to"] else []
    fields["thread"] = (references or replied or [fields["message_id"]])[0]
    return fields


def _body(m: MapiMessage) -> tuple[str, bool]:
    """The body to index and whether it is HTML: the plain text, else the HTML, else the RTF."""
    if m.plain and m.plain.strip():
        return m.plain, False
    if m.html and m.html.strip():
        return m.html, True
    if m.rtf:
        return rtf_text(m.rtf), False
    return "", False


def rtf_text(rtf: bytes) -> str:
    """The text of an RTF body (Outlook's own, or HTML it wraps: its tags are dropped too)."""
    from striprtf.striprtf import rtf_to_text

    try:
        text = rtf_to_text(rtf.decode("latin-1"), errors="ignore")
    except Exception as exc:  # a damaged RTF body: the message keeps its headers
        log.debug("RTF body unreadable: %s: %s", type(exc).__name__, exc)
        return ""
    if b"\\fromhtml" in rtf[:400]:
        from engine.ingest.readers.html import html_to_text

        text, _ = html_to_text(text, drop_quotes=False)
    return text


def _message_docs(
    m: MapiMessage,
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
        fields = mapi_fields(m, mailbox)
        raw, html = _body(m)
        text = body_text(raw, html=html, fields=fields) if raw.strip() else ""
    except Exception as exc:
        yield ExtractionError(key, f"malformed Outlook message: {type(exc).__name__}: {exc}")
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
    for n, att in enumerate(m.attachments, start=1):
        yield from _attachment_docs(att, n, key=key, path=path, date=fields["date"], depth=depth, max_bytes=max_bytes)


def _attachment_docs(
    att: Attachment, n: int, *, key: str, path: str, date: str, depth: int, max_bytes: int
) -> Iterator[Document | ExtractionError]:
    name = " ".join(att.name.replace("/", "_").replace("\\", "_").split())
    if att.unread:
        # a message attached inside a store, which libpff-python gives no access to: found by
        # its name, saying why (a hidden one, such as an exception of a recurring meeting, is not)
        if not att.hidden:
            fields = {"date": date, "filename": name, "note": att.unread}
            yield Document(f"{key}/attachment/{n}:{name or 'message'}", path, "other", name or "message", "", fields, key)
        return
    if att.message is not None:
        sub_key = f"{key}/attachment/{n}:{name or 'message.msg'}"
        if depth >= MAX_NESTING:
            yield ExtractionError(sub_key, f"message nested more than {MAX_NESTING} deep: not read")
            return
        yield from _message_docs(
            att.message, key=sub_key, path=path, mailbox="", parent_key=key, depth=depth + 1, max_bytes=max_bytes
        )
        return
    sub_key = f"{key}/attachment/{n}:{name or att.mime or 'attachment'}"
    if att.error:
        yield ExtractionError(sub_key, att.error)
        return
    if kind_for_name(name, att.mime) is None:
        # pictures, archives, unknown binaries: found by their name, as in engine.ingest.mail;
        # a hidden or inline one (a signature's logo) is not a document at all
        if name and not att.hidden:
            yield Document(sub_key, path, "other", name, "", {"date": date, "filename": name}, key)
        return
    if att.size > max_bytes:
        yield ExtractionError(sub_key, too_large(att.size, max_bytes))
        return
    try:
        data = att.load() if att.load is not None else b""
        docs = extract_bytes(
            data,
            name,
            key=sub_key,
            path=path,
            parent_key=key,
            content_type=att.mime or None,
            fields={"date": date, "filename": name},
            max_bytes=max_bytes,
        )
    except ExtractionError as exc:
        yield exc
        return
    except Exception as exc:
        yield ExtractionError(sub_key, f"attachment failed: {type(exc).__name__}: {exc}")
        return
    yield from docs


# --------------------------------------------------------------------------- .msg files

_SUBSTG = re.compile(r"__substg1\.0_([0-9A-Fa-f]{4})([0-9A-Fa-f]{4})$")
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=timezone.utc)


def msg_documents(
    data: bytes,
    *,
    key: str,
    path: str,
    mailbox: str,
    parent_key: str | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[Document | ExtractionError]:
    """Documents of an Outlook .msg (the message first, then its attachments) or errors."""
    try:
        message = read_msg(data)
    except Exception as exc:  # olefile raises many types on a damaged file
        yield ExtractionError(key, f"corrupt Outlook message (.msg): {type(exc).__name__}: {exc}")
        return
    yield from _message_docs(message, key=key, path=path, mailbox=mailbox, parent_key=parent_key, max_bytes=max_bytes)


# an Outlook .msg attached to a message (or to a .msg) is read as one (engine.ingest.mail)
MESSAGE_READERS.append((is_msg, msg_documents))


def read_msg(data: bytes) -> MapiMessage:
    """The MAPI message of a .msg file's bytes."""
    import olefile

    ole = olefile.OleFileIO(data)
    try:
        entries = [tuple(p) for p in ole.listdir(streams=True, storages=True)]
        message = _msg_storage(ole, entries, (), top=True)
    finally:
        ole.close()
    if PR_SUBJECT not in message.props and PR_MESSAGE_CLASS not in message.props:
        raise ValueError("no message properties (an OLE file, but not an Outlook message)")
    return message


def _children(entries: list[tuple[str, ...]], prefix: tuple[str, ...]) -> list[str]:
    return sorted({e[len(prefix)] for e in entries if len(e) > len(prefix) and e[: len(prefix)] == prefix})


def _codepage(props: dict[int, Any]) -> str:
    for pid in (PR_INTERNET_CPID, PR_MESSAGE_CODEPAGE):
        cp = props.get(pid)
        if isinstance(cp, int) and cp > 0:
            name = {65001: "utf-8", 20127: "ascii", 28591: "latin-1", 1200: "utf-16-le"}.get(cp, f"cp{cp}")
            try:
                return codecs.lookup(name).name
            except LookupError:
                continue
    return "cp1252"


def _props(ole: Any, entries: list[tuple[str, ...]], prefix: tuple[str, ...], header: int) -> dict[int, Any]:
    """The properties of one object (the message, a recipient, an attachment) of a .msg:
    fixed-size ones from its property stream, then variable-size ones from their streams
    (ANSI strings decoded with the message's code page). An attached message
    (``__substg1.0_3701000D``, a storage) and multi-valued properties are not read here."""
    props: dict[int, Any] = {}
    names = _children(entries, prefix)
    if "__properties_version1.0" in names:
        raw = ole.openstream("/".join((*prefix, "__properties_version1.0"))).read()
        for offset in range(header, len(raw) - 15, 16):
            tag, _flags, value = struct.unpack_from("<IIQ", raw, offset)
            pid, ptype = tag >> 16, tag & 0xFFFF
            if ptype in (0x0002, 0x0003):
                props[pid] = struct.unpack("<i", struct.pack("<I", value & 0xFFFFFFFF))[0]
            elif ptype == 0x0014:
                props[pid] = value
            elif ptype == 0x000B:
                props[pid] = bool(value & 0xFF)
            elif ptype == 0x0040 and 0 < value < 0x7FFFFFFFFFFFFFFF:
                with contextlib.suppress(OverflowError):  # past year 9999: undated
                    props[pid] = _FILETIME_EPOCH + timedelta(microseconds=value // 10)
    ansi: list[tuple[int, bytes]] = []
    for name in names:
        match = _SUBSTG.match(name)
        if not match:
            continue
        pid, ptype = int(match.group(1), 16), int(match.group(2), 16)
        if ptype not in (0x001F, 0x001E, 0x0102) or ole.get_type("/".join((*prefix, name))) != 2:
            continue  # (a storage: an attached message; multi-valued: not read)
        value = ole.openstream("/".join((*prefix, name))).read()
        if ptype == 0x001F:
            props[pid] = value.decode("utf-16-le", errors="replace").split("\x00", 1)[0]
        elif ptype == 0x001E:
            ansi.append((pid, value))
        else:
            props[pid] = value
    encoding = _codepage(props)
    for pid, value in ansi:
        props.setdefault(pid, value.decode(encoding, errors="replace").split("\x00", 1)[0])
    return props


def _msg_storage(ole: Any, entries: list[tuple[str, ...]], prefix: tuple[str, ...], top: bool, depth: int = 0) -> MapiMessage:
    props = _props(ole, entries, prefix, header=32 if top else 24)
    message = MapiMessage(props)
    message.plain = props.get(PR_BODY) if isinstance(props.get(PR_BODY), str) else None
    html = props.get(PR_HTML)
    message.html = decode_html(html, _codepage(props)) if isinstance(html, bytes) else html if isinstance(html, str) else None
    rtf = props.get(PR_RTF_COMPRESSED)
    if isinstance(rtf, bytes) and not message.plain and not message.html:
        try:
            message.rtf = lzfu_decompress(rtf)
        except ValueError as exc:
            log.debug("compressed RTF body unreadable: %s", exc)
    for name in _children(entries, prefix):
        if name.lower().startswith("__recip_version1.0_"):
            message.recipients.append(_props(ole, entries, (*prefix, name), header=8))
        elif name.lower().startswith("__attach_version1.0_"):
            message.attachments.append(_msg_attachment(ole, entries, (*prefix, name), depth))
    return message


def _msg_attachment(ole: Any, entries: list[tuple[str, ...]], prefix: tuple[str, ...], depth: int) -> Attachment:
    props = _props(ole, entries, prefix, header=8)
    att = _attachment_of(props)
    embedded = (*prefix, "__substg1.0_3701000D")
    if props.get(PR_ATTACH_METHOD) == ATTACH_EMBEDDED_MSG or embedded in entries:
        if embedded in entries and depth < MAX_NESTING:
            att.message = _msg_storage(ole, entries, embedded, top=False, depth=depth + 1)
        elif embedded in entries:
            att.error = f"message nested more than {MAX_NESTING} deep: not read"
        return att
    data = props.get(PR_ATTACH_DATA)
    blob = data if isinstance(data, bytes) else b""
    att.size, att.load = len(blob), lambda: blob
    return att


def _attachment_of(props: dict[int, Any]) -> Attachment:
    """An attachment's name, type and visibility from its properties."""
    name = _text(props, PR_ATTACH_LONG_FILENAME) or _text(props, PR_ATTACH_FILENAME) or _text(props, PR_DISPLAY_NAME)
    hidden = bool(props.get(PR_ATTACHMENT_HIDDEN)) or (
        bool(_text(props, PR_ATTACH_CONTENT_ID)) and _text(props, PR_ATTACH_MIME_TAG).startswith("image/")
    )
    return Attachment(name=name, mime=_text(props, PR_ATTACH_MIME_TAG).lower(), size=0, hidden=hidden)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.I)


def decode_html(data: bytes, fallback: str = "cp1252") -> str:
    """An HTML body's text: the charset its <meta> names, else UTF-8, else ``fallback``."""
    found = _META_CHARSET.search(data[:4096])
    for encoding in ([found.group(1).decode("ascii")] if found else []) + ["utf-8"]:
        try:
            return data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            continue
    return data.decode(fallback, errors="replace")


# --------------------------------------------------------------------------- compressed RTF

_RTF_PREBUF = (
    b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern \\fscript "
    b"\\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0\\blue0\r\n\\par "
    b"\\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx"
)
_LZFU, _MELA = 0x75465A4C, 0x414C454D


def lzfu_decompress(data: bytes) -> bytes:
    """The RTF of a PR_RTF_COMPRESSED property ([MS-OXRTFCP]): a 16-byte header (sizes, "LZFu"
    or "MELA" for stored uncompressed, CRC), then runs of 8 items under a control byte, each a
    literal byte or a 2-byte reference (12-bit offset, 4-bit length - 2) into a 4 KiB ring
    that starts with a fixed RTF prefix."""
    if len(data) < 16:
        raise ValueError("compressed RTF shorter than its header")
    comp_size, raw_size, magic, _crc = struct.unpack_from("<IIII", data)
    if magic == _MELA:
        return data[16 : 16 + raw_size]
    if magic != _LZFU:
        raise ValueError(f"unknown compressed RTF type {magic:#x}")
    ring = bytearray(4096)
    ring[: len(_RTF_PREBUF)] = _RTF_PREBUF
    write = len(_RTF_PREBUF)
    out = bytearray()
    pos, end = 16, min(len(data), 4 + comp_size)
    limit = min(raw_size, 64 * 1024 * 1024)
    while pos < end and len(out) < limit:
        control = data[pos]
        pos += 1
        for bit in range(8):
            if pos >= end:
                break
            if control & (1 << bit):
                if pos + 1 >= end:
                    return bytes(out)
                word = (data[pos] << 8) | data[pos + 1]
                pos += 2
                offset, length = word >> 4, (word & 0xF) + 2
                if offset == write:  # the end marker
                    return bytes(out)
                for i in range(length):
                    byte = ring[(offset + i) % 4096]
                    out.append(byte)
                    ring[write] = byte
                    write = (write + 1) % 4096
            else:
                byte = data[pos]
                pos += 1
                out.append(byte)
                ring[write] = byte
                write = (write + 1) % 4096
    return bytes(out)


# --------------------------------------------------------------------------- .pst / .ost stores


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
        ids = _ids(_text(message.props, PR_INTERNET_MESSAGE_ID))
        key = f"{store}#{ids[0]}" if ids else f"{store}#{fallback}"
        if key in seen:
            key = f"{store}#{fallback}"
        seen.add(key)
        yield from _message_docs(message, key=key, path=store, mailbox=mailbox, max_bytes=max_bytes)


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
    cls = _text(props, PR_MESSAGE_CLASS).lower()
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
    att = _attachment_of(props)
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
