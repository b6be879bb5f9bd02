"""The e-mail lists of the catalog with and without schema 2's indexes on ``messages``, and
the subject lookup with and without schema 4's.

``Engine.senders()`` (every sender with a count: the sender filter and its suggestions) and
``Engine.mailboxes()`` read every message of the catalog through
:meth:`engine.catalog.store.Catalog.from_headers` and :meth:`~engine.catalog.store.Catalog.mailbox_units`.
This builds one catalog of ``--messages`` e-mails (one ``.eml`` file each, ``--senders``
senders, ``--mailboxes`` mailboxes), times both reads, a question's subject lookup
(:meth:`~engine.catalog.store.Catalog.messages_with_subject` with the subjects
:func:`engine.search.answers.subject_candidates` makes of ``QUESTION``) and the writing of the
rows, then drops the index schema 4 added (what schema 3 had), and the two schema 2 added
too (what schema 1 had), and times them again::

    python -m bench.catalog_mail --messages 100000
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from engine.catalog.store import Catalog, MessageRow
from engine.search.answers import subject_candidates

#: A question naming a message by a subject (18 words: 132 runs, 660 subjects looked up).
QUESTION = "Who sent the e-mail about Subject 4242 with the budget figures for the next quarter and the plan?"


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm the page cache
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def _rows(n: int, senders: int, mailboxes: int, seed: int) -> list[MessageRow]:
    rnd = random.Random(seed)
    people = [f"Person {i} <person{i}@example.org>" for i in range(senders)]
    boxes = [f"box{i:02d}" for i in range(mailboxes)]
    out = []
    for i in range(n):
        box = rnd.choice(boxes)
        path = f"/home/ana/mail/{box}/{i:07d}.eml"
        out.append(
            MessageRow(
                path,
                path,
                f"<{i}@example.org>",
                f"<{i // 4}@example.org>",
                rnd.choice(people),
                ["ana@example.org"],
                [],
                1_000_000_000 + i,
                f"Subject {i}",
                box,
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--senders", type=int, default=400)
    ap.add_argument("--mailboxes", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    rows = _rows(args.messages, args.senders, args.mailboxes, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        subjects = subject_candidates(QUESTION)
        for schema in (4, 3, 1):
            with Catalog(Path(tmp) / f"s{schema}" / "catalog.sqlite") as cat:
                if schema < 4:
                    cat.db.execute("DROP INDEX idx_messages_subject")
                if schema == 1:  # schema 1's messages table: only (file) and (thread) indexed
                    cat.db.execute("DROP INDEX idx_messages_from")
                    cat.db.execute("DROP INDEX idx_messages_mailbox")
                t = time.perf_counter()
                for k in range(0, len(rows), 500):  # the indexer writes a commit's messages at once
                    cat.upsert_messages(rows[k : k + 500])
                write_us = 1e6 * (time.perf_counter() - t) / len(rows)
                plan = cat.db.execute(
                    "EXPLAIN QUERY PLAN SELECT from_addr, COUNT(*) FROM messages WHERE from_addr != ''"
                    " GROUP BY from_addr"
                ).fetchall()
                results[schema] = (
                    _median_ms(cat.from_headers, args.repeat),
                    _median_ms(lambda c=cat: c.from_headers("person12"), args.repeat),
                    _median_ms(cat.mailbox_units, args.repeat),
                    _median_ms(lambda c=cat: c.messages_with_subject(subjects), args.repeat),
                    write_us,
                    " / ".join(r[3] for r in plan),
                )
    print(
        f"{args.messages} messages, {args.senders} senders, {args.mailboxes} mailboxes (median of {args.repeat})"
    )
    print(f"subject lookup: {len(subjects)} subjects from {QUESTION!r}")
    print(
        "| schema | from_headers() ms | from_headers('person12') ms | mailbox_units() ms |"
        " messages_with_subject() ms | write µs/message | senders plan |"
    )
    print("|---|---|---|---|---|---|---|")
    for schema, (a, b, c, d, w, plan) in sorted(results.items()):
        print(f"| {schema} | {a:.1f} | {b:.1f} | {c:.1f} | {d:.2f} | {w:.0f} | {plan} |")


if __name__ == "__main__":
    main()
