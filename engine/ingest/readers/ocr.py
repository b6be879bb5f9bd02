"""OCR: the text of pictures (.png, .jpg, .jpeg, .tif, .tiff) and of the PDF pages that have no
text layer (scans), read by RapidOCR (Apache-2.0) on ONNX Runtime with the PP-OCRv6 models its
wheel ships (Apache-2.0): nothing is downloaded, nothing is written.

It runs where every reader runs, in the bounded extraction worker
(:mod:`engine.ingest.extract_worker`), a page (a picture, a TIFF frame, a PDF page) at a time:

* a page gets at most :data:`PAGE_LIMIT_S` seconds (it runs in a thread the reader waits for);
  a page past it stops the document's OCR there, what was read is kept and the note says so,
  and the worker is replaced after the unit (its engine is still busy with that page);
* a document gets at most :data:`DOCUMENT_LIMIT_S` seconds of OCR in all (a 400-page scan
  is read up to there, and the note says where it stopped);
* before each page the worker tells its parent it is alive (:func:`set_progress`), so the
  parent's time limit for one document, which is sized for parsing, applies per page instead;
* a picture smaller than :data:`MIN_SIDE` pixels either way (an icon, a bullet) is not read,
  a larger one is scaled down to :data:`MAX_SIDE` pixels on its longer side first.

The document's ``ocr`` field says "read by OCR" (pages and seconds), so status and the
preview tell OCR text from a text layer. ``SPARCDESK_OCR=0`` turns it off
(``engine.ingest.walk.ocr_enabled``): pictures are then not walked, and a PDF page without
text stays unread, as before.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from engine.ingest.documents import ExtractionError, UnsupportedFormat, add_note
from engine.ingest.readers.common import Extracted, clean, join_paragraphs
from engine.ingest.walk import OCR_SETTING, ocr_enabled

log = logging.getLogger(__name__)

#: A picture (or a page) smaller than this either way is not read: icons, bullets, spacers.
MIN_SIDE = 64
#: A picture is scaled down to at most this many pixels on its longer side before OCR (a
#: 12-megapixel photo or a 600 dpi scan reads as well at 2,000 pixels, and much faster).
MAX_SIDE = 2000
#: A PDF page is rendered at this resolution for OCR (a letter page: 1,700 x 2,200 pixels).
PDF_DPI = 200
#: Seconds one page may take (see the module docstring).
PAGE_LIMIT_S = 60.0
#: Seconds of OCR one document may take in all.
DOCUMENT_LIMIT_S = 600.0
#: Pages (TIFF frames, PDF pages without text) read by OCR in one document at most.
MAX_PAGES = 500
#: Pictures of more pixels than this are refused unread (a decompression bomb, a poster scan).
MAX_PIXELS = 120_000_000
#: ONNX Runtime threads for OCR: ``SPARCDESK_OCR_THREADS``, else half the cores (the other
#: half encodes what was read meanwhile).
THREADS_SETTING = "SPARCDESK_OCR_THREADS"
#: A recognised line below this confidence is dropped (noise read as letters).
MIN_SCORE = 0.5
#: Address space OCR adds to a process: OpenCV, ONNX Runtime's threads and the two models map
#: about 800 MB (350 MB resident after a page), more than the extraction worker's cap
#: leaves, so its cap is raised by this much when OCR is first used.
ADDRESS_SPACE = 1024 * 1024 * 1024

#: What every document read by OCR has in its note.
OCR_NOTE = "read by OCR"
#: The field that says a document was read by OCR (not a ``note``: a note counts as a problem
#: in status, and reading a picture's words is what the user asked for).
OCR_FIELD = "ocr"
#: The note of a picture or page left unread because OCR is off.
OFF_NOTE = f"not read: OCR is off ({OCR_SETTING}=0)"

_engine: Any = None
_engine_lock = threading.Lock()
#: Set when a page overran its limit: its thread still holds the engine, so this process
#: reads nothing more by OCR, and the worker asks to be replaced (``retire_requested``).
_stuck = False
_progress: Callable[[], None] | None = None


def set_progress(callback: Callable[[], None] | None) -> None:
    """A function called before each page is read by OCR (the worker tells its parent it is
    alive, see ``engine.ingest.extract_worker``)."""
    global _progress
    _progress = callback


def retire_requested() -> bool:
    """Whether a page overran its limit in this process (its OCR thread is still running)."""
    return _stuck


def missing() -> list[str]:
    """The modules OCR needs that are not installed."""
    import importlib.util

    return [name for name in ("rapidocr", "onnxruntime", "cv2", "PIL") if importlib.util.find_spec(name) is None]


def _threads() -> int:
    try:
        wanted = int(os.environ.get(THREADS_SETTING, "0"))
    except ValueError:
        wanted = 0
    return wanted if wanted > 0 else max(1, (os.cpu_count() or 2) // 2)


def _get_engine() -> Any:
    """The OCR engine of this process, loaded on first use (about a second: two ONNX models)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _make_room()
            import rapidocr
            from rapidocr import RapidOCR

            models = Path(rapidocr.__file__).parent / "models"
            threads = _threads()
            _engine = RapidOCR(
                params={
                    "Global.log_level": "error",
                    "Global.use_cls": False,  # upside-down text is rare in scans; saves a model
                    "Global.max_side_len": MAX_SIDE,
                    # the models the wheel ships, by path: nothing is looked up or downloaded
                    "Det.model_path": str(models / "PP-OCRv6_det_small.onnx"),
                    "Rec.model_path": str(models / "PP-OCRv6_rec_small.onnx"),
                    "Cls.model_path": str(models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
                    # the detector sees the page at most 960 pixels on its longer side: as
                    # accurate on printed pages, and half the time of its default
                    "Det.limit_type": "max",
                    "Det.limit_side_len": 960,
                    "EngineConfig.onnxruntime.intra_op_num_threads": threads,
                    "EngineConfig.onnxruntime.inter_op_num_threads": 1,
                }
            )
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
        return _engine


def _make_room() -> None:
    """Raise this process's address-space cap (the extraction worker's) by ``ADDRESS_SPACE``."""
    try:
        import resource
    except ImportError:  # Windows: no cap to raise (the parent watches resident memory)
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return
        wanted = soft + ADDRESS_SPACE
        resource.setrlimit(resource.RLIMIT_AS, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
    except (OSError, ValueError) as exc:  # then OCR may fail for memory, and says so
        log.debug("address-space cap not raised for OCR: %s", exc)


def _lines(result: Any) -> list[tuple[float, float, float, str]]:
    """The recognised lines of one page as (top, left, height, text), confident ones only."""
    boxes, txts, scores = getattr(result, "boxes", None), getattr(result, "txts", None), getattr(result, "scores", None)
    if boxes is None or not txts:
        return []
    out = []
    for box, text, score in zip(boxes, txts, scores or [1.0] * len(txts), strict=False):
        text = (text or "").strip()
        if not text or float(score) < MIN_SCORE:
            continue
        ys = [float(p[1]) for p in box]
        xs = [float(p[0]) for p in box]
        out.append((min(ys), min(xs), max(ys) - min(ys), text))
    return out


def _paragraphs(lines: list[tuple[float, float, float, str]]) -> str:
    """A page's lines in reading order, a blank line where the gap between two lines is
    clearly larger than a line's height (a new paragraph, a heading)."""
    if not lines:  # (in the order RapidOCR gives them: top to bottom, left to right)
        return ""
    heights = sorted(h for _, _, h, _ in lines)
    height = max(1.0, heights[len(heights) // 2])
    out: list[str] = []
    prev_bottom: float | None = None
    for top, _, h, text in lines:
        if prev_bottom is not None:
            out.append("\n\n" if top - prev_bottom > 0.8 * height else "\n")
        out.append(text)
        prev_bottom = top + h
    return "".join(out)


class _Budget:
    """The time a document's OCR has left, and why it stopped."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.pages = 0
        self.stopped = ""
        self.failed: list[str] = []

    def spent(self) -> float:
        return time.monotonic() - self.start


def _read_page(image: Any, budget: _Budget, label: str) -> str | None:
    """The text of one page (a PIL image); None when OCR stopped before or on it (the reason
    is in ``budget.stopped``)."""
    global _stuck
    if _stuck:
        budget.stopped = "OCR stopped: an earlier page overran its time limit"
        return None
    if budget.spent() > DOCUMENT_LIMIT_S:
        budget.stopped = f"OCR stopped at {label}: the document's {DOCUMENT_LIMIT_S:g} s of OCR were spent"
        return None
    if _progress is not None:
        _progress()
    engine = _get_engine()
    found: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            found.append(engine(image))
        except BaseException as exc:  # handed to the reader's thread below
            failed.append(exc)

    thread = threading.Thread(target=run, name="sparcdesk-ocr-page", daemon=True)
    thread.start()
    thread.join(PAGE_LIMIT_S)
    if thread.is_alive():
        _stuck = True
        budget.stopped = f"OCR stopped at {label}: it took longer than {PAGE_LIMIT_S:g} s"
        return None
    if failed:
        if isinstance(failed[0], MemoryError):
            raise failed[0]
        log.debug("OCR of %s failed: %s: %s", label, type(failed[0]).__name__, failed[0])
        budget.failed.append(f"{label} ({type(failed[0]).__name__}: {str(failed[0])[:120]})")
        return ""
    budget.pages += 1
    return _paragraphs(_lines(found[0]))


def _fit(image: Any) -> Any:
    """A picture as OCR reads it: RGB (or grey), at most ``MAX_SIDE`` on its longer side."""
    from PIL import Image

    if image.mode not in ("RGB", "L"):
        image = image.convert("RGBA").convert("RGB") if "A" in image.getbands() or image.mode == "P" else image.convert("RGB")
    if max(image.size) > MAX_SIDE:
        scale = MAX_SIDE / max(image.size)
        image = image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))), Image.LANCZOS)
    return image


def _notes(budget: _Budget, unread: int = 0) -> dict[str, str]:
    """What reading by OCR did: ``OCR_FIELD`` (pages and seconds: information, shown with the
    document, not a problem) and, in the ``note``, what went wrong (stopped, failed pages)."""
    fields: dict[str, str] = {}
    if budget.pages:
        pages = "1 page" if budget.pages == 1 else f"{budget.pages} pages"
        fields[OCR_FIELD] = f"{OCR_NOTE} ({pages}, {budget.spent():.0f} s)"
    if budget.stopped:
        add_note(fields, budget.stopped + (f"; {unread} more pages not read" if unread else ""))
    if budget.failed:
        add_note(fields, "OCR failed on " + ", ".join(budget.failed[:5]))
    return fields


# --------------------------------------------------------------------------- pictures


def read_image(data: bytes, where: str) -> Extracted:
    """A picture's text by OCR: every frame of a multi-page TIFF, in order."""
    if not ocr_enabled():
        return "", None, {"note": OFF_NOTE}
    lacking = missing()
    if lacking:
        raise UnsupportedFormat(where, f"pictures are read by OCR, which needs {', '.join(lacking)} installed")
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > MAX_PIXELS:
                raise ExtractionError(where, f"picture too large to read ({width} x {height} pixels)")
            if min(width, height) < MIN_SIDE:
                return "", None, {"note": f"picture too small to read by OCR ({width} x {height} pixels)"}
            frames = getattr(image, "n_frames", 1)
            budget = _Budget()
            pages: list[str] = []
            for number, frame in enumerate(_frames(image), start=1):
                if number > MAX_PAGES:
                    budget.stopped = f"OCR stopped after {MAX_PAGES} pages"
                    break
                label = f"page {number}" if frames > 1 else "the picture"
                text = _read_page(_fit(ImageOps.exif_transpose(frame)), budget, label)
                if text is None:
                    break
                pages.append(text)
    except ExtractionError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, EOFError, SyntaxError) as exc:
        raise ExtractionError(where, f"unreadable picture: {type(exc).__name__}: {exc}") from None
    notes = _notes(budget, unread=max(0, min(frames, MAX_PAGES) - budget.pages) if budget.stopped else 0)
    text = clean(join_paragraphs(pages))
    if not text and not budget.stopped and not budget.failed:
        add_note(notes, "no text found by OCR")
    return text, None, notes


def _frames(image: Any) -> Iterator[Any]:
    from PIL import ImageSequence

    for frame in ImageSequence.Iterator(image):
        yield frame.copy()


# --------------------------------------------------------------------------- PDF pages


def ocr_pdf_pages(data: bytes, numbers: list[int], where: str) -> tuple[dict[int, str], dict[str, str]]:
    """The text of PDF pages (1-based ``numbers``: those without a text layer) by OCR, and
    notes for the document. Pages with no picture on them (blank pages) are not read."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    texts: dict[int, str] = {}
    budget = _Budget()
    try:
        pdf = pdfium.PdfDocument(data)
    except Exception as exc:  # pdfium refuses what pypdf read: the text layer stands alone
        log.debug("%s: pdfium cannot open it for OCR: %s: %s", where, type(exc).__name__, exc)
        return texts, {"note": f"pages without text not read by OCR: {type(exc).__name__}"}
    todo = numbers[:MAX_PAGES]
    try:
        for done, number in enumerate(todo):
            page = pdf[number - 1]
            try:
                if not any(True for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)):
                    continue  # no picture: a blank or vector-only page, nothing OCR could find
                width, height = page.get_size()
                scale = min(PDF_DPI / 72, MAX_SIDE / max(1.0, width, height))
                if min(width, height) * scale < MIN_SIDE:
                    continue
                image = page.render(scale=scale, grayscale=True).to_pil()
            finally:
                page.close()
            text = _read_page(image, budget, f"page {number}")
            if text is None:
                notes = _notes(budget, unread=len(todo) - done)
                break
            texts[number] = text
        else:
            notes = _notes(budget)
    finally:
        pdf.close()
    if len(numbers) > MAX_PAGES:
        add_note(notes, f"pages past {MAX_PAGES} without text not read by OCR")
    return texts, notes


def pdf_ocr_available() -> bool:
    """Whether the PDF reader reads pages without text by OCR (on, and installed)."""
    import importlib.util

    return ocr_enabled() and not missing() and importlib.util.find_spec("pypdfium2") is not None
