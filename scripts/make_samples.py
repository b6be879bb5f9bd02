"""Build the built-in sample corpus in ``samples/`` from the shared public data (run once).

The sample corpus is what a new user indexes first, and what tests search to check the
whole pipeline end to end. It must therefore be real text in every supported format, small
enough to ship in the repository, and come with questions whose answer sentences are known
to be in specific files. Sources: SQuAD v1.1 dev paragraphs (Wikipedia, CC BY-SA 4.0),
grouped per article and written as .txt/.md/.html/.pdf/.docx/.odt/.epub/.rtf; and raw Enron
messages (public record) as .eml files, one mbox file and one Maildir folder.

Usage: ``python scripts/make_samples.py [--data ../shared/data] [--out samples]``.
Needs fpdf2 (only this script; the app reads PDFs with pypdf).
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import mailbox
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.ingest.extract import extract  # noqa: E402
from engine.ingest.segment import split_passages, split_sentences  # noqa: E402

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
FONT_BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
FIXED_DATE = datetime(2024, 1, 1, tzinfo=timezone.utc)  # reproducible metadata dates
PARAGRAPHS_PER_DOC = 7


@dataclass(frozen=True)
class Article:
    """A SQuAD dev article: MRQA (our dev copy) drops titles and partly shuffles paragraphs,
    so an article is the paragraphs mentioning ``keyword`` inside an index window."""

    title: str
    keyword: str
    window: tuple[int, int]
    file: str


ARTICLES = [
    Article("Super Bowl 50", "Super Bowl 50", (0, 95), "documents/super-bowl-50.txt"),
    Article("Warsaw", "Warsaw", (40, 170), "documents/warsaw.html"),
    Article("Normans", "Norman", (90, 145), "documents/normans.pdf"),
    Article("Nikola Tesla", "Tesla", (140, 265), "documents/nikola-tesla.docx"),
    Article("Martin Luther", "Luther", (320, 430), "documents/martin-luther.odt"),
    Article("Steam engine", "steam", (555, 625), "documents/steam-engine.md"),
    Article("Oxygen", "oxygen", (615, 700), "documents/oxygen.rtf"),
    Article("Amazon rainforest", "Amazon", (765, 800), "documents/amazon-rainforest.epub"),
    Article("Black Death", "Black Death", (860, 930), "documents/black-death.html"),
    Article("Kenya", "Kenya", (1570, 1670), "documents/kenya.txt"),
    Article("Doctor Who", "Doctor Who", (1405, 1540), "documents/doctor-who.md"),
]

ATTRIBUTION = (
    'Source: paragraphs of the Wikipedia article "{title}", as published in the SQuAD v1.1 '
    "development set. Licence: CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/)."
)

# Enron messages (maildir-sample/test-small/<path>): where each goes in the sample corpus.
EML = {
    "fischer-m/all_documents/1.": "mail/distribution-disclaimer.eml",
    "wolfe-j/all_documents/14.": "mail/counterparties-ecc.eml",
    "wolfe-j/all_documents/55.": "mail/xms-expense-system.eml",
    "wolfe-j/all_documents/113.": "mail/california-energy-crisis.eml",
    "wolfe-j/all_documents/54.": "mail/organizational-changes.eml",
}
MBOX = ("mail/trading-track.mbox", ["16.", "115.", "149.", "153.", "171.", "163."])
MAILDIR = ("mail/enron-wolfe", ["2.", "9.", "29.", "47.", "70.", "151."])

# Questions about the e-mails, written for this corpus: (question, answer, words of the answer sentence, file).
MAIL_QUESTIONS = [
    (
        "What disclaimer phrase should be used for the NREL data disk?",
        "The data on this disk is intended for the exclusive use of NREL",
        "let's use this phrase",
        "mail/distribution-disclaimer.eml",
    ),
    (
        "When will Enron North America employees begin using XMS?",
        "March 1, 2001",
        "Effective March 1, 2001 Enron North America",
        "mail/xms-expense-system.eml",
    ),
    (
        "Where is the Trading Track dinner on April 10, 2001?",
        "La Colombe d'Or restaurant",
        "You are cordially invited to attend cocktails and dinner",
        "mail/trading-track.mbox",
    ),
    (
        "Who asked Mog to forward the basic gas reports?",
        "Chris Gaskill",
        "Chris Gaskill asked me to forward",
        "mail/enron-wolfe",
    ),
]


def squash(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- writers


def write_txt(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    path.write_text("\n\n".join([title, *paragraphs, note]) + "\n", encoding="utf-8")


def write_md(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    body = [f"# {title}", "## Overview", paragraphs[0], "## More", *paragraphs[1:], f"*{note}*"]
    path.write_text("\n\n".join(body) + "\n", encoding="utf-8")


def write_html(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    paras = "\n".join(f"    <p>{html.escape(p)}</p>" for p in paragraphs)
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{html.escape(title)}</title>
  <style>body {{ font-family: serif; max-width: 40em; }}</style>
  <script>console.log("not indexed");</script>
</head>
<body>
  <nav><a href="#">Home</a> | <a href="#">Articles</a></nav>
  <main>
    <h1>{html.escape(title)}</h1>
{paras}
  </main>
  <footer><p>{html.escape(note)}</p></footer>
</body>
</html>
"""
    path.write_text(page, encoding="utf-8")


