"""Render the window's icon (app.icons.app_icon, drawn with QPainter) into the files the
platforms' packages want: PNGs (Linux .desktop, macOS iconset) and a multi-size .ico (Windows).

    python packaging/make_icons.py OUT_DIR     (Qt offscreen; no display needed)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(out: Path) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSize
    from PySide6.QtGui import QImageWriter
    from PySide6.QtWidgets import QApplication

    from app.icons import app_icon

    app = QApplication.instance() or QApplication([sys.argv[0]])  # noqa: F841 (keeps Qt up)
    icon = app_icon()
    out.mkdir(parents=True, exist_ok=True)
    iconset = out / "sparcdesk.iconset"  # macOS: iconutil -c icns sparcdesk.iconset
    iconset.mkdir(exist_ok=True)
    for size in (16, 32, 48, 64, 128, 256, 512):
        image = icon.pixmap(QSize(size, size)).toImage()
        image.save(str(out / f"sparcdesk-{size}.png"))
        if size in (16, 32, 128, 256, 512):
            image.save(str(iconset / f"icon_{size}x{size}.png"))
            if size <= 256:
                big = icon.pixmap(QSize(size * 2, size * 2)).toImage()
                big.save(str(iconset / f"icon_{size}x{size}@2x.png"))
    (out / "sparcdesk.png").write_bytes((out / "sparcdesk-256.png").read_bytes())
    if b"ico" in [bytes(f) for f in QImageWriter.supportedImageFormats()]:
        icon.pixmap(QSize(256, 256)).toImage().save(str(out / "sparcdesk.ico"), "ICO")
    print(f"icons in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
