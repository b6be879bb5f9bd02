"""E-mail: ``.eml`` files, Apple Mail's ``.emlx``, mbox files and Maildir folders, as Documents
(Outlook's ``.msg`` files and ``.pst``/``.ost`` stores: :mod:`engine.ingest.outlook`).

A message is indexed by its own words only: quoted replies and signatures are removed so
that a thread of twenty replies does not index the first message twenty times (the
quoted copies are in the store already). Forwarded content is the exception: it usually
came from outside the mailbox, so it is kept, its header lines reduced to the people they
name -- Enron's Lotus Notes "Forwarded by" blocks and Outlook "FW:" messages are often
nothing but that.

Headers are decoded (RFC 2047) into ``Document.fields``; an address header the standard
parser finds invalid (a list separated by semicolons, as Outlook writes them) is read by
hand, as the parser would drop people from it; ``thread`` groups a conversation
under the first Message-ID of References. Attachments in a supported format become
Documents of their own pointing at the message. In an mbox file or Maildir folder a bad
message is yielded as an ExtractionError and the rest of the store goes on.
"""

from __future__ import annotations

import logging
import mailbox as mailbox_mod
import os
import re
from collections.abc import Callable, Iterator
from datetime import timezone
from email import errors, policy
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses, parseaddr, parsedate_to_datetime
from pathlib import Path

from engine.ingest.documents import Document, ExtractionError, UnsupportedFormat, add_note
from engine.ingest.formats import (
    MAX_FILE_BYTES,
    UNSUPPORTED_FORMATS,
    document_from_bytes,
    html_to_text,
    kind_for_name,
    read_file,
    sniff_kind,
    tidy,
    too_large,
)
from engine.ingest.walk import is_maildir

# Malformed mail is ordinary: each fallback below keeps the content and logs at DEBUG (the
# extraction worker's log goes nowhere; in-process extraction shows them with -v).
log = logging.getLogger(__name__)

# Attached messages inside attached messages are followed this deep.
MAX_NESTING = 3
# The reply-parser library's regexes are slow on huge bodies; past this we cut by markers only.
MAX_LIBRARY_CHARS = 100_000

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

# The start of a quoted earlier message in a reply.
_REPLY = re.compile(
    "|".join(
        [
            r"^[ \t>]*-{2,}[ \t]*(?:Original|Reply) Message[ \t]*-{2,}[ \t]*$",
            r"^[ \t>]*_{10,}[ \t]*\n[ \t>]*From:",
            r"^[ \t>]*On\b[^\n]{0,300}?(?:\n[^\n]{0,300}?)?\bwrote:[ \t]*$",
            r"^[ \t>]*From:[^\n]*\n[ \t>]*(?:Sent|Date):",
            # Lotus Notes (Enron): "Name" / "04/10/2001 01:31 PM" / "To: ..."
            r"^[^\n]{1,120}\n[ \t]*\d{1,2}/\d{1,2}/\d{2,4}[ \t]+\d{1,2}:\d{2}(?::\d{2})?[ \t]*[AP]M[ \t]*\n[ \t]*To:",
            # Lotus Notes: '"Name" <a@b> on 01/18/2001 12:47:37 PM' / "To: ..."
            r"^[^\n]{1,200}[ \t]on[ \t]+\d{1,2}/\d{1,2}/\d{2,4}[ \t]+\d{1,2}:\d{2}(?::\d{2})?[ \t]*[AP]M[ \t]*\n[ \t]*To:",
        ]
    ),
    re.M | re.I,
)
# The start of forwarded content.
_FORWARD = re.compile(
    r"^[ \t>]*(?:-{3,}[ \t]*Forwarded by[^\n]*?(?:\n[^\n]*?)??-{3,}"
    r"|-{3,}[ \t]*Forwarded message[ \t]*-{3,}"
    r"|Begin forwarded message:)[ \t]*$",
    re.M | re.I,
)
_WROTE = re.compile(r"^[ \t>]*On\b[^\n]{0,300}?(?:\n[^\n]{0,300}?)?\bwrote:[ \t]*$", re.I)
_HEADER_LINE = re.compile(r"^[ \t>*]*(?:From|Sent|To|Cc|Bcc|Date|Subject|Reply-To)[ \t*]*:", re.I)
_SUBJECT_LINE = re.compile(r"^[ \t>*]*Subject[ \t*]*:", re.I)
_QUOTE_LINE = re.compile(r"^[ \t]*>")
_WORD = re.compile(r"\w")
_SIG_DELIMITER = re.compile(r"^--[ \t]*$", re.M)
FORWARD_SUBJECT = re.compile(r"^\s*(?:fw|fwd)\s*:", re.I)
_MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
#: The field of a message Document that holds where its quoted history starts in its text
#: (a decimal offset); absent when it quotes nothing.
QUOTED_AT = "quoted_at"


