"""Find the files and mail stores under a folder that are worth extracting.

A laptop's home folder holds far more junk than documents (VCS metadata, virtual
environments, build output, media), so the walk prunes those early instead of letting the
extractors reject them one by one. It never follows a symbolic link into a folder it has
already entered (a loop yields an error entry and the walk goes on), and it reports
unreadable folders as error entries rather than stopping.

Every yielded ``Path`` is one extraction unit: a regular file, an mbox file, or a Maildir
folder (a directory with ``cur``/``new``). ``classify`` tells them apart and is what
``engine.ingest.extract`` dispatches on, so the walk and the extractors agree.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from pathspec import GitIgnoreSpec

from engine.ingest.documents import SKIPPED_PREFIX, ExtractionError

log = logging.getLogger(__name__)

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
        # (office formats are not here: those not read, such as .doc, are indexed by name
        # and listed as skipped; see engine.ingest.formats.UNSUPPORTED_FORMATS)
        # misc
        " .swp .swo"
    )
    .lower()
    .split()
)

MBOX_EXTENSIONS = frozenset({".mbox", ".mbx"})
#: Outlook's mail stores: a .pst (personal folders) or .ost (offline copy of an Exchange or
#: Outlook.com mailbox) file is one unit holding many messages (``engine.ingest.outlook``).
OUTLOOK_STORE_EXTENSIONS = frozenset({".pst", ".ost"})

#: Pictures whose text is read by OCR (``engine.ingest.readers.ocr``): walked while OCR is on,
#: although they are in ``BINARY_EXTENSIONS`` (with OCR off they are left out, as before).
OCR_IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff"})
#: A picture file smaller than this is not walked (an icon, a bullet, a spacer: no page of text).
MIN_IMAGE_BYTES = 2048
#: The environment variable that turns OCR off ("0", "off", "false" or "no"); on by default.
OCR_SETTING = "SPARCDESK_OCR"


def ocr_enabled() -> bool:
    """Whether OCR reads pictures and the pages of PDF files that have no text layer
    (``SPARCDESK_OCR``; read at each call, so a child process sees its parent's setting)."""
    return os.environ.get(OCR_SETTING, "1").strip().lower() not in ("0", "off", "false", "no")

# A file of gitignore patterns (one a line) that a folder can hold to keep paths below it out of the index.
IGNORE_FILE = ".sparcdeskignore"

# Paths compare without case where the file system's names do (Windows), as fnmatch did before
# pathspec matched them: git does the same there (core.ignorecase).
_FOLD_CASE = os.path.normcase("A") == "a"


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
    except OSError:  # then it is read as a plain file, and reading it reports why it cannot be
        return False


def is_outlook_store(path: Path) -> bool:
    """True for an Outlook ``.pst`` or ``.ost`` file (by its name: the file is opened by libpff)."""
    return path.suffix.lower() in OUTLOOK_STORE_EXTENSIONS and not os.path.isdir(path)


def classify(path: Path) -> str:
    """How ``engine.ingest.extract`` must open this unit: ``"maildir"``, ``"dir"`` (any other
    folder), ``"mbox"``, ``"outlook"`` (a .pst or .ost file) or ``"file"``."""
    if os.path.isdir(path):
        return "maildir" if is_maildir(path) else "dir"
    if is_outlook_store(path):
        return "outlook"
    return "mbox" if is_mbox(path) else "file"


def _patterns(lines: Iterable[str]) -> tuple[str, ...]:
    """The pattern lines of a list: ``#`` comments, blank lines and leading blanks dropped."""
    return tuple(line.lstrip() for line in lines if line.strip() and not line.lstrip().startswith("#"))


@functools.lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> GitIgnoreSpec:
    """``patterns`` compiled with gitignore semantics (pathspec): a pattern without ``/`` (a
    trailing one aside) matches a name at any depth, one with ``/`` is anchored to its base
    folder, ``dir/`` matches folders only, ``**`` any number of folders, ``*`` never crosses a
    ``/``, and ``!pattern`` re-includes what an earlier line of the same list left out."""
    return GitIgnoreSpec.from_lines([p.lower() for p in patterns] if _FOLD_CASE else patterns)


def _read_ignore_file(directory: Path) -> tuple[str, ...]:
    """Patterns of a folder's ignore file, one a line as in a ``.gitignore``."""
    path = directory / IGNORE_FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError as exc:  # its patterns do not apply: what it would have left out is indexed
        log.warning("cannot read %s, its patterns are not applied: %s", path, exc)
        return ()
    return _patterns(lines)


def _skip_dir_name(name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")


# Ignore rules in force for a folder: (folder the patterns are relative to, patterns). Each
# list (the user's, each ignore file's) is matched on its own: a path any of them leaves out is
# left out, and a "!" line re-includes only what its own list left out.
_Rules = tuple[tuple[Path, tuple[str, ...]], ...]


def _ignored(path: Path, rules: _Rules, is_dir: bool) -> bool:
    """Does a list in force leave ``path`` out? ``is_dir``: it is a folder (``dir/`` patterns)."""
    for base, patterns in rules:
        if not patterns:
            continue
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if _spec(patterns).match_file(rel.lower() if _FOLD_CASE else rel):
            return True
    return False


def _passes(path: Path, rules: _Rules, is_dir: bool) -> bool:
    """Name rules every entry of a folder must pass: not hidden, not matched by a pattern in force."""
    return not path.name.startswith(".") and not _ignored(path, rules, is_dir)


def _enterable(path: Path) -> bool:
    """A folder (that passed the name rules) the walk descends into or yields as a Maildir."""
    return not _skip_dir_name(path.name) and not os.path.exists(path / "pyvenv.cfg")


def _wanted_file(path: Path, size: int) -> bool:
    suffix = path.suffix.lower()
    if suffix not in BINARY_EXTENSIONS:
        return True
    return suffix in OCR_IMAGE_EXTENSIONS and size >= MIN_IMAGE_BYTES and ocr_enabled()


def _local_rules(directory: Path, rules: _Rules) -> _Rules:
    """``rules`` plus the patterns of ``directory``'s own ignore file, if it has one."""
    local = _read_ignore_file(directory)
    return (*rules, (directory, local)) if local else rules


class Rules:
    """The one statement of what a source's walk reaches, for full walks, partial runs and
    the watcher alike.

    Before this object, the watcher and partial runs re-implemented the walk's rules
    (``pipeline.allowed``) and disagreed with it: they rejected every dot-named component,
    so a message landing in a Maildir++ sub-folder (``Maildir/.Sent``) made the whole
    sub-folder look deleted. Now :meth:`walk` (the whole source, or one folder or unit in
    it with the ignore rules in force there) and :meth:`allows` share the same predicates.
    """

    def __init__(self, root: Path | str, exclude: Iterable[str] = ()) -> None:
        self.root = Path(os.path.abspath(root))
        self.exclude = _patterns(exclude)

    def _base(self) -> _Rules:
        return ((self.root, self.exclude),)

    def _rules_above(self, path: Path) -> _Rules:
        """Rules in force for ``path`` as an entry: the user's patterns and the ignore files of
        the folders from the root down to its parent."""
        rules = self._base()
        current = self.root
        for name in path.relative_to(self.root).parts:
            rules = _local_rules(current, rules)
            current = current / name
        return rules

    def allows(self, path: Path | str) -> bool:
        """Does :meth:`walk` yield ``path`` as a unit or descend into it as a folder?

        Paths inside a unit (a Maildir's ``cur/msg``) are not units: map them with
        :func:`unit_for` first. A path that is gone is judged by its name (so a
        deleted file or Maildir++ folder can still be dropped from the index). Not checked:
        that the path was reached a second time through another link.
        """
        path = Path(os.path.abspath(path))
        if path == self.root:
            return True
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return False
        rules = self._base()
        current = self.root
        exists = os.path.isdir(current)
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            if exists and is_maildir(current):
                # The walk yields a Maildir and its Maildir++ sub-folders, nothing inside.
                return last and self._maildir_subfolder(current / name, rules)
            rules = _local_rules(current, rules) if exists else rules
            current = current / name
            try:
                st = os.stat(current)
            except OSError:
                exists = False
            else:
                exists = True
            # A gone path is judged as a file unless a path goes on below it.
            if not _passes(current, rules, stat.S_ISDIR(st.st_mode) if exists else not last):
                return False
            if not exists:
                if not last and _skip_dir_name(name):
                    return False
                continue
            if stat.S_ISDIR(st.st_mode):
                if not _enterable(current):
                    return False
            elif stat.S_ISREG(st.st_mode):
                return last and _wanted_file(current, st.st_size)
            else:
                return False  # FIFOs, sockets and devices are skipped
        return True

    @staticmethod
    def _maildir_subfolder(path: Path, rules: _Rules) -> bool:
        if not path.name.startswith(".") or _ignored(path, rules, is_dir=True):
            return False
        return is_maildir(path) or not os.path.lexists(path)

    def walk(self, subtree: Path | str | None = None) -> Iterator[Path | ExtractionError]:
        """Units under the root, or under ``subtree`` (a folder or unit inside it, walked with
        the rules in force there; nothing when :meth:`allows` says no). See :func:`walk`."""
        if subtree is None or Path(os.path.abspath(subtree)) == self.root:
            yield from _walk_from(self.root, self._base())
            return
        sub = Path(os.path.abspath(subtree))
        if self.allows(sub):
            yield from _walk_from(sub, self._rules_above(sub))


def walk(root: Path, exclude: Iterable[str] = ()) -> Iterator[Path | ExtractionError]:
    """Yield extraction units under ``root`` (files, mbox files, Maildir folders), or error entries.

    Skipped silently: hidden files and folders (except the Maildir++ sub-folders of a
    Maildir, such as ``.Sent``), the folders in ``SKIP_DIRS`` and virtual environments,
    files with an extension in ``BINARY_EXTENSIONS`` (pictures OCR reads aside, while it is
    on: ``OCR_IMAGE_EXTENSIONS`` of ``MIN_IMAGE_BYTES`` or more), special files (FIFOs, sockets,
    devices), paths matching a pattern in ``exclude`` (relative to ``root``) or in a folder's
    ``.sparcdeskignore`` file (relative to that folder; both read as ``.gitignore`` lines,
    ``!`` included, see :func:`_spec`), and a file or folder reached a
    second time through another link. Error entries: a missing root, an unreadable folder,
    a broken symbolic link, a symbolic link that loops back into a folder being walked.
    Order is deterministic: depth first, names sorted, the files of a folder before its
    sub-folders. The same as ``Rules(root, exclude).walk()``.
    """
    return Rules(root, exclude).walk()


def _walk_from(root: Path, base_rules: _Rules) -> Iterator[Path | ExtractionError]:
    """The walk below ``root`` with ``base_rules`` in force for its entries."""
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
        if any(e.name == IGNORE_FILE for e in entries):
            rules = _local_rules(directory, rules)
        subdirs: list[tuple[Path, tuple[tuple[int, int], ...], _Rules]] = []
        for entry in entries:
            path = Path(entry.path)
            if not _passes(path, rules, _is_dir(entry)):
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
                if not _enterable(path):
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
                if not _wanted_file(path, st.st_size) or ident in seen_files:
                    continue
                seen_files.add(ident)
                yield path
            elif is_link:
                # A link named like a document that leads to a FIFO, socket or device: not
                # read (it could block or never end), but listed, so the user sees why.
                yield ExtractionError(path, f"{SKIPPED_PREFIX}{special_kind(st.st_mode)}, not a file (-> {os.readlink(path)})")
            # FIFOs, sockets and devices themselves are not documents: skipped.
        stack.extend(reversed(subdirs))


def special_kind(mode: int) -> str:
    """What a file that is neither a regular file nor a folder is, in words."""
    if stat.S_ISFIFO(mode):
        return "a link to a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a link to a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a link to a device"
    return "a link to a special file"


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
        if not _ignored(path, rules, is_dir=True) and is_maildir(path):
            yield path


# --------------------------------------------------------------------------- units on disk

#: Larger files are not read (their name is indexed, their failure recorded).
MAX_FILE_BYTES = 50 * 1024 * 1024


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` that never blocks: a FIFO, socket or device (a file swapped for
    one after the walk) raises OSError instead of waiting for a writer that never comes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (FIFO, socket or device)", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def content_hash(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    """blake2b-160 of a file's bytes, hex: detects edits that keep size and mtime, and
    touches (mtime changed, bytes not) that need no re-indexing."""
    h = hashlib.blake2b(digest_size=20)
    with open_regular(path) as f:
        while block := f.read(chunk_size):
            h.update(block)
    return h.hexdigest()


def _is_dir(e: os.DirEntry[str]) -> bool:
    """``e.is_dir()``, False for an entry that cannot be resolved (a broken link, a loop):
    then only the patterns that match files apply to it, and the walk reports it."""
    try:
        return e.is_dir()
    except OSError:
        return False


def _is_file(e: os.DirEntry[str]) -> bool:
    """``e.is_file()``, False for an entry that cannot be resolved (a symbolic link loop)."""
    try:
        return e.is_file()
    except OSError:
        return False


def _maildir_files(folder: Path) -> list[os.DirEntry[str]]:
    out: list[os.DirEntry[str]] = []
    for sub in ("cur", "new"):
        try:
            with os.scandir(folder / sub) as it:
                out.extend(e for e in it if not e.name.startswith(".") and _is_file(e))
        except FileNotFoundError:  # a Maildir may lack "new" (or "cur") until mail arrives
            continue
        except OSError as exc:  # extracting the Maildir reports it as failed, with this reason
            log.debug("cannot read the Maildir folder %s: %s", folder / sub, exc)
    return out


def unit_stat(path: Path) -> tuple[int, int]:
    """``(size, mtime_ns)`` of a unit; for a Maildir folder, the total size of its messages
    and the latest mtime of ``cur``, ``new`` and the messages (a folder's own mtime does not
    change when a message arrives in ``new``)."""
    if os.path.isdir(path):
        size = 0
        mtime = 0
        # A missing folder or a message moved (new -> cur) since the listing: ordinary
        # Maildir life, and _maildir_files logs a folder it cannot read.
        for sub in ("cur", "new"):
            with contextlib.suppress(OSError):
                mtime = max(mtime, os.stat(path / sub).st_mtime_ns)
        for e in _maildir_files(path):
            try:
                st = e.stat()
            except OSError:
                continue
            size += st.st_size
            mtime = max(mtime, st.st_mtime_ns)
        return size, mtime
    st = os.stat(path)
    return int(st.st_size), int(st.st_mtime_ns)


def unit_hash(path: str | Path) -> str:
    """Content digest of a unit: the file's bytes (:func:`content_hash`), the
    listing of a Maildir (names, sizes, mtimes), or size and mtime only for a file over the
    extraction size limit (it is refused without being read, so it is not read here either)."""
    p = Path(path)
    if os.path.isdir(p):
        h = hashlib.blake2b(digest_size=20)
        for e in sorted(_maildir_files(p), key=lambda e: e.path):
            try:
                st = e.stat()
            except OSError:  # moved since the listing (see unit_stat)
                continue
            h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        return "maildir:" + h.hexdigest()
    st = os.stat(p)
    if st.st_size > MAX_FILE_BYTES:
        return f"stat:{st.st_size}:{st.st_mtime_ns}"
    return content_hash(p)


def under(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies below it (whole path components)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def unit_for(path: Path) -> Path:
    """What a changed path makes the watcher re-scan: the Maildir folder for a message file
    (``box/cur/msg``, ``box/new/msg``, ``box/tmp/msg``) or for ``box/cur`` itself, the folder
    of an edited ``.sparcdeskignore`` (its rules decide what is indexed below), else the path."""
    path = Path(os.path.abspath(path))
    parent = path.parent
    if path.name == IGNORE_FILE:
        return parent
    if parent.name in ("cur", "new", "tmp") and is_maildir(parent.parent):
        return parent.parent
    if path.name in ("cur", "new", "tmp") and is_maildir(parent):
        return parent
    return path


def source_kind(path: Path) -> str:
    """``mailstore`` for an mbox file, a Maildir folder, an Outlook ``.pst`` or ``.ost`` file or
    a single ``.eml``, ``.emlx`` or ``.msg``; else ``folder``."""
    try:
        unit = classify(path)
    except OSError as exc:  # indexing it reports why it cannot be read
        log.debug("cannot classify %s: %s", path, exc)
        return "folder"
    if unit in ("mbox", "maildir", "outlook") or path.suffix.lower() in (".eml", ".emlx", ".msg"):
        return "mailstore"
    return "folder"
