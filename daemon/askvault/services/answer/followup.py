"""`answer_follow_up`: a follow-up question answered with its thread's earlier questions.

The follow-up is made standalone by rules (core/followup.py) and that is what is searched,
over the whole vault, with the pages the earlier turn's search found first as candidates,
not a cage (`earlier_pages`: chunks of theirs the follow-up's search finds earn
`fusion.carry_pages` points; nothing else is dropped). The model reads the follow-up in one
of the forms of `core.followup.asked_follow_up` (by default the standalone question), so
"and on mobile?" is asked about the ribbon; a reply that answers one of the earlier
questions again is withheld (`decision.earlier_question`, by the own-question check), and
so is one whose links all lead off the thread: to none of the THREAD_PAGES pages the
earlier turn's search found first (`decision.off_thread`: "what about on Android?" after
a question about the quick switcher, answered with what the Android page says of widgets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from askvault.adapters import link_store
from askvault.adapters.db import Connection
from askvault.adapters.vault import read_note
from askvault.core.controls import strip_controls
from askvault.core.followup import (
    DEFAULT_FOLLOW_UP_FORM,
    REWRITE_MAX_TOKENS,
    REWRITE_SCHEMA,
    asked_follow_up,
    find_follow_ups,
    is_elliptic,
    period_texts,
    read_rewrite,
    rewrite_messages,
    standalone_question,
)
from askvault.core.links import extract_links
from askvault.core.notes import parse_note
from askvault.core.reply import ReplyLimits
from askvault.errors import AskvaultError, OllamaError
from askvault.records import Embedder, Generator, PeriodRequest, QuestionOptions, SearchFilters
from askvault.services.answer.generation import TokenSink, reply_limits, short_reply
from askvault.services.answer.pipeline import answer_question
from askvault.services.answer.result import AnswerResult
from askvault.services.retrieval.search import search
from askvault.settings import Settings

# The earlier turn's first pages carried into a follow-up's search: what its answer cites
# (measured against 5 and 1: docs/decisions.md).
CARRIED_PAGES = 3
# The earlier turn's first pages a follow-up's answer must link to at least one of: the
# thread's reach. Chosen on the three thread sets' answers read blind (the right
# follow-ups' pages ranked 1 to 5, the wrong ones' off-thread pages 8 to 20 or absent),
# checked on two sets written blind afterwards (docs/decisions.md).
THREAD_PAGES = 10


@dataclass(frozen=True)
class FollowUpAnswer:
    """The answer of one follow-up, and what was searched and asked for it."""

    result: AnswerResult
    searched: str
    asked_as: str
    background: str = ""
    carried: tuple[str, ...] = ()  # the earlier turn's pages, searched as candidates
    thread_pages: tuple[str, ...] = ()  # the thread's reach: the answer must link to one


def answer_follow_up(
    conn: Connection,
    settings: Settings,
    follow_up: str,
    earlier: Sequence[str],
    *,
    embedder: Embedder | None,
    generator: Generator,
    options: QuestionOptions | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    asked: str | None = None,
    on_token: TokenSink | None = None,
    form: str = DEFAULT_FOLLOW_UP_FORM,
    earlier_answer: str = "",
) -> FollowUpAnswer:
    """Answer `follow_up`, given the thread's earlier questions (first first). `form` is
    how the model reads it (core.followup.FOLLOW_UP_FORMS; `earlier_answer`, the first
    turn's answer, is read by "background+answer" only)."""
    searched = standalone_question(earlier, follow_up)
    options = options or QuestionOptions()
    reach = earlier_pages(conn, settings, earlier, embedder=embedder, options=options)
    carried = reach[:CARRIED_PAGES]
    if reach:  # a page the follow-up links to is the user's own pointer: on the thread
        reach = tuple(dict.fromkeys((*reach, *linked_pages(conn, follow_up))))
    rewritten = None
    if form == "rewritten" and earlier and is_elliptic(follow_up):
        rewritten = rewrite_follow_up(
            generator,
            earlier,
            follow_up,
            model=(options.model if options else None) or settings.ollama.chat_model,
            num_ctx=settings.ollama.num_ctx,
            limits=reply_limits(settings),
            should_stop=should_stop,
        )
    asked_as = asked_follow_up(form, earlier, follow_up, earlier_answer, rewritten)
    result = answer_question(
        conn,
        settings,
        asked_as.question,
        options,
        embedder=embedder,
        generator=generator,
        should_stop=should_stop,
        asked=asked,
        search_as=searched,
        on_token=on_token,
        background=asked_as.background,
        earlier=earlier,
        carried=carried,
        thread_pages=reach,
        period_words=period_texts(earlier, strip_controls(follow_up)),
    )
    return FollowUpAnswer(result, searched, asked_as.question, asked_as.background, carried, reach)


def earlier_pages(
    conn: Connection,
    settings: Settings,
    earlier: Sequence[str],
    *,
    embedder: Embedder | None,
    options: QuestionOptions,
) -> tuple[str, ...]:
    """The THREAD_PAGES pages the last of the `earlier` turns' searches found first (its
    first CARRIED_PAGES are the follow-up's candidates), each turn searched as it was
    answered (standalone, with its own earlier turn's CARRIED_PAGES as candidates) and
    narrowed by the same options: what its answer could cite, read from the index as it
    is now, not from the note (the user may have edited it, a withheld answer cites
    nothing). Empty without earlier turns; a blank turn is skipped. Once a search could
    not use vectors, the turns after it are searched by words alone."""
    filters = SearchFilters(folders=options.folders, tags=options.tags)
    reach: tuple[str, ...] = ()
    for number, question in enumerate(earlier):
        # Searched as the pipeline searches a turn: control characters out.
        if not strip_controls(question).strip():
            continue  # a blank turn found nothing: the pages before it stay
        found = search(
            conn,
            settings,
            strip_controls(standalone_question(earlier[:number], question)).strip(),
            limit=THREAD_PAGES,
            embedder=embedder,
            filters=filters,
            period=PeriodRequest(
                since=options.since,
                until=options.until,
                words=period_texts(earlier[:number], strip_controls(question)),
            ),
            carried=reach[:CARRIED_PAGES],
        )
        reach = tuple(hit.note_path for hit in found.hits)
        if found.degraded:
            # Vectors unusable (Ollama down or hung, no vectors yet): the other turns from
            # words, so a hung server costs one wait here, not one per turn.
            embedder = None
    return reach


def linked_pages(conn: Connection, text: str) -> tuple[str, ...]:
    """The vault paths of the notes `text`'s wikilinks resolve to, in order (a link that
    resolves to nothing is left out)."""
    resolved = link_store.resolve_targets(conn, [link.target for link in extract_links(text)])
    return tuple(dict.fromkeys(resolved.values()))


def rewrite_follow_up(
    generator: Generator,
    earlier: Sequence[str],
    follow_up: str,
    *,
    model: str,
    num_ctx: int,
    limits: ReplyLimits,
    should_stop: Callable[[], bool] = lambda: False,
) -> str | None:
    """The chat model's standalone rewrite of `follow_up` (core.followup.rewrite_messages),
    read up to REWRITE_MAX_TOKENS pieces and `limits`' bytes and seconds, or None when
    it cannot be taken (`read_rewrite`) or the model cannot be reached now: the rules'
    question is asked then, and the answer's own request says whether Ollama is down."""
    try:
        read = short_reply(
            generator,
            rewrite_messages(earlier, follow_up),
            model=model,
            num_ctx=num_ctx,
            schema=REWRITE_SCHEMA,
            max_tokens=REWRITE_MAX_TOKENS,
            limits=limits,
            should_stop=should_stop,
            stopped="stopped while the follow-up was being rewritten",
        )
    except OllamaError:
        return None
    if read.cut is not None:
        return None  # a rewrite cut short is no question
    return read_rewrite(read.text, earlier, follow_up)


@dataclass(frozen=True)
class ThreadNote:
    """An answer note read for a follow-up: where it is, its text and the hash of its
    bytes, its questions (first first: its `question:` and its follow-ups) and its
    properties (the `ask_*` options its follow-ups are answered with)."""

    rel: str
    text: str
    content_hash: str
    questions: list[str]
    properties: dict[str, Any]


def read_thread(settings: Settings, note: str) -> ThreadNote:
    """The answer note `note` (a name in the answers folder, else a vault-relative path;
    `.md` optional) with its thread. Raises AskvaultError when it is no answer note of
    askvault's (no `question:` property) or there is none."""
    q = settings.queries
    rel = note.strip().replace("\\", "/")
    tried = [f"{q.folder}/{q.answers}/{rel}", rel]  # a name in the answers folder first
    tried += [t + ".md" for t in tried if not t.lower().endswith(".md")]
    for candidate in tried:
        try:
            read = read_note(settings.vault_path, candidate, settings.index.max_note_bytes)
        except AskvaultError:
            continue
        properties = parse_note(candidate, read.text).frontmatter
        first = properties.get("question")
        if not isinstance(first, str) or not first.strip():
            raise AskvaultError(
                f"{candidate} has no `question:` property: it is not an answer note",
                "give an answer note from the answers folder (queries/answers/)",
            )
        questions = [first.strip()] + [f.question for f in find_follow_ups(read.text) if f.question]
        return ThreadNote(candidate, read.text, read.content_hash, questions, dict(properties))
    raise AskvaultError(
        f"no answer note {note!r} in the vault",
        f"give its path in the vault, e.g. {q.folder}/{q.answers}/<name>.md",
    )