# --------------------------------------------------------------------------- body cleaning


def _unquote(text: str) -> str:
    """Remove one level of ``>`` quoting from every line."""
    return "\n".join(re.sub(r"^[ \t]*> ?", "", line) for line in text.split("\n"))


def _split_header_block(text: str) -> tuple[list[str], str]:
    """The marker line and header lines (From/Sent/To/Subject...) at the top of a quoted
    message, and the rest of it.

    Always takes at least one non-blank line, so repeated calls terminate.
    """
    lines = text.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    head = "\n".join(lines[i : i + 2])
    match = _WROTE.match(head)
    if match:  # 'On <date>, <name> wrote:' is the whole header
        k = i + match.group(0).count("\n") + 1
        return lines[i:k], "\n".join(lines[k:])
    for j in range(i, min(i + 40, len(lines))):
        if _SUBJECT_LINE.match(lines[j]):
            k = j + 1
            while k < len(lines) and lines[k].strip() and _HEADER_LINE.match(lines[k]):
                k += 1
            return lines[i:k], "\n".join(lines[k:])
    # No Subject line: the marker and the header lines (with continuations) that follow.
    k = i + 1
    while k < len(lines) and lines[k].strip():
        k += 1
    return lines[i:k], "\n".join(lines[k:])


_PEOPLE_FIELD = re.compile(r"^[ \t>*]*(From|To|Cc|Bcc)[ \t*]*:[ \t]*(.*)$", re.I)
_OTHER_FIELD = re.compile(r"^[ \t>*]*(?:Sent|Date|Subject|Reply-To)[ \t*]*:", re.I)
_DATE_TIME = r"\d{1,2}/\d{1,2}/\d{2,4}[ \t]+\d{1,2}:\d{2}(?::\d{2})?[ \t]*[AP]M"
#: A Lotus Notes sender line: '"Yvonne Haynes" <y@x.com> on 01/18/2001 12:47:37 PM', or
#: 'Kam Keiser 12/08/2000 10:38 AM'.
_SENDER_ON = re.compile(r"^[ \t]*(.{1,200}?)[ \t]+(?:on[ \t]+)?" + _DATE_TIME + r"[ \t]*$", re.I)
_TRAILING_DATE = re.compile(r"[ \t]+" + _DATE_TIME + r"[ \t]*$", re.I)
_DATE_LINE = re.compile(r"^[ \t]*" + _DATE_TIME + r"[ \t]*$", re.I)


def _header_people(block: list[str]) -> list[str]:
    """The people of a forwarded message's header block, as lines ("From: Ann Lee
    <ann@x.org>", "To: ...", a long list cut with ``cut_list``): who wrote and who got the
    message forwarded, searchable in the message that forwards it. A Lotus Notes block names
    its sender on the line above its date ("Hollis Kimbrough" / "04/10/2001 01:31 PM") or
    before " on <date>"; its To list wraps onto the next lines."""
    fields: list[tuple[str, list[str]]] = []
    sender = ""
    for n, line in enumerate(block):
        m = _PEOPLE_FIELD.match(line)
        if m:
            fields.append((m.group(1).lower(), [m.group(2)]))
        elif _OTHER_FIELD.match(line) or not line.strip():
            if fields:
                fields.append(("", []))  # ends the list before it
        elif fields and fields[-1][0]:
            fields[-1][1].append(line)  # a wrapped list
        elif not fields:
            on = _SENDER_ON.match(line)
            if on:
                sender = on.group(1)
            elif n + 1 < len(block) and _DATE_LINE.match(block[n + 1]) and not _FORWARD.match(line):
                sender = line
    if sender and not any(name == "from" for name, _ in fields):
        fields.insert(0, ("from", [sender]))
    out: list[str] = []
    for name, parts in fields:
        value = " ".join(" ".join(parts).split())
        if not name or not value:
            continue
        if name == "from":  # Lotus Notes writes "From: Ann Lee   02/05/2001 03:13 PM"
            out.append(f"From: {_TRAILING_DATE.sub('', value)}")
        else:  # Outlook separates people with semicolons and writes names "Cherry, Beth"
            out += cut_list(name.capitalize(), people_of(_comma_list(value)))
    return out


