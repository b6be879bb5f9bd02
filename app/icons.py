"""Document-type icons drawn with QPainter (nothing downloaded, same look on every platform).

A page with a folded corner and a coloured band carrying the format's short name, and an
envelope for e-mail. Drawn at several sizes so they stay sharp on high-DPI screens.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

from app.format import KIND_BADGES

KIND_COLORS: dict[str, str] = {
    "text": "#6b7280",
    "markdown": "#374151",
    "html": "#e67e22",
    "pdf": "#d32f2f",
    "docx": "#2b579a",
    "odt": "#1f7a8c",
    "epub": "#7b8b2e",
    "rtf": "#8e44ad",
    "xlsx": "#217346",
    "ods": "#3a8f3a",
    "pptx": "#c43e1c",
    "odp": "#b5651d",
    "other": "#9ca3af",
    "email": "#1976d2",
    "image": "#00897b",
}

_SIZES = (16, 24, 32, 48, 64)


def _page(p: QPainter, size: int, kind: str) -> None:
    s = float(size)
    fold = s * 0.28
    left, right, top, bottom = s * 0.16, s * 0.84, s * 0.06, s * 0.94
    outline = QPainterPath()
    outline.moveTo(left, top)
    outline.lineTo(right - fold, top)
    outline.lineTo(right, top + fold)
    outline.lineTo(right, bottom)
    outline.lineTo(left, bottom)
    outline.closeSubpath()
    p.setPen(QPen(QColor("#8a8f98"), max(1.0, s / 32)))
    p.setBrush(QColor("#ffffff"))
    p.drawPath(outline)
    p.setBrush(QColor("#dfe3e8"))
    p.drawPolygon(
        QPolygonF([QPointF(right - fold, top), QPointF(right - fold, top + fold), QPointF(right, top + fold)])
    )
    # text lines
    p.setPen(QPen(QColor("#c5cad1"), max(1.0, s / 40)))
    for i in range(3):
        y = top + fold + s * 0.07 + i * s * 0.08
        if y > s * 0.55:
            break
        p.drawLine(QPointF(left + s * 0.08, y), QPointF(right - s * 0.08, y))
    # coloured band with the badge
    band = QRectF(s * 0.04, s * 0.56, s * 0.92, s * 0.3)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(KIND_COLORS.get(kind, "#6b7280")))
    p.drawRoundedRect(band, s * 0.05, s * 0.05)
    badge = KIND_BADGES.get(kind, (kind or "?")[:4].upper())
    if size >= 16 and badge:
        font = QFont()
        font.setBold(True)
        font.setPixelSize(max(5, int(s * (0.22 if len(badge) <= 3 else 0.18))))
        p.setFont(font)
        p.setPen(QColor("#ffffff"))
        p.drawText(band, Qt.AlignmentFlag.AlignCenter, badge)


def _envelope(p: QPainter, size: int) -> None:
    s = float(size)
    body = QRectF(s * 0.06, s * 0.2, s * 0.88, s * 0.6)
    p.setPen(QPen(QColor("#0d47a1"), max(1.0, s / 28)))
    p.setBrush(QColor(KIND_COLORS["email"]))
    p.drawRoundedRect(body, s * 0.06, s * 0.06)
    p.setPen(QPen(QColor("#ffffff"), max(1.0, s / 20)))
    p.setBrush(Qt.BrushStyle.NoBrush)
    flap = QPainterPath()
    flap.moveTo(body.left() + s * 0.04, body.top() + s * 0.05)
    flap.lineTo(body.center().x(), body.top() + body.height() * 0.55)
    flap.lineTo(body.right() - s * 0.04, body.top() + s * 0.05)
    p.drawPath(flap)


def _pixmap(kind: str, size: int) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    if kind == "email":
        _envelope(p, size)
    else:
        _page(p, size, kind)
    p.end()
    return pm


@cache
def kind_icon(kind: str) -> QIcon:
    icon = QIcon()
    for size in _SIZES:
        icon.addPixmap(_pixmap(kind, size))
    return icon


@cache
def app_icon() -> QIcon:
    """A magnifier over a page: the window icon."""
    icon = QIcon()
    for size in (16, 32, 48, 64, 128, 256):
        pm = _pixmap("text", size)
        p = QPainter(pm)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        s = float(size)
        p.setPen(QPen(QColor("#1a55a8"), max(1.5, s / 10)))
        p.setBrush(QColor(255, 255, 255, 200))
        p.drawEllipse(QRectF(s * 0.34, s * 0.12, s * 0.42, s * 0.42))
        p.drawLine(QPointF(s * 0.70, s * 0.48), QPointF(s * 0.92, s * 0.70))
        p.end()
        icon.addPixmap(pm)
    return icon
