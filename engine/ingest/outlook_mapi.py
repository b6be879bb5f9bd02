"""Outlook's messages as MAPI properties, whichever container they came from (a ``.msg``
file: :mod:`engine.ingest.outlook_msg`; a ``.pst``/``.ost`` store:
:mod:`engine.ingest.outlook_pst`), and their Documents: a message, then its attachments, as
:mod:`engine.ingest.mail` gives an RFC 822 message.

A message's fields come from its Internet headers when it kept them (received mail), else
from its MAPI properties (sent items, drafts): sender, recipients (the recipient table, else
the display lists), dates, subject, ids. Its body is the plain text, else the HTML, else the
compressed RTF ([MS-OXRTFCP], decompressed here), cleaned as any message's
(``mail.body_text``). Attachments in a readable format become documents of their own, others
are found by their name, as in ``engine.ingest.mail``.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email import policy
from email.parser import Parser
from typing import Any

from engine.ingest.documents import Document, ExtractionError
from engine.ingest.mail import MAX_NESTING, _comma_list, _ids, body_text, extract_bytes, message_fields
from engine.ingest.readers import kind_for_name
from engine.ingest.readers.common import MAX_FILE_BYTES, too_large

log = logging.getLogger(__name__)

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


def prop_text(props: dict[int, Any], pid: int) -> str:
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
        if "@" in prop_text(props, pid):
            return prop_text(props, pid)
    address = prop_text(props, email)
    if prop_text(props, addrtype).upper() == "EX" or "@" not in address:
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
    if prop_text(p, PR_SUBJECT):
        fields["subject"] = prop_text(p, PR_SUBJECT)  # the subject as Outlook shows it
    if not fields["from"]:
        name = prop_text(p, PR_SENDER_NAME) or prop_text(p, PR_SENT_REPRESENTING_NAME)
        address = _smtp(p, PR_SENDER_ADDRTYPE, PR_SENDER_EMAIL, (PR_SENDER_SMTP_ADDRESS,)) or _smtp(
            p, PR_SENT_REPRESENTING_ADDRTYPE, PR_SENT_REPRESENTING_EMAIL, (PR_SENT_REPRESENTING_SMTP_ADDRESS,)
        )
        fields["from"] = _person(name, address)
    lists: dict[int, list[str]] = {1: [], 2: [], 3: []}
    for r in m.recipients:
        kind = r.get(PR_RECIPIENT_TYPE)
        person = _person(prop_text(r, PR_DISPLAY_NAME), _smtp(r, PR_ADDRTYPE, PR_EMAIL_ADDRESS, (PR_SMTP_ADDRESS,)))
        if isinstance(kind, int) and (kind & 0xF) in lists and person:
            lists[kind & 0xF].append(person)
    for name, kind, display in (("to", 1, PR_DISPLAY_TO), ("cc", 2, PR_DISPLAY_CC), ("bcc", 3, PR_DISPLAY_BCC)):
        if not fields[name]:
            fields[name] = ", ".join(lists[kind]) or _comma_list(prop_text(p, display))
    if not fields["date"]:
        for pid in (PR_CLIENT_SUBMIT_TIME, PR_MESSAGE_DELIVERY_TIME, PR_CREATION_TIME):
            if _iso(p.get(pid)):
                fields["date"] = _iso(p.get(pid))
                break
    for name, pid in (("message_id", PR_INTERNET_MESSAGE_ID), ("in_reply_to", PR_IN_REPLY_TO_ID)):
        if not fields[name] and prop_text(p, pid):
            ids = _ids(prop_text(p, pid))
            fields[name] = ids[0] if ids else ""
    if not fields["references"] and prop_text(p, PR_INTERNET_REFERENCES):
        fields["references"] = " ".join(_ids(prop_text(p, PR_INTERNET_REFERENCES)))
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


def message_docs(
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
        yield from message_docs(
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


# --------------------------------------------------------------------------- read by both containers


def attachment_of(props: dict[int, Any]) -> Attachment:
    """An attachment's name, type and visibility from its properties."""
    name = (
        prop_text(props, PR_ATTACH_LONG_FILENAME)
        or prop_text(props, PR_ATTACH_FILENAME)
        or prop_text(props, PR_DISPLAY_NAME)
    )
    hidden = bool(props.get(PR_ATTACHMENT_HIDDEN)) or (
        bool(prop_text(props, PR_ATTACH_CONTENT_ID)) and prop_text(props, PR_ATTACH_MIME_TAG).startswith("image/")
    )
    return Attachment(name=name, mime=prop_text(props, PR_ATTACH_MIME_TAG).lower(), size=0, hidden=hidden)


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