def _headed(people: list[str], text: str) -> str:
    """A forwarded message's people lines, then its text, each a paragraph of its own (a
    line without closing punctuation would run on into the next as one sentence)."""
    return "\n\n".join(p for p in (*people, text.strip()) if p)


def _drop_signature(text: str) -> str:
    """Remove a signature ('-- ' line) and, via mail-parser-reply, sign-offs and disclaimers."""
    match = _SIG_DELIMITER.search(text)
    if match and text[: match.start()].strip():
        text = text[: match.start()]
    if not text.strip() or len(text) > MAX_LIBRARY_CHARS:
        return text
    try:
        from mailparser_reply.parser import EmailMessage as ReplyMessage

        parsed = ReplyMessage(text=text, languages=["en"], keep_hyphen_lists=True).read()
        if not parsed.replies:
            return text
        reply = parsed.replies[0]
        body = reply.content.replace(reply.headers or "", "") if reply.headers else reply.content
        for disclaimer in reply.disclaimers or []:
            body = body.replace(disclaimer, "")
        if reply.signatures and _plausible_signature(reply.signatures):
            body = body.replace(reply.signatures, "")
        return body.strip()
    except Exception as exc:  # the library is a heuristic; never lose the body because of it
        log.debug("reply parser failed, the whole body is kept: %s: %s", type(exc).__name__, exc)
        return text


def _plausible_signature(signature: str) -> bool:
    """The library cuts everything after a line starting 'Thanks,' or 'Best,'; accept that only
    when that line is a bare sign-off ('Best regards,' not 'Thanks, that works.') and what
    follows is signature-sized, so a reply's own paragraphs are not thrown away."""
    lines = [line.strip() for line in signature.strip().split("\n") if line.strip()]
    return bool(lines) and len(lines) <= 25 and len(lines[0]) <= 30 and lines[0][-1] not in ".?!"


def _strip_reply(text: str, keep_quote: bool) -> str:
    """The new text of a reply: cut at the quoted earlier message, drop ``>`` lines and signature.

    With ``keep_quote`` (a forward), or when there is no new text before the quote, the
    first quoted message is kept instead of cut -- its header lines reduced to the people
    they name (``_header_people``), without its own quoted history.
    """
    quoted = ""
    match = _REPLY.search(text)
    if match:
        own, rest = text[: match.start()], text[match.start() :]
        if keep_quote or not _WORD.search(own):  # no new words ('?', blank): a forward in disguise
            block, body = _split_header_block(_unquote(rest))
            quoted = _headed(_header_people(block), _strip_reply(body, keep_quote=False))
        text = own
    kept = "\n".join(line for line in text.split("\n") if not _QUOTE_LINE.match(line))
    if keep_quote or not _WORD.search(kept):
        kept = _unquote(text)  # forwarded as '>' lines, or nothing but quotes: keep them
    kept = _drop_signature(kept)
    return "\n\n".join(p.strip() for p in (kept, quoted) if p.strip())


def clean_body(text: str, forwarded: bool = False) -> str:
    """The text of a message body worth indexing: new text plus forwarded content.

    Removed: quoted replies ('-----Original Message-----', 'On ... wrote:', Outlook and
    Lotus Notes header blocks, ``>`` lines) and signatures/sign-offs. Kept: forwarded
    blocks ('Forwarded by', 'Forwarded message', 'Begin forwarded message:'), and with
    ``forwarded`` (an 'FW:' subject) the first quoted message as well, each headed by the
    From/To/Cc lines of its header block (``_header_people``): the person whose message was
    forwarded is found in the message that forwards it, as keyword search finds them.
    """
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    pieces: list[str] = []
    markers = list(_FORWARD.finditer(text))
    pieces.append(_strip_reply(text[: markers[0].start()] if markers else text, keep_quote=forwarded))
    for n, marker in enumerate(markers):
        end = markers[n + 1].start() if n + 1 < len(markers) else len(text)
        part = text[marker.end() : end]
        block, body = _split_header_block("marker\n" + part)
        pieces.append(_headed(_header_people(block[1:]), _strip_reply(body, keep_quote=False)))
    return tidy("\n\n".join(p for p in pieces if p.strip()))


