"""A message body as indexed: its own words, then the history it quotes.

A message is indexed by its own words only: quoted replies and signatures are removed so
that a thread of twenty replies does not index the first message twenty times (the
quoted copies are in the store already). Forwarded content is the exception: it usually
came from outside the mailbox, so it is kept, its header lines reduced to the people they
name -- Enron's Lotus Notes "Forwarded by" blocks and Outlook "FW:" messages are often
nothing but that. What a reply quotes is kept apart, after its own words
(:func:`quoted_history`, :data:`~engine.ingest.mailheaders.QUOTED_AT`). Shared by RFC 822
messages (:mod:`engine.ingest.mail`) and Outlook's (:mod:`engine.ingest.outlook`) through
:func:`body_text`.
"""

from __future__ import annotations

import logging
import re

from engine.ingest.documents import add_note
from engine.ingest.formats import html_to_text, tidy
from engine.ingest.mailheaders import _CONTROL, FORWARD_SUBJECT, QUOTED_AT, _comma_list, cut_list, people_of

log = logging.getLogger(__name__)

# The reply-parser library's regexes are slow on huge bodies; past this we cut by markers only.
MAX_LIBRARY_CHARS = 100_000

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

