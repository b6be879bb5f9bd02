"""Outlook's ``.msg`` files: one message saved by Outlook, an OLE compound file ([MS-CFB]) of
MAPI properties ([MS-OXMSG]), read with olefile (BSD) into a
:class:`~engine.ingest.outlook_mapi.MapiMessage`. Each variable-size property is a stream
``__substg1.0_IIIITTTT`` (property id, type), the fixed-size ones (dates, flags) are entries of
``__properties_version1.0``; recipients are ``__recip_version1.0_#N`` storages, attachments
``__attach_version1.0_#N`` storages (an attached message is a storage of its own,
``__substg1.0_3701000D``, read the same way).

Importing this module adds the .msg reader to ``engine.ingest.mail.MESSAGE_READERS``, so that a
.msg attached to a message is read as one.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import re
import struct
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from engine.ingest.documents import Document, ExtractionError
from engine.ingest.mail import MAX_NESTING, MESSAGE_READERS
from engine.ingest.outlook_mapi import (
    ATTACH_EMBEDDED_MSG,
    PR_ATTACH_DATA,
    PR_ATTACH_METHOD,
    PR_BODY,
    PR_HTML,
    PR_INTERNET_CPID,
    PR_MESSAGE_CLASS,
    PR_MESSAGE_CODEPAGE,
    PR_RTF_COMPRESSED,
    PR_SUBJECT,
    Attachment,
    MapiMessage,
    attachment_of,
    decode_html,
    lzfu_decompress,
    message_docs,
)
from engine.ingest.readers.common import MAX_FILE_BYTES

log = logging.getLogger(__name__)

#: The first bytes of every OLE compound file (.msg, but also .doc, .xls, .ppt).
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def is_msg(data: bytes) -> bool:
    """Whether bytes named as e-mail are an Outlook .msg (an OLE compound file), not RFC 822."""
    return data[:8] == OLE_MAGIC


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
    yield from message_docs(message, key=key, path=path, mailbox=mailbox, parent_key=parent_key, max_bytes=max_bytes)


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
    att = attachment_of(props)
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