#: At most this much of a reply's quoted history is kept (issue 36): the last few messages
#: of a thread, the part no other message may hold; a 450 KB chain of quoted replies (a
#: "quote bomb") would otherwise become thousands of sentences to encode.
MAX_QUOTED_CHARS = 20_000
_QUOTE_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.M)


def quoted_history(text: str, forwarded: bool = False) -> str:
    """The earlier messages a reply quotes below its own words, which ``clean_body`` leaves
    out: each quoted message as the people of its header block, then its text without its
    ``>`` marks and signature, newest first, at most ``MAX_QUOTED_CHARS``. Empty when the body
    keeps the quote itself (a forward, or a reply with no words of its own) or quotes nothing.

    A sender's words often survive only there (a signature with a phone number, an answer
    quoted in the reply that followed); the indexer keeps them after the message's own text,
    and search ranks them below what the message itself says, and not at all when the quoted
    message is indexed too (``engine.search.answers``)."""
    if forwarded:
        return ""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    forward = _FORWARD.search(text)
    head = text[: forward.start()] if forward else text
    match = _REPLY.search(head)
    own = head[: match.start()] if match else head
    inline = [ln for ln in own.split("\n") if _QUOTE_LINE.match(ln)]
    parts: list[str] = []
    if inline and _WORD.search("\n".join(ln for ln in own.split("\n") if not _QUOTE_LINE.match(ln))):
        parts.append(_QUOTE_PREFIX.sub("", "\n".join(inline)).strip())
    if match and _WORD.search(own):
        rest, size = head[match.start() :], 0
        while rest.strip() and size < MAX_QUOTED_CHARS:
            block, body = _split_header_block(_QUOTE_PREFIX.sub("", rest))
            nxt = _REPLY.search(body)
            words = body[: nxt.start()] if nxt else body
            cut = _SIG_DELIMITER.search(words)
            if cut and words[: cut.start()].strip():
                words = words[: cut.start()]
            piece = _headed(_header_people(block), words)
            parts.append(piece)
            size += len(piece)
            rest = body[nxt.start() :] if nxt else ""
    history = tidy("\n\n".join(p for p in parts if p.strip()))
    if len(history) > MAX_QUOTED_CHARS:
        cut_at = history.rfind("\n\n", 0, MAX_QUOTED_CHARS)
        history = history[: cut_at if cut_at > 0 else MAX_QUOTED_CHARS]
    return history


# --------------------------------------------------------------------------- headers


def _header(msg: Message, name: str) -> str:
    """A header decoded to one line of text; a header the parser chokes on is decoded by hand."""
    try:
        value = msg.get(name)
        text = "" if value is None else str(value)
    except Exception as exc:  # the email package raises many types on a malformed header
        log.debug("header %s decoded by hand: %s: %s", name, type(exc).__name__, exc)
        text = _by_hand(_raw_header(msg, name) or "", name)
    return " ".join(_printable(text).split())


_C1 = re.compile("[\x80-\x9f]")


def _printable(text: str) -> str:
    """A header as a person reads it: control characters (shown as boxes: Enron's
    "Mind\x01,s Eye Madness") dropped, and the C1 range, which Windows text declared as
    Latin-1 puts where cp1252 has its quotes and dashes, read as cp1252 ("Mind\x92s" ->
    "Mind's")."""
    text = _CONTROL.sub("", text)
    if _C1.search(text):
        text = _C1.sub(lambda m: bytes([ord(m.group())]).decode("cp1252", errors="ignore"), text)
    return text


def _by_hand(raw: str, name: str) -> str:
    """A header's value decoded without the parser (RFC 2047 words), else as written."""
    try:
        return str(make_header(decode_header(raw)))
    except Exception as exc:  # a malformed encoded word
        log.debug("header %s kept as it is: %s: %s", name, type(exc).__name__, exc)
        return raw


def _raw_header(msg: Message, name: str) -> str | None:
    """A header's first value as the file holds it (encoded words and all); None if absent."""
    raw = next((v for k, v in msg.raw_items() if k.lower() == name.lower()), None)
    return None if raw is None else str(raw)


