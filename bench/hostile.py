"""A corpus of hostile files, and a corpus of good ones to compare with (issue 17).

    .venv/bin/python -m bench.hostile OUT [--hostile 970] [--good 30]

Good files: short documents in every format read (text, Markdown, HTML, DOCX, ODT, EPUB,
PDF, XLSX, PPTX, e-mail), each stating a fact with a token of its own, and a question
that finds it. Hostile files, derived from them and made from scratch, in the proportions
below (scaled to ``--hostile``): truncated and bit-flipped PDF/DOCX/ODT/EPUB/XLSX/PPTX,
zip bombs named .docx/.epub/.odt, an ODT holding one 200 MB paragraph, a DOCX of
2,000,000 paragraphs, a 1 GB sparse file, a 50 MB single line, HTML nested 100,000 deep,
malformed MIME (message/rfc822 nested 200 deep, a 30 MB attachment, broken boundaries and
base64), invalid encodings, symbolic link loops (one in a Maildir's cur/), FIFOs and odd
names; and the third campaign's kinds (issue 35): a 6 MB line without a full stop, raw 8-bit
bytes in address headers and the UTF-8 bytes of a lone surrogate, quote bombs (300 levels of
"> ", 450 KB of "Original Message" blocks), an mbox of 10,000 empty messages, and links to a
FIFO and to /dev/zero. ``make_corpus`` returns a manifest: the hostile files (relative paths) and the good
files' questions.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import zipfile
from collections.abc import Callable
from pathlib import Path

WORDS = [
    "river",
    "harbour",
    "lantern",
    "meadow",
    "copper",
    "violin",
    "glacier",
    "orchard",
    "falcon",
    "pepper",
    "marble",
    "canyon",
    "willow",
    "tunnel",
    "beacon",
    "saddle",
    "quarry",
    "thistle",
    "compass",
    "ember",
    "prairie",
    "walnut",
    "lagoon",
    "basalt",
]

KINDS = ("txt", "md", "html", "docx", "odt", "epub", "pdf", "xlsx", "pptx", "eml")


def _fact(i: int) -> tuple[str, str, str]:
    rng = random.Random(i)
    a, b, c = rng.sample(WORDS, 3)
    token = f"zq{i:05d}"
    sentences = [
        f"Record {token} says the {a} stands beside the {b}.",
        f"The keeper of the {c} wrote record {token} in the spring.",
        f"Nothing else in record {token} mentions the {a} or the {b}.",
    ]
    return token, " ".join(sentences), f"where does the {a} stand in record {token}?"


def _pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` in Helvetica (written by hand: no PDF library needed)."""
    lines = [text[i : i + 80] for i in range(0, len(text), 80)]
    esc = [ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for ln in lines]
    content = "BT /F1 11 Tf 50 750 Td 14 TL " + " ".join(f"({ln}) Tj T*" for ln in esc) + " ET"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def write_good(path: Path, kind: str, text: str, title: str) -> Path:
    """A valid document of ``kind`` holding ``text``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "txt":
        path.write_text(text + "\n")
    elif kind == "md":
        path.write_text(f"# {title}\n\n{text}\n")
    elif kind == "html":
        path.write_text(f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>")
    elif kind == "docx":
        import docx

        d = docx.Document()
        d.add_paragraph(text)
        d.save(path)
    elif kind == "odt":
        from odf.opendocument import OpenDocumentText
        from odf.text import P

        d = OpenDocumentText()
        d.text.addElement(P(text=text))
        d.save(str(path))
    elif kind == "epub":
        from ebooklib import epub

        book = epub.EpubBook()
        book.set_identifier(title)
        book.set_title(title)
        ch = epub.EpubHtml(
            title="one", file_name="one.xhtml", content=f"<html><body><p>{text}</p></body></html>"
        )
        book.add_item(ch)
        book.spine = [ch]
        book.add_item(epub.EpubNcx())
        book.add_item(epub.EpubNav())
        epub.write_epub(str(path), book)
    elif kind == "pdf":
        path.write_bytes(_pdf(text))
    elif kind == "xlsx":
        import openpyxl

        wb = openpyxl.Workbook()
        for s in text.split(". "):
            wb.active.append([s])
        wb.save(path)
    elif kind == "pptx":
        import pptx

        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = text
        deck.save(path)
    elif kind == "eml":
        path.write_text(
            f"From: Ann <ann@example.org>\nTo: bob@example.org\nSubject: {title}\n"
            f"Message-ID: <{title}@example.org>\nDate: Mon, 1 Jan 2024 10:00:00 +0000\n\n{text}\n"
        )
    return path


def make_good(folder: Path, n: int) -> dict:
    """``n`` good files in ``folder``; returns ``{"hostile": [], "good": [questions]}``."""
    questions = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        token, text, question = _fact(i)
        rel = f"good/{kind}/{token}.{kind}"
        write_good(folder / rel, kind, text, f"record-{token}")
        questions.append({"file": rel, "question": question})
    return {"hostile": [], "good": questions}


# --------------------------------------------------------------------------- hostile files


def _truncated(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randint(1, max(1, len(data) - 1))]


def _flipped(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 40)):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def _zip_bomb(path: Path, names: list[str], mb: int, mimetype: bytes | None = None) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        if mimetype:
            z.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for name in names:
            with z.open(name, "w", force_zip64=True) as f:
                block = b"\0" * (1 << 20)
                for _ in range(mb):
                    f.write(block)


def _odt_paragraph(path: Path, mb: int) -> None:
    head = (
        b'<?xml version="1.0"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        b' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text><text:p>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("mimetype", b"application/vnd.oasis.opendocument.text", compress_type=zipfile.ZIP_STORED)
        z.writestr(
            "META-INF/manifest.xml",
            b'<?xml version="1.0"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            b'<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>',
        )
        with z.open("content.xml", "w", force_zip64=True) as f:
            f.write(head)
            chunk = b"word " * ((1 << 20) // 5)
            for _ in range(mb):
                f.write(chunk)
            f.write(b"</text:p></office:text></office:body></office:document-content>")


def _docx_paragraphs(path: Path, n: int) -> None:
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    ct = (
        b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        b'<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        b'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'officeDocument" Target="word/document.xml"/></Relationships>'
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", ct)
        z.writestr("_rels/.rels", rels)
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            f.write(f'<?xml version="1.0"?><w:document {w}><w:body>'.encode())
            para = b"<w:p><w:r><w:t>Go.</w:t></w:r></w:p>"
            for _ in range(n // 1000):
                f.write(para * 1000)
            f.write(b"</w:body></w:document>")


def _nested_mime(depth: int) -> bytes:
    msg = b"From: x@y\nSubject: inner\nContent-Type: text/plain\n\nThe innermost message.\n"
    for i in range(depth):
        msg = (
            (
                f"From: a{i}@example.org\nTo: b@example.org\nSubject: level {i}\nMIME-Version: 1.0\n"
                f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\nContent-Type: text/plain\n\nlevel {i}\n'
                f"--b{i}\nContent-Type: message/rfc822\n\n"
            ).encode()
            + msg
            + f"\n--b{i}--\n".encode()
        )
    return msg


def _huge_attachment(mb: int) -> bytes:
    body = base64.encodebytes(os.urandom(mb << 20))
    return (
        b"From: a@example.org\nTo: b@example.org\nSubject: huge\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="XX"\n\n--XX\nContent-Type: text/plain\n\nSee attached.\n'
        b'--XX\nContent-Type: application/pdf; name="big.pdf"\nContent-Transfer-Encoding: base64\n\n'
        + body
        + b"\n--XX--\n"
    )


def _quote_nested(depth: int) -> str:
    """A reply quoting its history ``depth`` levels deep ("> > > ...")."""
    lines = ["From: a@b.org", "To: c@d.org", "Subject: re: nested", "", "Top reply here."]
    for d in range(1, depth + 1):
        lines += [">" * d + " On Mon, Bob wrote:", ">" * d + f" level {d} text goes here with some words"]
    return "\n".join(lines) + "\n"


def _quote_blocks(size: int) -> str:
    """A reply of ``size`` characters of "-----Original Message-----" blocks, one per reply."""
    parts = ["From: a@b.org\nTo: c@d.org\nSubject: re: bomb\n\nTop reply.\n"]
    i, total = 0, len(parts[0])
    while total < size:
        parts.append(
            f"\n-----Original Message-----\nFrom: Person {i} <p{i}@x.org>\nSent: Monday, May 14, 2001 10:{i % 60:02d}"
            f" AM\nTo: someone@x.org\nSubject: RE: bomb\n\nReply number {i} says hello.\n"
        )
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def _adder(folder: Path, out: list[str]) -> Callable[[str], Path]:
    """``add(rel)``: records ``rel`` as a hostile file and returns its path under ``folder``,
    its parent made."""

    def add(rel: str) -> Path:
        out.append(rel)
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    return add


def _make_monsters(folder: Path, add: Callable[[str], Path], out: list[str]) -> None:
    """The one-off monsters (always made, whatever the scale)."""
    with open(add("big/sparse-1gb.txt"), "wb") as f:
        f.truncate(1 << 30)
    with open(add("big/single-line-50mb.txt"), "wb") as f:
        line = b" ".join(w.encode() for w in WORDS) + b" "
        for _ in range((49 << 20) // len(line)):
            f.write(line)
    _odt_paragraph(add("big/paragraph-200mb.odt"), 200)
    _docx_paragraphs(add("big/two-million-paragraphs.docx"), 2_000_000)
    add("big/nested-100k.html").write_text("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000)
    add("mail/nested-rfc822.eml").write_bytes(_nested_mime(200))
    # issue 35: the third campaign's kinds
    add("big/one-line-6mb.txt").write_text("w " * 2_990_000)
    add("mail/surrogate-header.eml").write_bytes(
        b"From: mark.fisher\x97enron.com\nTo: jeff.duff\xd2enron.com\nSubject: \xff\xfe odd\n\nA message whose "
        b"address headers hold raw 8-bit bytes.\n"
    )
    add("encodings/surrogate-bytes.txt").write_bytes(b"UTF-8 bytes of a lone surrogate \xed\xb3\xbf here.\n")
    add("mail/quote-nested.eml").write_text(_quote_nested(300))
    add("mail/quote-bomb.eml").write_text(_quote_blocks(450_000))
    add("mail/ten-thousand-empty.mbox").write_text(
        "".join("From x@y Mon Jan  1 00:00:00 2001\nFrom: x@y\nSubject: \n\n\n" for _ in range(10_000))
    )
    os.mkfifo(folder / "links-special-fifo")
    os.symlink(folder / "links-special-fifo", add("links/fifo.txt"))
    os.symlink("/dev/zero", add("links/dev-zero.txt"))
    add("mail/huge-attachment.eml").write_bytes(_huge_attachment(30))
    box = folder / "mail" / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True, exist_ok=True)
    (box / "cur" / "1.host:2,S").write_bytes(
        b"From: a@b\nSubject: ok\n\nA fine message in a damaged Maildir.\n"
    )
    os.symlink(box / "cur" / "loop", box / "cur" / "loop")
    out.append("mail/Maildir")


def _base_documents(folder: Path) -> dict[str, bytes]:
    """A good document of each binary kind, as bytes to damage (written in a scratch folder
    under ``folder``, then removed)."""
    bases: dict[str, bytes] = {}
    scratch = folder / ".bases"
    for kind in ("pdf", "docx", "odt", "epub", "xlsx", "pptx"):
        _, text, _ = _fact(10_000 + len(bases))
        bases[kind] = write_good(scratch / f"base.{kind}", kind, (text + " ") * 20, "base").read_bytes()
    for p in scratch.iterdir():
        p.unlink()
    scratch.rmdir()
    return bases


def _plan(left: int) -> list[str]:
    """What each of the ``left`` many hostile files is, by share of each damage."""
    share = {"truncated": 0.30, "flipped": 0.40, "bomb": 0.04, "encoding": 0.08, "mime": 0.08, "link": 0.03}
    plan: list[str] = []
    for what, frac in share.items():
        plan += [what] * int(round(frac * left))
    plan += ["name"] * max(0, left - len(plan))
    return plan[:left]


def _bad_encoding(rng: random.Random) -> bytes:
    return rng.choice(
        (
            os.urandom(rng.randint(10, 5000)),
            "naïve café — ümlaut".encode("utf-16-le") * 50,
            b"\xff\xfe" + os.urandom(999),
            b"valid start then \xc3\x28 \xa0\xa1 invalid utf-8 " * 100,
            b"\x00" * 100 + b"text after NULs",
        )
    )


def _bad_mime(rng: random.Random) -> bytes:
    return rng.choice(
        (
            b"From: a@b\nContent-Type: multipart/mixed; boundary=\n\n--\n--\n",
            b'From: a@b\nContent-Type: multipart/mixed; boundary="q"\n\n--q\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!\n',
            b"Subject: =?utf-8?b?////?=\nFrom: =?bogus?q?x?=\n\n" + os.urandom(200),
            _nested_mime(rng.randint(5, 60)),
            b"From: a@b\nContent-Type: message/rfc822\n\n" * 50,
        )
    )


def _odd_name(i: int, rng: random.Random) -> str:
    return rng.choice(
        (
            f"odd/-{i}-leading-dash.txt",
            f"odd/new\nline-{i}.txt",
            f"odd/{'x' * 200}-{i}.txt",
            f"odd/space {i} .txt",
            f"odd/ünïcödé-{i}.txt",
        )
    )


def _make_hostile(
    i: int, what: str, kind: str, bases: dict[str, bytes], rng: random.Random, add: Callable[[str], Path]
) -> None:
    """The ``i``-th of the many: ``what`` damage (on a ``kind`` document where it damages one)."""
    if what == "truncated":
        add(f"damaged/truncated-{i}.{kind}").write_bytes(_truncated(bases[kind], rng))
    elif what == "flipped":
        add(f"damaged/flipped-{i}.{kind}").write_bytes(_flipped(bases[kind], rng))
    elif what == "bomb":
        ext = rng.choice(("docx", "epub", "odt"))
        mime = {"epub": b"application/epub+zip", "odt": b"application/vnd.oasis.opendocument.text"}.get(
            ext
        )
        _zip_bomb(
            add(f"bombs/bomb-{i}.{ext}"),
            ["word/document.xml", "content.xml"],
            rng.choice((300, 1000)),
            mime,
        )
    elif what == "encoding":
        data = _bad_encoding(rng)
        add(f"encodings/bad-{i}.{rng.choice(('txt', 'md', 'html'))}").write_bytes(data)
    elif what == "mime":
        add(f"mail/bad-{i}.eml").write_bytes(_bad_mime(rng))
    elif what == "link":
        p = add(f"links/loop-{i}.txt")
        os.symlink(p.name, p)
    else:
        add(_odd_name(i, rng)).write_bytes(os.urandom(64))


def make_corpus(folder: Path, hostile: int = 970, good: int = 30, seed: int = 17) -> dict:
    """``hostile`` hostile files and ``good`` good ones under ``folder``; the manifest."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    manifest = make_good(folder, good)
    out: list[str] = []
    add = _adder(folder, out)
    _make_monsters(folder, add, out)
    made = len(out)

    # the many: damaged documents, bombs, bad encodings, bad MIME, links, names
    bases = _base_documents(folder)
    for i, what in enumerate(_plan(max(0, hostile - made))):
        kind = rng.choice(list(bases))
        _make_hostile(i, what, kind, bases, rng, add)
    # a file whose name is not valid UTF-8
    raw = os.fsencode(folder / "odd") + b"/bad-\xff\xfe-name.pdf"
    with open(raw, "wb") as f:
        f.write(_truncated(bases["pdf"], rng))
    out.append(os.fsdecode(raw)[len(str(folder)) + 1 :])
    fifo = folder / "odd" / "pipe.txt"
    os.mkfifo(fifo)  # the walk skips it (not a document), so it is not counted as hostile
    manifest["hostile"] = out
    (folder.parent / f"{folder.name}-manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--hostile", type=int, default=970)
    p.add_argument("--good", type=int, default=30)
    args = p.parse_args(argv)
    m = make_corpus(args.out, args.hostile, args.good)
    print(f"{len(m['hostile'])} hostile files and {len(m['good'])} good ones in {args.out}")


if __name__ == "__main__":
    main()