def write_pdf(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_creation_date(FIXED_DATE)
    pdf.set_title(title)
    pdf.set_producer("sparcdesk make_samples.py (fpdf2)")
    pdf.add_font("DejaVu", "", str(FONT))
    pdf.add_font("DejaVu", "B", str(FONT_BOLD))
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 16)
    pdf.multi_cell(0, 9, title, align="L")
    pdf.ln(4)
    pdf.set_font("DejaVu", "", 11)
    for para in [*paragraphs, note]:
        pdf.multi_cell(0, 6, para, align="L")
        pdf.ln(4)
    path.write_bytes(bytes(pdf.output()))


def write_docx(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.core_properties.created = FIXED_DATE.replace(tzinfo=None)
    document.core_properties.modified = FIXED_DATE.replace(tzinfo=None)
    document.add_heading(title, level=1)
    for para in paragraphs:
        document.add_paragraph(para)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Source", f'Wikipedia, "{title}" (SQuAD v1.1 dev)'
    table.cell(1, 0).text, table.cell(1, 1).text = "Licence", "CC BY-SA 4.0"
    document.save(str(path))


def write_odt(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.meta.addElement(dc.Title(text=title))
    document.text.addElement(H(outlinelevel=1, text=title))
    for para in [*paragraphs, note]:
        document.text.addElement(P(text=para))
    document.save(str(path))


def write_epub(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"sparcdesk-sample-{title.lower().replace(' ', '-')}")
    book.set_title(title)
    book.set_language("en")
    book.add_author("Wikipedia contributors")
    half = (len(paragraphs) + 1) // 2
    chapters = []
    for n, chunk in enumerate([paragraphs[:half], paragraphs[half:] + [note]], start=1):
        chapter = epub.EpubHtml(title=f"Part {n}", file_name=f"part{n}.xhtml", lang="en")
        body = "".join(f"<p>{html.escape(p)}</p>" for p in chunk)
        chapter.content = f"<html><body><h1>{html.escape(title)}, part {n}</h1>{body}</body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)


def _rtf_escape(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\\{}":
            out.append("\\" + ch)
        elif code < 128:
            out.append(ch)
        else:
            out.append(f"\\u{code if code < 32768 else code - 65536}?")
    return "".join(out)


def write_rtf(path: Path, title: str, paragraphs: list[str], note: str) -> None:
    lines = [
        r"{\rtf1\ansi\ansicpg1252\deff0",
        r"{\fonttbl{\f0\froman Times New Roman;}}",
        r"{\info{\title " + _rtf_escape(title) + "}}",
        r"\f0\fs32\b " + _rtf_escape(title) + r"\b0\fs24\par",
    ]
    lines += [_rtf_escape(p) + r"\par" for p in [*paragraphs, note]]
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


WRITERS = {
    ".txt": write_txt,
    ".md": write_md,
    ".html": write_html,
    ".pdf": write_pdf,
    ".docx": write_docx,
    ".odt": write_odt,
    ".epub": write_epub,
    ".rtf": write_rtf,
}


def normalise_zip(path: Path) -> None:
    """Rewrite a zip with fixed timestamps so regenerating the samples gives the same bytes."""
    with zipfile.ZipFile(path) as src:
        items = [(info, src.read(info.filename)) for info in src.infolist()]
    with zipfile.ZipFile(path, "w") as dst:
        for info, data in items:
            if info.filename.endswith(".opf"):  # ebooklib stamps the EPUB with the time of writing
                data = re.sub(rb"(dcterms:modified\">)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", data)
            fixed = zipfile.ZipInfo(info.filename, date_time=(2024, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
            fixed.external_attr = info.external_attr
            dst.writestr(fixed, data)


# --------------------------------------------------------------------------- questions


def find_sentence(doc_text: str, source_sentence: str, answer: str) -> str | None:
    """The sentence of the extracted text that is the source sentence (whitespace aside)."""
    target = squash(source_sentence)
    for passage in split_passages(doc_text):
        for span in passage:
            if squash(span.text) == target and answer in squash(span.text):
                return span.text
    return None


def pick_question(paragraphs: list[dict], doc_text: str, file: str) -> dict | None:
    """The first SQuAD question whose answer sentence is found, unchanged, in the extracted file."""
    for para in paragraphs:
        context = para["context"]
        sentences = split_sentences(context)
        for qa in para["qas"]:
            answer = qa["answers"][0]
            start = answer["answer_start"]
            end = start + len(answer["text"])
            holders = [s for s in sentences if s.start <= start and end <= s.end]
            if len(holders) != 1 or len(qa["question"]) < 25:
                continue
            sentence = find_sentence(doc_text, holders[0].text, answer["text"])
            if sentence is None or doc_text.count(sentence) != 1:
                continue
            return {
                "question": qa["question"].strip(),
                "answer": answer["text"],
                "sentence": sentence,
                "file": file,
                "source": f"squad-v1.1-dev:{qa['id']}",
            }
    return None


def mail_question(question: str, answer: str, words: str, file: str, out: Path) -> dict:
    docs = extract(out / file)
    for doc in docs:
        for passage in split_passages(doc.text):
            for span in passage:
                if words in squash(span.text) and answer in squash(span.text):
                    return {
                        "question": question,
                        "answer": answer,
                        "sentence": span.text,
                        "file": file,
                        "message_id": doc.fields.get("message_id", ""),
                        "source": "written for this corpus from the Enron message",
                    }
    raise SystemExit(f"answer sentence for {question!r} not found in {file}")


# --------------------------------------------------------------------------- main


def build_documents(data: Path, out: Path) -> list[dict]:
    with gzip.open(data / "squad" / "dev-v1.1.json.gz", "rt", encoding="utf-8") as handle:
        dev = json.load(handle)
    all_paragraphs = [p for article in dev["data"] for p in article["paragraphs"]]
    questions = []
    for art in ARTICLES:
        lo, hi = art.window
        chosen = [p for p in all_paragraphs[lo : hi + 1] if art.keyword.lower() in p["context"].lower()][
            :PARAGRAPHS_PER_DOC
        ]
        target = out / art.file
        target.parent.mkdir(parents=True, exist_ok=True)
        texts = [" ".join(p["context"].split()) for p in chosen]
        WRITERS[target.suffix](target, art.title, texts, ATTRIBUTION.format(title=art.title))
        if target.suffix in (".docx", ".odt", ".epub"):
            normalise_zip(target)
        doc_text = "\n\n".join(d.text for d in extract(target))
        question = pick_question(chosen, doc_text, art.file)
        if question is None:
            print(f"warning: no question found for {art.file}", file=sys.stderr)
        else:
            questions.append(question)
        print(f"{art.file}: {len(chosen)} paragraphs, {target.stat().st_size} bytes")
    return questions


def build_mail(data: Path, out: Path) -> None:
    source = data / "email" / "maildir-sample" / "test-small"
    (out / "mail").mkdir(parents=True, exist_ok=True)
    for name, dest in EML.items():
        shutil.copyfile(source / name, out / dest)

    mbox_path = out / MBOX[0]
    mbox_path.unlink(missing_ok=True)
    box = mailbox.mbox(str(mbox_path))
    for name in MBOX[1]:
        raw = (source / "wolfe-j" / "all_documents" / name).read_bytes()
        message = mailbox.mboxMessage(raw)
        sender = re.sub(r"\s+", "", str(message["From"] or "MAILER-DAEMON"))
        when = parsedate_to_datetime(str(message["Date"])).astimezone(timezone.utc)
        message.set_from(sender, when.timetuple())
        box.add(message)
    box.flush()
    box.close()

    maildir = out / MAILDIR[0]
    if maildir.exists():
        shutil.rmtree(maildir)
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
        (maildir / sub / ".gitkeep").write_text("")  # git keeps no empty folders
    for n, name in enumerate(MAILDIR[1]):
        raw = (source / "wolfe-j" / "all_documents" / name).read_bytes()
        when = int(
            parsedate_to_datetime(raw.split(b"\nDate: ", 1)[1].split(b"\n", 1)[0].decode()).timestamp()
        )
        # All in new/ (unread): names in cur/ carry ':2,FLAGS', and ':' cannot be checked out on Windows.
        (maildir / "new" / f"{when}.M{n}P0.sparcdesk-sample").write_bytes(raw)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "samples")
    args = parser.parse_args(argv)
    if not (args.data / "squad" / "dev-v1.1.json.gz").exists():
        raise SystemExit(f"shared data not found under {args.data}")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    questions = build_documents(args.data, out)
    build_mail(args.data, out)
    for question, answer, words, file in MAIL_QUESTIONS:
        questions.append(mail_question(question, answer, words, file, out))
    with open(out / "questions.jsonl", "w", encoding="utf-8") as handle:
        for q in questions:
            handle.write(json.dumps(q, ensure_ascii=False) + "\n")
    (out / ".sparcdeskignore").write_text(
        "# Files about the corpus, not part of it: keep them out of the index.\nREADME.md\nquestions.jsonl\n",
        encoding="utf-8",
    )
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{len(questions)} questions; samples total {total / 1024:.0f} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