def _semicolon_list(value: str) -> str:
    """A list separated by semicolons as RFC 5322 writes it: its people separated by commas,
    and a name holding a comma ("Long, Julie", as Outlook writes names) quoted so that it
    stays one person."""
    items: list[str] = []
    cur: list[str] = []
    quoted = angled = False
    for c in value + ";":
        if c == '"' and not angled:
            quoted = not quoted
        elif c == "<" and not quoted:
            angled = True
        elif c == ">" and not quoted:
            angled = False
        if c == ";" and not quoted and not angled:
            items.append(" ".join("".join(cur).split()).strip(", "))
            cur = []
        else:
            cur.append(c)
    out = []
    for item in filter(None, items):
        name, bracket, rest = item.partition("<")
        if "," in name and "@" not in name and '"' not in name:
            item = f'"{name.strip()}"' + (f" <{rest}" if bracket else "")
        out.append(item)
    return ", ".join(out)


def _comma_list(value: str) -> str:
    """An address list with its people separated by commas: a list separated by semicolons
    read by ``_semicolon_list``, any other as it is."""
    return _semicolon_list(value) if ";" in value else value


def _address_header(msg: Message, name: str) -> str:
    """A From, To, Cc or Bcc header as one line, every person in it. A header the parser finds
    invalid comes back from it with people or addresses dropped: a list separated by
    semicolons (Outlook writes them; RFC 5322 wants commas) as its first person alone,
    "Ann [ann@x.org]" as "Ann", "a@x.org (Ann), <b@x.org> Bob" without the names. Such a
    header is read by hand instead: decoded as written, a semicolon list as a comma list
    (``_semicolon_list``). A header that parses cleanly keeps its parsed text. (The header
    is parsed once: the parser is slow on a long list, and this runs for every message.)"""
    raw = _raw_header(msg, name)
    if raw is None:
        return ""
    try:
        value = msg[name]
        if not any(isinstance(d, errors.InvalidHeaderDefect) for d in getattr(value, "defects", ())):
            return " ".join(str(value).split())  # parsed whole (a group "Team: a@x.org, b@x.org;", a quoted ";")
    except Exception as exc:  # the email package raises many types on a malformed header
        log.debug("header %s decoded by hand: %s: %s", name, type(exc).__name__, exc)
        return " ".join(_by_hand(raw, name).split())
    return _comma_list(" ".join(_by_hand(raw, name).split()))


def _ids(value: str) -> list[str]:
    """Message ids without angle brackets; bare tokens when the header has none."""
    found = _MESSAGE_ID.findall(value)
    return found if found else value.split()


def message_date(msg: Message) -> str:
    """A message's Date as ISO 8601 in UTC (no zone given: UTC), "" when absent or unreadable:
    the instant the index keeps."""
    try:
        header = msg.get("Date")
        dt = getattr(header, "datetime", None)
        if dt is None and header is not None:
            dt = parsedate_to_datetime(str(header))
    except Exception as exc:  # an unparseable Date: the message is kept, undated
        log.debug("unreadable Date header: %s: %s", type(exc).__name__, exc)
        return ""
    if dt is None:
        return ""
    if dt.tzinfo is None:  # '-0000' means UTC with no known local zone
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat()


def message_fields(msg: Message, mailbox: str) -> dict[str, str]:
    """The ``EMAIL_FIELDS`` of a message (empty strings for absent headers)."""
    message_ids = _ids(_header(msg, "Message-ID"))
    in_reply_to = _ids(_header(msg, "In-Reply-To"))
    references = _ids(_header(msg, "References"))
    message_id = message_ids[0] if message_ids else ""
    thread = (references or in_reply_to or [message_id])[0]
    return {
        "from": _address_header(msg, "From"),
        "to": _address_header(msg, "To"),
        "cc": _address_header(msg, "Cc"),
        "bcc": _address_header(msg, "Bcc"),  # the sender's own copy of a message keeps it
        "date": message_date(msg),
        "subject": _header(msg, "Subject"),
        "message_id": message_id,
        "in_reply_to": in_reply_to[0] if in_reply_to else "",
        "references": " ".join(references),
        "thread": thread,
        "mailbox": mailbox,
    }


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


