"""Watch and partial runs follow the walk's rules exactly (issue 14): a Maildir++ sub-folder
(``Maildir/.Sent``) stays indexed when a message lands in it, a ``.sparcdeskignore`` edit
takes effect under watch, and ``Rules.allows`` agrees with ``walk`` on a tree with every kind
of skipped path. Tests wait on the watcher's ``on_change`` events, never on sleeps."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_pipeline import mail_bytes, write

from engine.api.facade import Engine
from engine.ingest.walk import IGNORE_FILE, Rules, walk

WAIT_S = 20.0


class Changes:
    """What the watcher reported, with a wait on a condition over it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, paths: list[str]) -> None:
        with self._cond:
            self.paths.extend(paths)
            self._cond.notify_all()

    def wait(self, check: Callable[[list[str]], bool], what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: check(self.paths), timeout=WAIT_S):
                raise AssertionError(f"watch never reported {what}; it reported {self.paths}")


def maildir(path: Path) -> Path:
    for sub in ("cur", "new", "tmp"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    return path


def deliver(box: Path, name: str, data: bytes, sub: str = "cur") -> Path:
    """As a mail client does: written in tmp, renamed into cur or new."""
    tmp = box / "tmp" / name
    tmp.write_bytes(data)
    dest = box / sub / name
    tmp.rename(dest)
    return dest


def sentences(e: Engine, question: str) -> list[str]:
    return [h.sentence for a in e.ask(question, top=10, hybrid=True) for h in (a.best, *a.others)]


@pytest.fixture()
def watching(tmp_path: Path) -> Iterator[tuple[Engine, Path, Changes]]:
    d = tmp_path / "docs"
    write(d / "pelican.txt", "Pelicans glide low over the bay.")
    box = maildir(d / "Maildir")
    deliver(box, "1.M1.host", mail_bytes("Kickoff", "The kickoff meeting is on Monday."), "new")
    sent = maildir(box / ".Sent")
    deliver(sent, "2.M2.host", mail_bytes("Lantern order", "I ordered seven brass lanterns for the porch."))
    e = Engine(home=tmp_path / "home", threads=1)
    e.index([d])
    assert "I ordered seven brass lanterns for the porch." in sentences(e, "brass lanterns porch")
    changes = Changes()
    e.start_watch(on_change=changes)
    # The watch is installed once a change is reported (no sleep: wait for its event).
    probe = write(d / "probe.txt", "A probe file about puffins.")
    changes.wait(lambda p: str(probe) in p, "the probe file")
    yield e, d, changes
    e.stop_watch()
    e.close()


def test_message_landing_in_a_maildir_plus_plus_subfolder_keeps_the_subfolder(watching) -> None:
    e, d, changes = watching
    sent = d / "Maildir" / ".Sent"
    deliver(sent, "3.M3.host", mail_bytes("Kayak rental", "The kayak rental closes at six on Sundays."))
    changes.wait(lambda p: str(sent) in p, "the .Sent folder")
    assert "The kayak rental closes at six on Sundays." in sentences(e, "when does the kayak rental close")
    assert "I ordered seven brass lanterns for the porch." in sentences(e, "brass lanterns porch")
    # A message in the top folder must not drop the sub-folder either.
    top = d / "Maildir"
    deliver(top, "4.M4.host", mail_bytes("Choir", "Choir practice moved to Wednesday evening."), "new")
    changes.wait(lambda p: p.count(str(top)) >= 1, "the Maildir")
    assert "Choir practice moved to Wednesday evening." in sentences(e, "choir practice")
    assert "The kayak rental closes at six on Sundays." in sentences(e, "when does the kayak rental close")


def test_ignore_file_edit_is_honoured_under_watch(watching) -> None:
    e, d, changes = watching
    secret = write(d / "private" / "vault.txt", "The vault combination is written on the lighthouse.")
    changes.wait(lambda p: str(secret) in p, "the new file")
    assert any("vault combination" in s for s in sentences(e, "vault combination"))
    n = len(changes.paths)
    write(d / "private" / IGNORE_FILE, "vault*\n")
    changes.wait(lambda p: str(secret) in p[n:], "the now ignored file as removed")
    assert not any("vault combination" in s for s in sentences(e, "vault combination"))
    n = len(changes.paths)
    (d / "private" / IGNORE_FILE).unlink()
    changes.wait(lambda p: str(secret) in p[n:], "the file as indexed again")
    assert any("vault combination" in s for s in sentences(e, "vault combination"))


def _tree(root: Path) -> list[Path]:
    """A tree with every kind of path the walk skips or yields."""
    files = [
        write(root / "a.txt", "a"),
        write(root / "sub" / "b.md", "b"),
        write(root / "sub" / "deep" / "c.txt", "c"),
        write(root / ".hidden" / "d.txt", "d"),
        write(root / "sub" / ".e.txt", "e"),
        write(root / "node_modules" / "f.txt", "f"),
        write(root / "pkg.egg-info" / "g.txt", "g"),
        write(root / "env" / "pyvenv.cfg", "home = /usr"),
        write(root / "env" / "h.txt", "h"),
        write(root / "photo.PNG", "i"),
        write(root / "drafts" / "j.txt", "j"),
        write(root / "sub" / "k.log", "k"),
        write(root / "sub" / IGNORE_FILE, "*.log\ndeep/skip*\n"),
        write(root / "sub" / "deep" / "skip-me.txt", "l"),
        write(root / "sub" / "deep" / "keep-me.txt", "m"),
    ]
    box = maildir(root / "mail" / "Maildir")
    files += [write(box / "cur" / "1.x", "n"), write(box / "dovecot-uidlist", "o")]
    for name in (".Sent", ".Drafts.2024"):
        files.append(write(maildir(box / name) / "new" / "2.x", "p"))
    write(box / ".notmail" / "q.txt", "q")
    files.append(box / ".notmail" / "q.txt")
    top = maildir(root / "Top")  # a Maildir whose sub-folder is excluded by the user's pattern
    files.append(write(maildir(top / ".Junk") / "cur" / "3.x", "r"))
    return files


def test_rules_allow_exactly_what_walk_yields(tmp_path: Path) -> None:
    root = tmp_path / "root"
    _tree(root)
    exclude = ["drafts", "Top/.Junk"]
    rules = Rules(root, exclude)
    units = {p for p in walk(root, exclude) if isinstance(p, Path)}
    assert units == {p for p in rules.walk() if isinstance(p, Path)}
    every = {root}
    for p in root.rglob("*"):
        every.add(p)
    for p in sorted(every):
        yielded = p in units
        entered = p.is_dir() and any(u.is_relative_to(p) and u != p for u in units) and p not in units
        if yielded:
            assert rules.allows(p), p
        elif not entered:
            assert not rules.allows(p), p
    assert root / "mail" / "Maildir" / ".Sent" in units
    assert root / "Top" in units and root / "Top" / ".Junk" not in units
    # A partial walk of a folder applies the rules in force there (the ignore file above it).
    deep = {p for p in rules.walk(root / "sub" / "deep") if isinstance(p, Path)}
    assert deep == {root / "sub" / "deep" / "c.txt", root / "sub" / "deep" / "keep-me.txt"}
    # Gone paths are judged by name: a deleted Maildir++ folder may still be dropped.
    assert rules.allows(root / "mail" / "Maildir" / ".Archive")
    assert not rules.allows(root / "gone" / ".x.txt")
