"""The no-answer decision: whether the first document answers the question or is only the
closest match (calibrated in docs/product.md)."""

from __future__ import annotations

import math

from engine.index.sentences import IndexFilters, SentenceIndex
from engine.search.choice import address_shown
from engine.search.intent import QuestionIntent
from engine.search.results import Answers
from engine.search.retrieve import QueryEncoder
from engine.search.settings import DEFAULT, SearchSettings

#: The match threshold when neither the settings nor the bundle give one.
ANSWER_MATCH = 0.33


def answer_match(query: QueryEncoder, settings: SearchSettings = DEFAULT) -> float:
    """The match threshold of the no-answer decision: the settings' (a benchmark's), else the
    bundle's own (``answer_match`` in its config.json, calibrated on its scores), else
    ``ANSWER_MATCH``."""
    if settings.answer_match is not None:
        return settings.answer_match
    own = query.config.answer_match
    return ANSWER_MATCH if own is None else own


def decide(
    answers: Answers,
    index: SentenceIndex,
    query: QueryEncoder,
    intent: QuestionIntent,
    qids: list[int],
    weights: dict[int, float] | bool | None,
    sparc_top: float | None,
    filters: IndexFilters | None,
    settings: SearchSettings = DEFAULT,
) -> None:
    """Set ``answers.coverage``, ``.match`` and ``.answered``: a question is answered when the
    best sentence's SPARC score (question tokens weighted by IDF, frame words left out)
    reaches ``answer_match`` of the highest score its ``answer_tokens`` weightiest tokens could
    get (a sentence means what the question asks; SPARC's expansions count), and the first
    document holds ``answer_coverage`` of its content words, IDF-weighted (the document is
    about what it names)."""
    answers.coverage, n_terms = index.coverage(" ".join(intent.content), answers[0].doc_key)
    if n_terms == 0 and index.num_documents == 0:  # no document index (an older generation):
        answers.coverage = 1.0  # the match alone decides
    # otherwise no term means a question that names nothing ("What is it?", "Who sent the
    # e-mail?"): coverage 0, not answered, the closest matches still shown.
    # The match is measured without the question's frame words, as the coverage is: no
    # sentence need say "e-mail" or "sent" to answer "Who sent the e-mail about ...?".
    ranked_as_typed = intent.ranking == intent.text
    mqids = query.question_ids(intent.match_text()) or qids if ranked_as_typed and qids else qids
    if weights is not True or mqids != qids:  # the ranking's scores are not those the match needs
        best = index.search(mqids, 1, idf=True, filters=filters) if mqids else []
        sparc_top = best[0].score if best else None
    ceiling = index.max_score(mqids, idf=True, tokens=settings.answer_tokens) if mqids else 0.0
    answers.match = sparc_top / ceiling if sparc_top is not None and ceiling > 0 else 0.0
    about = answers.coverage >= settings.answer_coverage
    matched = answers.match >= answer_match(query, settings)
    rare = False
    if settings.rare_share is not None and intent.content:  # (measured, not shipped: docs/product.md)
        answers.rare = index.rarest_held(" ".join(intent.content), answers[0].doc_key)
        rare = answers.rare <= settings.rare_share
    if settings.field_answered and intent.address_of:
        # an address question is answered exactly when an answer shows the person's address:
        # a name no header holds whole ("What is the email address of <a stranger>?") is not,
        # whatever its words match
        answers.answered = about and address_shown(answers[0].best.sentence, intent.address_of) > 0
        return
    if intent.language != "en" and settings.foreign_coverage is not None:
        # the model reads English: its match with a question in another language says less
        # (bench.no_answer's Portuguese notes); what the first document holds of the question's
        # words decides, or a little less of them with a high match
        low = settings.foreign_low_coverage
        answers.answered = (
            answers.coverage >= settings.foreign_coverage
            or (low is not None and answers.coverage >= low and answers.match >= settings.foreign_match)
            or (about and rare)
        )
        return
    answers.lead = lead(answers)
    answers.answered = (about and (matched or rare or _header_answers(answers, intent, settings))) or (
        index.num_documents >= STANDOUT_AMONG and stands_out(answers, settings)
    )


#: A first document stands out only among this many documents at least: in a home of one or
#: two files any question some words of which they hold would "stand out".
STANDOUT_AMONG = 5


def lead(answers: Answers) -> float:
    """The log of the first answer's document score over the second's (``math.inf`` when it is
    the only document that matched, 0 when its score is not positive)."""
    first = answers[0].score
    second = answers[1].score if len(answers) > 1 else 0.0
    if first <= 0:
        return 0.0
    return math.log(first / second) if second > 0 else math.inf


def stands_out(answers: Answers, settings: SearchSettings) -> bool:
    """The first document stands far above the next and still holds some of the question's
    words and meaning: a paraphrase of what one note says ("Which laws protect newly-planted
    trees?" over a note that "ordinances protect saplings") holds few of its words and
    reaches a low match, yet no other document comes close (issue 37: the no-answer banner
    stood above such right answers in the user's notes)."""
    if settings.standout_lead is None:
        return False
    return (
        answers.lead >= settings.standout_lead
        and answers.coverage >= settings.standout_coverage
        and answers.match >= settings.standout_match
    )


#: The share of a field question's words its message must hold for its header line to count
#: as an answer without the match.
FULL_COVERAGE = 0.99


def _header_answers(answers: Answers, intent: QuestionIntent, settings: SearchSettings) -> bool:
    """The first answer is the header line a field question asks for ("Who received the budget
    mail?" -> its To line) of a message that holds every word the question names. The match
    measures whether a sentence means what is asked; a header line answers by what it is, and
    its SPARC match with the question's few content words is low (issue 37: the no-answer
    banner stood above right To lines). A switch of ``SearchSettings`` (``field_answered``)."""
    if not settings.field_answered or not intent.field:
        return False
    return answers[0].best.field == intent.field and answers.coverage >= FULL_COVERAGE