def body_text(raw: str, *, html: bool, fields: dict[str, str]) -> str:
    """The indexed text of a message body (plain text, or HTML with ``html``): its own words
    (``clean_body``), then the history it quotes (``quoted_history``; ``QUOTED_AT`` in
    ``fields`` says where it starts). Shared by RFC 822 messages and Outlook's (``outlook``)."""
    whole = raw
    if html:
        whole, _ = html_to_text(raw, drop_quotes=False)
        raw, _ = html_to_text(raw, drop_quotes=True)
    forwarded = bool(FORWARD_SUBJECT.match(fields["subject"]))
    text = clean_body(raw, forwarded=forwarded)
    history = quoted_history(whole, forwarded=forwarded)
    if history and text:
        # the message's own words, then what it quotes (QUOTED_AT says where)
        fields[QUOTED_AT] = str(len(text) + 2)
        text = f"{text}\n\n{history}"
        if len(history) >= MAX_QUOTED_CHARS - 2000:
            add_note(fields, f"quoted history past {MAX_QUOTED_CHARS:,} characters is not indexed")
    return text


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


# --------------------------------------------------------------------------- addresses


def sender_address(value: str) -> str:
    """The e-mail address of a From header, lower-cased (the whole header if none parses)."""
    name, addr = parseaddr(value or "")
    return (addr or value or "").strip().lower()


#: The header fields that name a message's recipients: the ``to:`` filter, header lines cut
#: into short lines and a document's recipients all read these.
RECIPIENT_FIELDS = ("to", "cc", "bcc")


def addresses(value: str) -> list[str]:
    """The addresses of a To, Cc or Bcc header (its people as ``people_of`` reads them)."""
    return [a for _, a in getaddresses([", ".join(people_of(value or ""))]) if a]


#: One person of a To/Cc value: commas inside quotes ("Kim, Soo-jin") or angle brackets
#: do not separate people; an unclosed quote or bracket runs to the end.
_PERSON = re.compile(r'(?:"[^"]*(?:"|$)|<[^>]*(?:>|$)|[^,"<])+')


#: An e-mail address in text (a name's part, "@", a domain of two labels or more): the one
#: definition the engine uses, here and in the search stage (issue 40: there were three).
ADDRESS = r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+"
EMAIL_ADDRESS = re.compile(ADDRESS)

#: Bare addresses separated by spaces alone ("ann@x.org bob@y.org"), as some mailers write a list.
_SPACED_ADDRESSES = re.compile(rf"\s*<?{ADDRESS}>?(?:\s+<?{ADDRESS}>?)+\s*")


def people_of(value: str) -> list[str]:
    """The people of a To/Cc value as written ("Ann Lee <ann@x.org>", "bob@x.org"), for
    showing and cutting a list; ``addresses`` gives their addresses alone."""
    out: list[str] = []
    for p in _PERSON.findall(value or ""):
        if _SPACED_ADDRESSES.fullmatch(p):
            out += p.split()
        elif p.strip():
            out.append(p.strip())
    return out


#: A To, Cc or Bcc list is cut into lines of at most this many people and ``LINE_CHARS``
#: characters, each indexed (and encoded) as a sentence of its own: a message's header lines
#: (``engine.index.docindex.mail_header_lines``) and a forwarded message's (``clean_body``).
#: The encoder reads at most half its ``max_length`` word pieces of a sentence (64 for
#: sparc-tiny, ``engine.model.features.build_features``), which 140 characters of addresses
#: stay within (measured on the raw Maildir sample's lists, with and without display names);
#: the people of a longer line were not encoded at all, and a 100-person line matched a name
#: weakly in BM25 too, so a person found only in such lists ("What is the email address of
#: X?", "X") lost to unrelated sentences. Six is also what the preview shows of a list.
PEOPLE_PER_LINE = 6
LINE_CHARS = 140


def cut_list(label: str, people: list[str]) -> list[str]:
    """``label: a, b, ...`` lines of at most ``PEOPLE_PER_LINE`` people and ``LINE_CHARS``
    characters (a person longer than that alone on a line), in the list's order."""
    lines: list[list[str]] = [[]]
    for person in people:
        line = lines[-1]
        if line and (len(line) >= PEOPLE_PER_LINE or len(f"{label}: {', '.join([*line, person])}") > LINE_CHARS):
            lines.append(line := [])
        line.append(person)
    return [f"{label}: {', '.join(line)}" for line in lines if line]
