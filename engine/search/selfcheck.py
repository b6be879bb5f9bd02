"""The self-check: how well search works on the user's own files, measured with the labels
those files already carry (issue 38).

A message's subject names the message; a heading names the text under it; a document's
title names the document; and a sentence taken out of a document names it too (the
inverse cloze task of retrieval pre-training). Each is a pseudo-question with a known
answer, asked through the same search the app runs — ``SearchSettings.hidden`` hides the
label's own text from every stage (:mod:`engine.index.hidden`), so the question cannot find
itself — and scored by where its document comes (hit@1, MRR@10) with a bootstrap interval.

A sample is drawn from the documents in a seeded order: the same seed on the same corpus
gives the same questions and so the same figure. Questions are defined by text and document
keys, not sentence ids, so the same sample can be asked of another generation (another
model's index of the same files): :func:`compare` is the paired test the adaptation's
switch is decided by.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.common.subjects import without_markers
from engine.index.hidden import Hidden
from engine.index.sentences import SentenceIndex
from engine.search.documents import is_heading_record
from engine.search.intent import parse as parse_intent
from engine.search.results import Answers
from engine.search.settings import DEFAULT, SearchSettings

#: The kinds of pseudo-question, in the order a document offers them.
KINDS = ("subject", "heading", "title", "sentence")
#: Questions a self-check asks by default: a few hundred keep its interval near ±5 points.
QUESTIONS = 240
#: Passes over a corpus of fewer documents than questions (one question per document each).
ROUNDS = 8
#: Documents ranked per question (MRR@10).
TOP = 10
#: A label more than this many documents carry names none of them.
MAX_GOLD = 5
#: ... nor one that this many other documents carry nearly (``SIMILAR`` of its words,
#: numbers left out): a template's instances.
NEAR_COPIES = 3
SIMILAR = 0.6
#: Bootstrap resamples of the interval (and of a comparison's).
RESAMPLES = 1000
#: A question's sentence is 8 to 40 words: long enough to be about something, short
#: enough to be a question's length of evidence.
SENTENCE_WORDS = (8, 40)
_WORD = re.compile(r"\w+")

#: ask(question, settings) -> Answers: the app's own search (``Engine.ask``).
Ask = Callable[[str, SearchSettings], Answers]


def normalised(text: str) -> str:
    """Lower case, words only, one space: how a label is matched to the lines that hold it."""
    return " ".join(_WORD.findall(text.casefold()))


def subject_label(subject: str) -> str:
    """A subject as it names its message: reply and forward markers and tags off (the
    catalog's own rule, ``engine.common.subjects``)."""
    return without_markers(subject or "")


@dataclass(frozen=True)
class PseudoQuestion:
    """A question made from a label: ``text`` is asked, any of ``gold`` counts as found; the
    sentences of ``gold`` that hold ``label`` (normalised) are hidden, and ``lines`` — label
    lines of a document's whole-document record that are no sentence (a title) — removed."""

    kind: str
    text: str
    gold: tuple[str, ...]
    label: str
    lines: tuple[tuple[str, str], ...] = ()


@dataclass
class SelfCheck:
    """A self-check's result (what ``sparcdesk selfcheck --json`` prints)."""

    questions: int
    hit1: float
    mrr10: float
    hit1_ci: tuple[float, float]
    mrr10_ci: tuple[float, float]
    by_kind: dict[str, dict[str, float]]
    seconds: float
    sentences: int
    seed: int
    measured: str = ""
    model: str = ""
    #: each question's rank of its first gold document (0: not in the top 10), in order
    ranks: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SelfCheck:
        data = dict(data)
        for k in ("hit1_ci", "mrr10_ci"):
            data[k] = tuple(data.get(k) or (0.0, 0.0))
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def line(self) -> str:
        """One line for a person: 'hit@1 62% (58–66), MRR@10 70 on 240 pseudo-questions'."""
        lo, hi = self.hit1_ci
        return (
            f"hit@1 {self.hit1:.0f}% ({lo:.0f}–{hi:.0f}), MRR@10 {self.mrr10:.0f}"
            f" on {self.questions} pseudo-questions from your files"
        )


# ---------------------------------------------------------------------------------------------
# the sample


def _content_words(text: str) -> int:
    return len(parse_intent(text).content)


def _candidates(metas: Sequence[dict[str, Any]]) -> dict[str, list[tuple[str, str, tuple[tuple[str, str], ...]]]]:
    """What one document offers: per kind, ``(question, label, lines)``."""
    out: dict[str, list[tuple[str, str, tuple[tuple[str, str], ...]]]] = {k: [] for k in KINDS}
    if not metas:
        return out
    first = metas[0]
    key, email = first.get("doc_key", ""), first.get("kind") == "email"
    if sum(1 for m in metas if not m.get("field")) < 2:
        return out  # hidden, its label would leave the document (almost) nothing to be found by
    for m in metas:
        text = m.get("text") or ""
        if m.get("field") == "subject":
            subject = subject_label(str(m.get("subject") or text.partition(":")[2]))
            if _content_words(subject) >= 2:
                out["subject"].append((subject, subject, ()))
        elif m.get("field") or m.get("quoted"):
            continue
        elif is_heading_record(m):
            # (an e-mail's short lines are signatures and forwarded headers, not headings)
            if not email and "\n" not in text.strip() and _content_words(text) >= 2 and len(text.split()) <= 12:
                out["heading"].append((text, text, ()))
        elif SENTENCE_WORDS[0] <= len(text.split()) <= SENTENCE_WORDS[1]:
            out["sentence"].append((text, text, ()))
    title = str(first.get("title") or "")
    name = Path(str(first.get("path") or "")).name
    asked = " ".join(re.split(r"[_\-.\s]+", Path(title).stem)) if title in (name, Path(name).stem) else title
    # ("time-0052.txt" is a number, not a name: two words of letters at least)
    if not email and title and sum(not any(c.isdigit() for c in w) for w in parse_intent(asked).content) >= 2:
        out["title"].append((asked, title, ((key, title), (key, name))))
    return out


def _words(text: str) -> set[str]:
    """A label's words without its numbers: "Report for 01/16/2002" and "Report for
    01/08/2002" are the same template."""
    return {w for w in normalised(text).split() if not any(c.isdigit() for c in w)}


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= SIMILAR


def _resolve(index: SentenceIndex, label: str, seed_doc: str) -> list[str] | None:
    """The documents that carry ``label`` as a line (its own document first); None when more
    than ``MAX_GOLD`` do, or when ``NEAR_COPIES`` other documents carry a line like it but
    for its numbers or a word (daily reports, "Devotional for Tuesday"): such a label has no
    one answer, and asking it measures a coin toss between near copies."""
    want, words = normalised(label), _words(label)
    found = [seed_doc]
    near: set[str] = set()
    hits = index.bm25(label, 50)
    metas = index.get(h.sentence_id for h in hits)
    for m in metas.values():
        raw = subject_label(str(m.get("subject") or "")) if m.get("field") == "subject" else (m.get("text") or "")
        key = m.get("doc_key")
        if normalised(raw) == want:
            if key not in found:
                found.append(key)
        elif _similar(words, _words(raw)) and key not in found:
            near.add(key)
    if len(found) > MAX_GOLD or len(near - set(found)) >= NEAR_COPIES:
        return None
    return found


def sample(index: SentenceIndex, keys: Iterable[str], n: int = QUESTIONS, seed: int = 13) -> list[PseudoQuestion]:
    """``n`` pseudo-questions from the documents ``keys``, visited in a seeded order, each
    giving one of the kind the sample holds fewest of among those it offers; a corpus of
    fewer documents than ``n`` is visited again (at most ``ROUNDS`` times)."""
    order = sorted(keys)
    rng = random.Random(seed)
    rng.shuffle(order)
    counts = dict.fromkeys(KINDS, 0)
    seen: set[str] = set()
    offers: dict[str, dict[str, list[tuple[str, str, tuple[tuple[str, str], ...]]]]] = {}
    out: list[PseudoQuestion] = []
    for _ in range(ROUNDS):
        for key in order:
            if len(out) >= n:
                return out
            if key not in offers:
                metas = sorted(index.get(index.document_sentence_ids(key)).values(), key=lambda m: m.get("position", 0))
                offers[key] = {k: v for k, v in _candidates(metas).items() if v}
            mine = {k: [c for c in v if normalised(c[1]) not in seen] for k, v in offers[key].items()}
            mine = {k: v for k, v in mine.items() if v}
            if not mine:
                continue
            kind = min(mine, key=lambda k: (counts[k], KINDS.index(k)))
            asked, label, lines = rng.choice(mine[kind])
            seen.add(normalised(label))
            gold = _resolve(index, label, key)
            if gold is None:
                continue
            counts[kind] += 1
            out.append(PseudoQuestion(kind, asked, tuple(gold), label, lines))
    return out


# ---------------------------------------------------------------------------------------------
# asking


def hidden_for(index: SentenceIndex, q: PseudoQuestion) -> Hidden:
    """What ``index`` must not show for ``q``: each gold document's sentences holding the
    label, and the text its whole-document record loses with them (not a reply's quoted
    history: that record leaves it out already)."""
    want = normalised(q.label)
    quoted_subject = re.compile(r"\bsubject (?:(?:re|fw|fwd|aw|wg|tr) )*" + re.escape(want) + r"\b")
    ids: set[int] = set()
    removed: list[tuple[str, str]] = list(q.lines)
    for key in q.gold:
        for sid, m in index.get(index.document_sentence_ids(key)).items():
            text = m.get("text") or ""
            if m.get("field") == "subject":
                held = normalised(subject_label(str(m.get("subject") or ""))) == want
            elif q.kind == "subject":  # a forward's or a quote's own "Subject: ..." line
                held = bool(quoted_subject.search(normalised(text)))
            else:
                held = normalised(text) == want
            if held:
                ids.add(sid)
                if not m.get("quoted"):
                    removed.append((key, text))
    return Hidden(frozenset(ids), tuple(removed))


def rank_of(answers: Answers, gold: Sequence[str], top: int = TOP) -> int:
    """1-based rank of the first gold document among the answers (0: not in the top)."""
    for i, a in enumerate(list(answers)[:top], start=1):
        if a.doc_key in gold:
            return i
    return 0


def ask_all(index: SentenceIndex, ask: Ask, questions: Sequence[PseudoQuestion], settings: SearchSettings = DEFAULT) -> list[int]:
    """Each question's rank, asked through ``ask`` with its label hidden (and the catalog's
    subject lookup off: it would read the label from the catalog)."""
    base = replace(settings, subject_lookup=False)
    return [rank_of(ask(q.text, replace(base, hidden=hidden_for(index, q))), q.gold) for q in questions]


# ---------------------------------------------------------------------------------------------
# scoring


def _hit(r: int) -> float:
    return 100.0 if r == 1 else 0.0


def _rr(r: int) -> float:
    return 100.0 / r if r else 0.0


def _interval(values: Sequence[float], seed: int) -> tuple[float, float]:
    """The 95% percentile bootstrap interval of the mean of ``values``."""
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(RESAMPLES))
    return (round(means[int(0.025 * RESAMPLES)], 2), round(means[int(0.975 * RESAMPLES) - 1], 2))


