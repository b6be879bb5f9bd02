"""Find the files and mail stores under a folder that are worth extracting.

A laptop's home folder holds far more junk than documents (VCS metadata, virtual
environments, build output, media), so the walk prunes those early instead of letting the
extractors reject them one by one. It never follows a symbolic link into a folder it has
already entered (a loop yields an error entry and the walk goes on), and it reports
unreadable folders as error entries rather than stopping.

Every yielded ``Path`` is one extraction unit: a regular file, an mbox file, or a Maildir
folder (a directory with ``cur``/``new``). ``classify`` tells them apart and is what
``engine.extract`` dispatches on, so the walk and the extractors agree.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from engine.documents import ExtractionError

# Folder names that never hold user documents.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "_darcs",
        "CVS",
        "node_modules",
        "bower_components",
        "__pycache__",
        ".venv",
        "venv",
        "site-packages",
        "build",
        "dist",
        ".tox",
        ".nox",
        ".eggs",
        "target",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".gradle",
        ".idea",
        ".cache",
        "Pods",
        "DerivedData",
    }
)

# Extensions of files that are never text documents (checked lower-case).
BINARY_EXTENSIONS = frozenset(
    (
        # images
        ".png .jpg .jpeg .gif .bmp .tif .tiff .webp .ico .icns .heic .heif .raw .cr2 .nef .psd .xcf"
        " .svgz .avif"
        # audio / video
        " .mp3 .wav .flac .ogg .oga .opus .m4a .aac .wma .mid .midi .mp4 .m4v .mkv .avi .mov .wmv"
        " .webm .flv .mpg .mpeg .3gp"
        # archives / disk images / packages
        " .zip .tar .gz .tgz .bz2 .tbz2 .xz .txz .zst .7z .rar .lz .lzma .z .cab .iso .img .dmg .vhd"
        " .vmdk .qcow2 .deb .rpm .apk .msi .pkg .snap .jar .war .whl .egg .crx .xpi"
        # executables and compiled objects
        " .exe .dll .so .dylib .o .obj .a .lib .ko .bin .elf .com .class .pyc .pyo .pyd .wasm"
        # fonts
        " .ttf .otf .woff .woff2 .eot"
        # data / databases / model weights
        " .db .sqlite .sqlite3 .mdb .accdb .dbf .parquet .feather .arrow .npy .npz .pkl .pickle"
        " .h5 .hdf5 .pt .pth .ckpt .onnx .safetensors .tfrecord"
        # office formats we do not extract (binary legacy / spreadsheets / slides)
        " .doc .xls .xlsx .xlsm .ppt .pptx .ods .odp .key .numbers .pages"
        # misc
        " .swp .swo"
    )
    .lower()
    .split()
)

MBOX_EXTENSIONS = frozenset({".mbox", ".mbx"})

# A file of glob patterns (one a line) that a folder can hold to keep paths below it out of the index.
IGNORE_FILE = ".sparcdeskignore"


def is_maildir(path: Path) -> bool:
    """True for a directory laid out as a Maildir (has ``cur`` and ``new`` folders)."""
    # os.path.isdir, unlike Path.is_dir, says False (not raises) inside an unreadable folder.
    return os.path.isdir(path / "cur") and os.path.isdir(path / "new")


def is_mbox(path: Path) -> bool:
    """True for an ``.mbox`` file, or a file without extension whose first line starts with ``From ``."""
    suffix = path.suffix.lower()
    if suffix in MBOX_EXTENSIONS:
        return True
    if suffix or not os.path.isfile(path):  # never open a FIFO: it would block
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(5) == b"From "
    except OSError:
        return False


def classify(path: Path) -> str:
    """How ``engine.extract`` must open this unit: ``"maildir"``, ``"dir"`` (any other folder), ``"mbox"`` or ``"file"``."""
    if os.path.isdir(path):
        return "maildir" if is_maildir(path) else "dir"
    return "mbox" if is_mbox(path) else "file"


def _excluded(rel: str, name: str, patterns: Iterable[str]) -> bool:
    """A pattern without ``/`` matches any file or folder name; one with ``/`` matches the path from its base."""
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatch(rel, pattern.lstrip("/")):
                return True
        elif fnmatch.fnmatch(name, pattern):
            return True
    return False


def _read_ignore_file(directory: Path) -> tuple[str, ...]:
    """Patterns of a folder's ignore file: one glob a line, ``#`` comments and blank lines skipped."""
    try:
        lines = (directory / IGNORE_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    return tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


def _skip_dir_name(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")


# Ignore rules in force for a folder: (folder the patterns are relative to, patterns).
_Rules = tuple[tuple[Path, tuple[str, ...]], ...]


def _ignored(path: Path, rules: _Rules) -> bool:
    return any(_excluded(path.relative_to(base).as_posix(), path.name, pats) for base, pats in rules)


def walk(root: Path, exclude: Iterable[str] = ()) -> Iterator[Path | ExtractionError]:
    """Yield extraction units under ``root`` (files, mbox files, Maildir folders), or error entries.

    Skipped silently: hidden files and folders, the folders in ``SKIP_DIRS`` and virtual
    environments, files with an extension in ``BINARY_EXTENSIONS``, special files (FIFOs,
    sockets, devices), paths matching a glob in ``exclude`` (relative to ``root``) or in a
    folder's ``.sparcdeskignore`` file (relative to that folder), and a file or folder
    reached a second time through another link. Error entries: a missing root, an
    unreadable folder, a broken symbolic link, a symbolic link that loops back into a
    folder being walked. Order is deterministic: depth first, names sorted, the files of a
    folder before its sub-folders.
    """
    root = Path(os.path.abspath(root))
    try:
        st = root.stat()
    except OSError as exc:
        yield ExtractionError(root, exc.strerror or str(exc))
        return
    if not stat.S_ISDIR(st.st_mode):
        if stat.S_ISREG(st.st_mode):
            yield root
        else:
            yield ExtractionError(root, "not a regular file or folder")
        return
    base_rules: _Rules = ((root, tuple(exclude)),)
    if is_maildir(root):
        yield root
        yield from _maildir_subfolders(root, base_rules)
        return

    seen_files: set[tuple[int, int]] = set()
    entered: set[tuple[int, int]] = {(st.st_dev, st.st_ino)}
    # Each stack item: (folder, identities of the folders on the way down to it, ignore rules).
    stack: list[tuple[Path, tuple[tuple[int, int], ...], _Rules]] = [
        (root, ((st.st_dev, st.st_ino),), base_rules)
    ]
    while stack:
        directory, ancestors, rules = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield ExtractionError(directory, f"cannot read folder: {exc.strerror or exc}")
            continue
        local = _read_ignore_file(directory) if any(e.name == IGNORE_FILE for e in entries) else ()
        if local:
            rules = (*rules, (directory, local))
        subdirs: list[tuple[Path, tuple[tuple[int, int], ...], _Rules]] = []
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith(".") or _ignored(path, rules):
                continue
            try:
                is_link = entry.is_symlink()
                st = entry.stat(follow_symlinks=True)
            except OSError as exc:
                if entry.is_symlink():
                    reason = "symbolic link loop" if exc.errno == errno.ELOOP else "broken symbolic link"
                    yield ExtractionError(path, f"{reason} (-> {os.readlink(path)})")
                else:
                    yield ExtractionError(path, exc.strerror or str(exc))
                continue
            ident = (st.st_dev, st.st_ino)
            if stat.S_ISDIR(st.st_mode):
                if _skip_dir_name(entry.name) or os.path.exists(path / "pyvenv.cfg"):
                    continue
                if ident in ancestors:
                    target = os.path.realpath(path)
                    kind = "symbolic link" if is_link else "folder"
                    yield ExtractionError(path, f"{kind} loop: leads back to {target}, not followed")
                    continue
                if ident in entered:
                    continue  # the same folder reached through another link: walk it once
                entered.add(ident)
                if is_maildir(path):
                    yield path
                    yield from _maildir_subfolders(path, rules)
                    continue
                subdirs.append((path, (*ancestors, ident), rules))
            elif stat.S_ISREG(st.st_mode):
                if path.suffix.lower() in BINARY_EXTENSIONS or ident in seen_files:
                    continue
                seen_files.add(ident)
                yield path
            # FIFOs, sockets and devices are not documents: skipped.
        stack.extend(reversed(subdirs))


def _maildir_subfolders(maildir: Path, rules: _Rules) -> Iterator[Path | ExtractionError]:
    """Maildir++ keeps sub-folders as hidden Maildirs (``.Sent``) inside the top one."""
    try:
        with os.scandir(maildir) as it:
            names = sorted(e.name for e in it if e.name.startswith(".") and e.is_dir())
    except OSError as exc:
        yield ExtractionError(maildir, f"cannot read folder: {exc.strerror or exc}")
        return
    for name in names:
        path = maildir / name
        if not _ignored(path, rules) and is_maildir(path):
            yield path
