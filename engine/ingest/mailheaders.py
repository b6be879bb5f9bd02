"""E-mail semantics, in one place (issue 40): what a message's headers say and how the
engine reads them. Headers are decoded (RFC 2047) into a message's fields
(:func:`message_fields`: From, To, Cc, Bcc, date, subject, ids, thread); an address header
the standard parser finds invalid (a list separated by semicolons, as Outlook writes them)
is read by hand, as the parser would drop people from it; ``thread`` groups a conversation
under the first Message-ID of References. The people of a list (:func:`people_of`), their
addresses (:func:`addresses`, :func:`sender_address`, :data:`EMAIL_ADDRESS`), lists cut into
short lines (:func:`cut_list`), a forward's subject (:data:`FORWARD_SUBJECT`) and where a
reply's quoted history starts (:data:`QUOTED_AT`) are defined here and nowhere else: the
mail readers (:mod:`engine.ingest.mail`, :mod:`engine.ingest.outlook`), the index's header
lines, the search stage and the window all read them from this module (``engine.ingest.mail``
re-exports them).
"""

from __future__ import annotations

import logging
import re
from datetime import timezone
from email import errors
from email.header import decode_header, make_header
from email.message import Message
from email.utils import getaddresses, parseaddr, parsedate_to_datetime

# Malformed mail is ordinary: each fallback below keeps the content and logs at DEBUG.
log = logging.getLogger(__name__)

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

FORWARD_SUBJECT = re.compile(r"^\s*(?:fw|fwd)\s*:", re.I)
_MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
#: The field of a message Document that holds where its quoted history starts in its text
#: (a decimal offset); absent when it quotes nothing.
QUOTED_AT = "quoted_at"


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