def score(ranks: Sequence[int], questions: Sequence[PseudoQuestion], seed: int = 13) -> dict[str, Any]:
    """hit@1 and MRR@10 (%), their intervals, and the figures per kind."""
    hits, rrs = [_hit(r) for r in ranks], [_rr(r) for r in ranks]
    n = max(len(ranks), 1)
    by_kind: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        mine = [r for r, q in zip(ranks, questions, strict=True) if q.kind == kind]
        if mine:
            by_kind[kind] = {
                "questions": len(mine),
                "hit1": round(sum(map(_hit, mine)) / len(mine), 2),
                "mrr10": round(sum(map(_rr, mine)) / len(mine), 2),
            }
    return {
        "questions": len(ranks),
        "hit1": round(sum(hits) / n, 2),
        "mrr10": round(sum(rrs) / n, 2),
        "hit1_ci": _interval(hits, seed),
        "mrr10_ci": _interval(rrs, seed + 1),
        "by_kind": by_kind,
    }


def run(
    index: SentenceIndex,
    ask: Ask,
    keys: Iterable[str],
    n: int = QUESTIONS,
    seed: int = 13,
    settings: SearchSettings = DEFAULT,
    model: str = "",
) -> tuple[SelfCheck, list[PseudoQuestion]]:
    """Sample ``n`` pseudo-questions from ``index`` and ask them: the :class:`SelfCheck` and
    the questions (to ask another generation the same ones)."""
    t0 = time.perf_counter()
    questions = sample(index, keys, n, seed)
    ranks = ask_all(index, ask, questions, settings)
    return result(ranks, questions, index, seed, time.perf_counter() - t0, model), questions


