"""File discovery on real folder trees built in tmp_path (symlinks, FIFOs and Maildirs included)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from engine.ingest.documents import ExtractionError
from engine.ingest.walk import IGNORE_FILE, Rules, classify, walk

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def touch(path: Path, content: bytes = b"text\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def rel(items: list, root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in items if isinstance(p, Path)]


def errors(items: list) -> list[ExtractionError]:
    return [e for e in items if isinstance(e, ExtractionError)]


def test_skips_hidden_vcs_build_binary_and_special_files(tmp_path: Path) -> None:
    for name in (
        "notes.txt",
        "docs/guide.md",
        "docs/deep/er/paper.pdf",
        "README",
        ".hidden.txt",
        ".config/settings.txt",
        ".git/HEAD",
        "node_modules/pkg/readme.md",
        "src/__pycache__/mod.cpython-311.pyc",
        "build/out.txt",
        "dist/pkg.txt",
        "target/debug.txt",
        "myenv/lib/site.txt",
        "pkg.egg-info/PKG-INFO",
        "photo.JPG",
        "archive.tar.gz",
        "lib.so",
        "tool.exe",
        "song.mp3",
        "mod.pyc",
    ):
        touch(tmp_path / name)
    touch(tmp_path / "myenv" / "pyvenv.cfg")  # a virtual environment under any name
    os.mkfifo(tmp_path / "pipe")
    found = list(walk(tmp_path))
    assert errors(found) == []
    # Files of a folder come before its sub-folders; names sorted.
    assert rel(found, tmp_path) == ["README", "notes.txt", "docs/guide.md", "docs/deep/er/paper.pdf"]
    assert all(p.is_absolute() for p in found)


def test_user_exclusions_and_ignore_file(tmp_path: Path) -> None:
    for name in ("a.txt", "a.log", "drafts/b.txt", "keep/drafts.txt", "keep/sub/c.txt", "keep/sub/d.md"):
        touch(tmp_path / name)
    found = rel(list(walk(tmp_path, exclude=["*.log", "drafts", "keep/sub/*.md"])), tmp_path)
    assert found == ["a.txt", "keep/drafts.txt", "keep/sub/c.txt"]
    touch(tmp_path / "keep" / ".sparcdeskignore", b"# not indexed\nsub\n")
    assert rel(list(walk(tmp_path)), tmp_path) == [
        "a.log",
        "a.txt",
        "drafts/b.txt",
        "keep/drafts.txt",
    ]


def test_ignore_files_have_gitignore_semantics(tmp_path: Path) -> None:
    """``.sparcdeskignore`` lines mean what they mean in a ``.gitignore`` (pathspec)."""
    for name in (
        "a.txt",
        "keep.txt",
        "sub/b.txt",
        "sub/keep.txt",
        "build",  # a file: "build/" names folders only
        "logs/today.md",  # a folder: "logs/" leaves it out
        "notes/logs",  # a file named like the folder: kept
        "x.log",
        "deep/er/y.log",
        "deep/er/y.log.md",
        "top.md",
        "sub/top.md",
        "docs/a.md",
        "docs/more/b.md",
    ):
        touch(tmp_path / name)
    touch(
        tmp_path / IGNORE_FILE,
        b"# comments and blank lines are skipped\n\n*.txt\n!keep.txt\nbuild/\nlogs/\n**/*.log\n/top.md\ndocs/*.md\n",
    )
    found = rel(list(walk(tmp_path)), tmp_path)
    assert found == [
        "build",
        "keep.txt",  # "!keep.txt" re-includes what "*.txt" left out, at any depth
        "deep/er/y.log.md",
        "docs/more/b.md",  # "*" does not cross a "/"
        "notes/logs",
        "sub/keep.txt",
        "sub/top.md",  # "/top.md" and any pattern with a "/" are anchored to the file's folder
    ]
    rules = Rules(tmp_path)
    for name in found:
        assert rules.allows(tmp_path / name), name
    for name in ("a.txt", "sub/b.txt", "logs", "logs/today.md", "x.log", "deep/er/y.log", "top.md", "docs/a.md"):
        assert not rules.allows(tmp_path / name), name
    # A gone path is judged as a file unless the path goes on below it.
    assert rules.allows(tmp_path / "gone" / "logs")
    assert not rules.allows(tmp_path / "gone" / "logs" / "old.md")


def test_user_patterns_and_nested_ignore_files(tmp_path: Path) -> None:
    """The source's own patterns are gitignore lines relative to the source; an ignore file in
    a sub-folder applies below that folder only, and each list is matched on its own: a
    ``!`` line re-includes only what its own list left out."""
    for name in ("drafts/a.md", "notes/drafts", "b.tmp", "c.tmp", "sub/d.tmp", "sub/keep.tmp", "other/e.md"):
        touch(tmp_path / name)
    touch(tmp_path / "sub" / IGNORE_FILE, b"!keep.tmp\n*.md\n")
    touch(tmp_path / "sub" / "f.md")
    found = rel(list(walk(tmp_path, exclude=["drafts/", "*.tmp", "!c.tmp"])), tmp_path)
    assert found == ["c.tmp", "notes/drafts", "other/e.md"]
    assert rel(list(Rules(tmp_path, ["drafts/", "*.tmp", "!c.tmp"]).walk(tmp_path / "sub")), tmp_path) == []
    # sub/keep.tmp above: its folder's "!keep.tmp" cannot undo the source's "*.tmp"
    without = rel(list(walk(tmp_path)), tmp_path)
    assert without == ["b.tmp", "c.tmp", "drafts/a.md", "notes/drafts", "other/e.md", "sub/d.tmp", "sub/keep.tmp"]


def test_maildir_is_one_unit_and_mbox_is_recognised(tmp_path: Path) -> None:
    maildir = tmp_path / "Mail" / "INBOX"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    touch(maildir / "cur" / "1700000000.M1P1.host:2,S", b"Subject: x\n\nbody\n")
    touch(maildir / "new" / "1700000001.M2P1.host", b"Subject: y\n\nbody\n")
    sent = maildir / ".Sent"  # Maildir++ sub-folder: hidden, but a mail store of its own
    for sub in ("cur", "new", "tmp"):
        (sent / sub).mkdir(parents=True)
    touch(tmp_path / "Mail" / "archive.mbox", b"From a@b Mon Jan  1 00:00:00 2024\nSubject: z\n\nbody\n")
    touch(tmp_path / "Mail" / "Saved", b"From a@b Mon Jan  1 00:00:00 2024\nSubject: z\n\nbody\n")
    touch(tmp_path / "Mail" / "notes", b"plain text without extension\n")
    found = [p for p in walk(tmp_path) if isinstance(p, Path)]
    assert rel(found, tmp_path) == [
        "Mail/INBOX",
        "Mail/INBOX/.Sent",
        "Mail/Saved",
        "Mail/archive.mbox",
        "Mail/notes",
    ]
    assert [classify(p) for p in found] == ["maildir", "maildir", "mbox", "mbox", "file"]


def test_symlinks_to_files_and_folders(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    touch(root / "a.txt")
    touch(outside / "shared.txt")
    touch(outside / "sub" / "deep.txt")
    (root / "link-to-file.txt").symlink_to(outside / "shared.txt")
    (root / "link-to-dir").symlink_to(outside)
    (root / "second-link-to-dir").symlink_to(outside)  # same folder again: walked once
    (root / "alias.txt").symlink_to(root / "a.txt")  # same file again: yielded once
    found = list(walk(root))
    assert errors(found) == []
    # shared.txt is reached twice (link-to-file.txt, link-to-dir/shared.txt) and yielded once.
    assert rel(found, root) == ["a.txt", "link-to-file.txt", "link-to-dir/sub/deep.txt"]


def test_symlink_loops_end_with_an_error_entry(tmp_path: Path) -> None:
    touch(tmp_path / "docs" / "a.txt")
    (tmp_path / "docs" / "back-to-root").symlink_to(tmp_path)  # directory loop
    (tmp_path / "ping").symlink_to(tmp_path / "pong")  # links pointing at each other
    (tmp_path / "pong").symlink_to(tmp_path / "ping")
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
    found = list(walk(tmp_path))  # must terminate
    assert rel(found, tmp_path) == ["docs/a.txt"]
    messages = sorted(str(e) for e in errors(found))
    assert len(messages) == 4
    assert messages[0].startswith(f"{tmp_path / 'dangling.txt'}: broken symbolic link")
    assert (
        messages[1]
        == f"{tmp_path / 'docs' / 'back-to-root'}: symbolic link loop: leads back to {tmp_path}, not followed"
    )
    assert messages[2].startswith(f"{tmp_path / 'ping'}: symbolic link loop")
    assert messages[3].startswith(f"{tmp_path / 'pong'}: symbolic link loop")


def test_missing_root_and_folder_vanishing_mid_walk(tmp_path: Path) -> None:
    missing = list(walk(tmp_path / "nope"))
    assert [str(e) for e in missing] == [f"{tmp_path / 'nope'}: No such file or directory"]

    touch(tmp_path / "a" / "1.txt")
    touch(tmp_path / "b" / "2.txt")
    touch(tmp_path / "c" / "3.txt")
    walker = walk(tmp_path)
    first = next(walker)
    assert first == tmp_path / "a" / "1.txt"
    shutil.rmtree(tmp_path / "b")  # listed already, gone before the walk enters it
    rest = list(walker)
    assert [str(e) for e in errors(rest)] == [
        f"{tmp_path / 'b'}: cannot read folder: No such file or directory"
    ]
    assert rel(rest, tmp_path) == ["c/3.txt"]


def test_unreadable_folder_is_an_error_entry(tmp_path: Path) -> None:
    touch(tmp_path / "locked" / "secret.txt")
    touch(tmp_path / "open" / "visible.txt")
    (tmp_path / "locked").chmod(0)
    try:
        try:
            os.listdir(tmp_path / "locked")
        except PermissionError:
            pass
        else:
            pytest.skip("this process reads folders whatever their permissions (root with CAP_DAC_OVERRIDE)")
        found = list(walk(tmp_path))
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert rel(found, tmp_path) == ["open/visible.txt"]
    assert [str(e) for e in errors(found)] == [
        f"{tmp_path / 'locked'}: cannot read folder: Permission denied"
    ]


def test_single_file_root(tmp_path: Path) -> None:
    path = touch(tmp_path / "one.txt")
    assert list(walk(path)) == [path]


def test_sample_corpus_units() -> None:
    found = list(walk(SAMPLES))
    assert errors(found) == []
    names = rel(found, SAMPLES)
    assert "README.md" not in names and "questions.jsonl" not in names  # .sparcdeskignore
    assert "mail/enron-wolfe" in names and "mail/trading-track.mbox" in names
    assert not any(n.startswith("mail/enron-wolfe/") for n in names)
    assert len(names) == 11 + 5 + 2
