"""First-run page (no sources yet: offer the sample corpus) and the message page.

The message page stands in for the result list when there is nothing to list: before the
first question (with example questions to click), when a search found nothing, or while
the engine is loading.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.icons import app_icon


def samples_dir() -> Path | None:
    """The built-in sample corpus (``$SPARCDESK_SAMPLES`` or ``samples/`` beside the package)."""
    env = os.environ.get("SPARCDESK_SAMPLES")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[1] / "samples")
    for c in candidates:
        if (c / "documents").is_dir():
            return c
    return None


#: Examples offered first (answered well even by a young model); others fill the list.
PREFERRED_EXAMPLES = (
    "What did Tesla do in December 1878?",
    "Who introduced plague to Europe?",
    "What planet is Doctor Who from?",
    "When will Enron North America employees begin using XMS?",
)


def sample_questions(limit: int = 4) -> list[str]:
    """A few questions the sample corpus answers (documents first, then e-mail)."""
    root = samples_dir()
    if root is None:
        return []
    try:
        rows = [
            json.loads(line)
            for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    except (OSError, ValueError):
        return []
    known = {r["question"] for r in rows}
    picked = [q for q in PREFERRED_EXAMPLES if q in known]
    docs = [r["question"] for r in rows if r.get("file", "").startswith("documents/")]
    mail = [r["question"] for r in rows if r.get("file", "").startswith("mail/")]
    for q in docs + mail:
        if len(picked) >= limit:
            break
        if q not in picked:
            picked.append(q)
    return picked[:limit]


_WORDS = (
    "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
)  # fmt: skip


def _in_words(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else f"{n:,}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def sample_contents(root: Path) -> tuple[int, int, int]:
    """(documents, formats, e-mails) of the sample corpus as the indexer reads it: a
    document is a file of ``documents/`` whose extension the extractor reads
    (``engine.ingest.formats.EXTENSION_KINDS``), its format the extractor's kind; the e-mails are
    the ``.eml`` files and the messages of the mbox files and Maildir folders of ``mail/``."""
    from engine.ingest.formats import EXTENSION_KINDS

    kinds = [
        EXTENSION_KINDS[p.suffix.lower()]
        for p in sorted((root / "documents").rglob("*"))
        if p.is_file() and p.suffix.lower() in EXTENSION_KINDS
    ]
    mails = 0
    mail = root / "mail"
    for p in sorted(mail.iterdir()) if mail.is_dir() else []:
        if p.is_dir() and (p / "cur").is_dir():
            mails += sum(
                1
                for sub in ("cur", "new")
                if (p / sub).is_dir()
                for m in (p / sub).iterdir()
                if m.is_file() and not m.name.startswith(".")  # .gitkeep and the like
            )
        elif p.suffix.lower() == ".eml":
            mails += 1
        elif p.suffix.lower() in (".mbox", ".mbx"):  # read only (mailbox.mbox opens it read-write)
            with p.open("rb") as f:
                mails += sum(1 for line in f if line.startswith(b"From "))
    return len(kinds), len(set(kinds)), mails


def samples_text(root: Path | None) -> str:
    """The welcome page's offer of the samples, with what they hold counted (not promised)."""
    if root is None:
        return "The sample documents are not installed with this copy of sparcdesk."
    docs, formats, mails = sample_contents(root)
    return (
        f"New here? Index the built-in samples — {_in_words(docs)} Wikipedia article{_s(docs)} in "
        f"{_in_words(formats)} file format{_s(formats)} and {_in_words(mails)} e-mail{_s(mails)} — and ask "
        "your first question in under a minute."
    )


def _title(text: str) -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * 1.6)
    font.setBold(True)
    label.setFont(font)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)  # a narrow window wraps a long title instead of widening
    return label


def _para(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


class WelcomePage(QWidget):
    samples_requested = Signal()
    add_folder_requested = Signal()
    add_mail_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcome")
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(96, 96))
        icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # Alt+P: Alt+S opens the Search menu (issue 36, item 10)
        self.samples_btn = QPushButton("Try the sam&ple documents")
        self.samples_btn.setObjectName("samplesButton")
        self.samples_btn.setDefault(True)
        self.samples_btn.setMinimumHeight(36)
        self.samples_btn.clicked.connect(self.samples_requested)
        root = samples_dir()
        self.samples_btn.setEnabled(root is not None)
        if root is None:
            self.samples_btn.setToolTip("The sample corpus is not installed with this copy of sparcdesk")
        else:
            self.samples_btn.setToolTip(str(root))
        self.folder_btn = QPushButton("Add a f&older…")  # Alt+F is the File menu
        self.folder_btn.clicked.connect(self.add_folder_requested)
        self.mail_btn = QPushButton("Add a &mail store…")
        self.mail_btn.clicked.connect(self.add_mail_requested)

        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.folder_btn)
        row.addWidget(self.mail_btn)
        row.addStretch(1)
        sample_row = QHBoxLayout()
        sample_row.addStretch(1)
        sample_row.addWidget(self.samples_btn)
        sample_row.addStretch(1)

        layout = QVBoxLayout(self)
        layout.addStretch(2)
        layout.addWidget(icon)
        layout.addWidget(_title("Welcome to sparcdesk"))
        layout.addWidget(
            _para(
                "Ask questions of your documents and e-mail and get the sentence that answers them.<br>"
                "Everything is read and indexed on this computer; nothing leaves it."
            )
        )
        layout.addSpacing(16)
        self.samples_text = _para(samples_text(root))
        self.samples_text.setObjectName("samplesText")
        layout.addWidget(self.samples_text)
        layout.addLayout(sample_row)
        layout.addSpacing(16)
        layout.addWidget(_para("Or choose what to search:"))
        layout.addLayout(row)
        layout.addStretch(3)
        layout.setContentsMargins(32, 16, 32, 16)


class MessagePage(QWidget):
    """A title, a paragraph and optional example questions that run when clicked."""

    question_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("message")
        self.title = _title("")
        self.text = _para("")
        self.text.setObjectName("messageText")
        self.examples = _para("")
        self.examples.setObjectName("examples")
        self.examples.linkActivated.connect(
            lambda href: self.question_clicked.emit(href.removeprefix("ask:"))
        )
        layout = QVBoxLayout(self)
        layout.addStretch(2)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addSpacing(12)
        layout.addWidget(self.examples)
        layout.addStretch(3)
        layout.setContentsMargins(32, 16, 32, 16)

    def show_message(self, title: str, text: str = "", examples: list[str] | None = None) -> None:
        self.title.setText(title)
        self.text.setText(text)
        self.text.setVisible(bool(text))
        if examples:
            links = "<br>".join(
                f'<a href="ask:{html.escape(q, quote=True)}">{html.escape(q)}</a>' for q in examples
            )
            self.examples.setText(f"Try:<br>{links}")
            self.examples.show()
        else:
            self.examples.setText("")
            self.examples.hide()