def result(
    ranks: Sequence[int], questions: Sequence[PseudoQuestion], index: SentenceIndex, seed: int, seconds: float, model: str
) -> SelfCheck:
    """The :class:`SelfCheck` of ``ranks`` (measured now)."""
    figures = score(ranks, questions, seed)
    return SelfCheck(
        **figures,
        seconds=round(seconds, 2),
        sentences=int(index.num_sentences),
        seed=seed,
        measured=_dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        model=model,
        ranks=list(ranks),
    )


@dataclass(frozen=True)
class Comparison:
    """Two settings (or generations) on the same pseudo-questions: the mean difference
    (``after`` − ``before``, points of the metric) and its paired bootstrap interval."""

    metric: str
    before: float
    after: float
    diff: float
    ci: tuple[float, float]

    @property
    def better(self) -> bool:
        """``after`` is better by more than the interval: its lower end is above 0."""
        return self.ci[0] > 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "better": self.better}


def compare(before: Sequence[int], after: Sequence[int], metric: str = "mrr10", seed: int = 13) -> Comparison:
    """The paired comparison of two rank lists of the same questions."""
    f = _rr if metric == "mrr10" else _hit
    a, b = [f(r) for r in before], [f(r) for r in after]
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = max(len(diffs), 1)
    return Comparison(
        metric, round(sum(a) / n, 2), round(sum(b) / n, 2), round(sum(diffs) / n, 2), _interval(diffs, seed)
    )
