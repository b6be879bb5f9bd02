"""OCR (issue 39, item 2): a scanned PDF (pages that are pictures, no text layer) and a picture
(.png, .jpg, .tif) are read by OCR in the extraction worker, page by page, each page under a
time cap, "read by OCR" in the document's ``ocr`` field (not a note: not a problem);
``SPARCDESK_OCR=0`` turns it off.

The scans are made here: real paragraphs rendered with a TrueType font (DejaVu where the
system has it, else the one Pillow ships), light noise added, saved by Pillow's PDF writer,
which writes the pictures and no text.
"""

from __future__ import annotations

import random
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("rapidocr")
pytest.importorskip("pypdfium2")

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from engine.ingest import extract_worker  # noqa: E402
from engine.ingest.documents import Document  # noqa: E402
from engine.ingest.extract import extract  # noqa: E402
from engine.ingest.readers import ocr  # noqa: E402
from engine.ingest.walk import walk  # noqa: E402

NORMANS = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
    "in France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway who, "
    "under their leader Rollo, agreed to swear fealty to King Charles III of West Francia."
)
AMAZON = (
    "The Amazon rainforest covers most of the Amazon basin of South America. This basin encompasses seven "
    "million square kilometres, of which five and a half million square kilometres are covered by the rainforest."
)
OXYGEN = (
    "Oxygen is a chemical element with symbol O and atomic number 8. It is a member of the chalcogen group "
    "on the periodic table and is a highly reactive nonmetal and oxidizing agent."
)
FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:/Windows/Fonts/arial.ttf",
)


def font(size: int = 30) -> ImageFont.FreeTypeFont:
    for path in FONTS:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)  # Pillow's own TrueType font (FreeType builds)


def page(text: str, size: tuple[int, int] = (1654, 2339), seed: int = 1) -> Image.Image:
    """A scanned page: a paragraph at about 12 points on A4 at 200 dpi, grey speckles."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    y = 180
    for line in textwrap.wrap(text, 62):
        draw.text((160, y), line, font=font(), fill=20)
        y += 48
    rnd = random.Random(seed)
    pixels = image.load()
    for _ in range(size[0] * size[1] // 200):
        pixels[rnd.randrange(size[0]), rnd.randrange(size[1])] = rnd.randrange(120, 256)
    return image


def scanned_pdf(path: Path, *texts: str) -> Path:
    pages = [page(t, seed=n).convert("RGB") for n, t in enumerate(texts)]
    pages[0].save(path, "PDF", resolution=200.0, save_all=True, append_images=pages[1:])
    return path


def words(text: str) -> set[str]:
    return {w.strip(".,").lower() for w in text.split()}


def test_a_scanned_pdf_is_read_by_ocr_page_by_page(tmp_path: Path) -> None:
    import pypdf

    path = scanned_pdf(tmp_path / "scan.pdf", NORMANS, AMAZON)
    assert not "".join(p.extract_text() for p in pypdf.PdfReader(path).pages).strip()  # no text layer
    (doc,) = extract(path)
    assert doc.kind == "pdf" and doc.fields["ocr"].startswith("read by OCR (2 pages") and "note" not in doc.fields
    found = words(doc.text)
    assert len(words(NORMANS) - found) <= 3 and len(words(AMAZON) - found) <= 3, doc.text
    assert doc.text.index("Normans") < doc.text.index("Amazon")  # pages in order


def test_a_picture_is_read_by_ocr(tmp_path: Path) -> None:
    path = tmp_path / "notice.png"
    page(OXYGEN, size=(1400, 500)).save(path)
    jpeg = tmp_path / "notice.jpeg"
    page(OXYGEN, size=(1400, 500)).convert("RGB").save(jpeg, quality=85)
    assert list(walk(tmp_path)) == [jpeg, path]
    for p in (path, jpeg):
        (doc,) = extract(p)
        assert (doc.kind, doc.title) == ("image", p.name)
        assert doc.fields["ocr"].startswith("read by OCR (1 page")
        assert len(words(OXYGEN) - words(doc.text)) <= 3, doc.text


def test_a_multi_page_tiff_is_read_frame_by_frame(tmp_path: Path) -> None:
    path = tmp_path / "fax.tiff"
    first, second = page(NORMANS, size=(1400, 520)), page(OXYGEN, size=(1400, 520), seed=2)
    first.save(path, save_all=True, append_images=[second], compression="tiff_deflate")
    (doc,) = extract(path)
    assert "read by OCR (2 pages" in doc.fields["ocr"]
    assert "Rollo" in doc.text and "chalcogen" in doc.text


def test_small_pictures_and_ocr_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    icon = tmp_path / "icon.png"
    Image.new("RGB", (48, 48), "white").save(icon)
    small = tmp_path / "bullet.png"
    noisy = Image.effect_noise((60, 200), 80).convert("RGB")
    noisy.save(small)
    assert icon.stat().st_size < 2048 <= small.stat().st_size
    assert list(walk(tmp_path)) == [small]  # an icon is not walked at all
    (doc,) = extract(small)
    assert doc.text == "" and doc.fields["note"] == "picture too small to read by OCR (60 x 200 pixels)"
    pdf = scanned_pdf(tmp_path / "scan.pdf", AMAZON)
    monkeypatch.setenv("SPARCDESK_OCR", "0")
    assert list(walk(tmp_path)) == [pdf]  # pictures are left out, as before OCR
    (doc,) = extract(pdf)
    assert doc.text == "" and doc.fields["note"] == "no extractable text (scanned or image-only PDF?)"
    (doc,) = extract(small)
    assert doc.fields["note"] == "not read: OCR is off (SPARCDESK_OCR=0)"


def test_a_page_past_its_time_cap_stops_ocr_and_keeps_what_was_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    calls: list[int] = []

    class Slow:
        """An OCR engine whose second page never ends (until the test lets it)."""

        def __call__(self, image):
            calls.append(1)
            if len(calls) == 2:
                release.wait(30)
            return type("R", (), {"boxes": [[(0, 0), (9, 0), (9, 9), (0, 9)]], "txts": ("page text",), "scores": (0.99,)})()

    monkeypatch.setattr(ocr, "_engine", Slow())
    monkeypatch.setattr(ocr, "_stuck", False)
    monkeypatch.setattr(ocr, "PAGE_LIMIT_S", 0.5)
    path = scanned_pdf(tmp_path / "scan.pdf", NORMANS, AMAZON, OXYGEN)
    try:
        (doc,) = extract(path)
        assert doc.text == "page text"
        assert "read by OCR (1 page" in doc.fields["ocr"]
        assert "OCR stopped at page 2: it took longer than 0.5 s; 2 more pages not read" in doc.fields["note"]
        assert ocr.retire_requested()  # the worker is replaced after this unit
        (doc,) = extract(scanned_pdf(tmp_path / "next.pdf", AMAZON))
        assert "OCR stopped" in doc.fields["note"] and len(calls) == 2  # nothing more in this process
    finally:
        release.set()


@pytest.mark.slow
def test_the_worker_allows_each_page_its_own_time(tmp_path: Path) -> None:
    """The worker's parent allows a document a time sized for parsing (2 s here); OCR says
    before each page that it is alive, so a scan that takes longer in all is read whole."""
    path = scanned_pdf(tmp_path / "scan.pdf", NORMANS, AMAZON)
    extractor = extract_worker.Extractor(time_limit=lambda size: 2.0)
    try:
        start = time.monotonic()
        items = list(extractor.extract(path, 50 * 1024 * 1024))
        took = time.monotonic() - start
    finally:
        extractor.close()
    assert len(items) == 1 and isinstance(items[0], Document), items
    assert "Rollo" in items[0].text and "rainforest" in items[0].text
    assert took > 2.0 and "read by OCR (2 pages" in items[0].fields["ocr"]


@pytest.mark.slow
def test_the_engine_finds_a_scan_and_a_picture_by_their_words(tmp_path: Path) -> None:
    from engine.api.facade import Engine

    docs = tmp_path / "docs"
    docs.mkdir()
    scanned_pdf(docs / "history-scan.pdf", NORMANS, AMAZON)
    page(OXYGEN, size=(1400, 500)).save(docs / "chemistry.png")
    (docs / "notes.txt").write_text("Shopping list: bread, milk and apples.\n", encoding="utf-8")
    with Engine(home=tmp_path / "home", threads=1) as e:
        e.index([docs])
        top = e.ask("Who was the leader of the Norse raiders?")[0]
        assert Path(top.path).name == "history-scan.pdf" and "Rollo" in top.best.sentence
        top = e.ask("How many square kilometres does the Amazon basin encompass?")[0]
        assert Path(top.path).name == "history-scan.pdf"
        top = e.ask("What is the atomic number of oxygen?")[0]
        assert Path(top.path).name == "chemistry.png" and top.kind == "image"
