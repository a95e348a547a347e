"""The period a question names: relative words, months, years, ranges, bounds, parts of a
period, the nine languages of question notes, and the questions that name no period."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from askvault.core.periods import Period, find_period, period_from_bounds

NOW = datetime(2023, 7, 15, 12, 0)  # a Saturday


def _days(question: str, now: datetime = NOW) -> tuple[str | None, str | None]:
    period = find_period(question, now)
    assert period is not None, question
    return period.bounds()


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("what did I write last week about Canvas?", "2023-07-03", "2023-07-09"),
        ("notes from yesterday", "2023-07-14", "2023-07-14"),
        ("what did I do today", "2023-07-15", "2023-07-15"),
        ("what did I write this week", "2023-07-10", "2023-07-16"),
        ("what did I write this month", "2023-07-01", "2023-07-31"),
        ("plans from last month", "2023-06-01", "2023-06-30"),
        ("my goals of last year", "2022-01-01", "2022-12-31"),
        ("my notes from the last 3 days", "2023-07-12", "2023-07-15"),
        ("what changed in the past 2 weeks", "2023-07-01", "2023-07-15"),
        ("what did I write 3 days ago", "2023-07-12", "2023-07-12"),
        ("the plan from 2 weeks ago", "2023-06-26", "2023-07-02"),
    ],
)
def test_relative_words_are_read_from_now(question: str, since: str, until: str) -> None:
    assert _days(question) == (since, until)


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("what happened in March", "2023-03-01", "2023-03-31"),
        # A month not yet begun this year is last year's.
        ("what happened in September", "2022-09-01", "2022-09-30"),
        ("the current month: in July", "2023-07-01", "2023-07-31"),
        ("the roundups from May 2023", "2023-05-01", "2023-05-31"),
        ("notes of 2022", "2022-01-01", "2022-12-31"),
        ("what did I write on 2023-05-20", "2023-05-20", "2023-05-20"),
        ("the plan of 2023-02", "2023-02-01", "2023-02-28"),
        ("what happened on 20 May 2023", "2023-05-20", "2023-05-20"),
        ("what happened on May 20, 2023", "2023-05-20", "2023-05-20"),
    ],
)
def test_absolute_dates_are_the_day_month_or_year_they_name(
    question: str, since: str, until: str
) -> None:
    assert _days(question) == (since, until)


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("since 2024-01-05 what changed", "2024-01-05", None),
        ("since March 2023", "2023-03-01", None),
        ("after March 2023 dataview", "2023-04-01", None),
        ("Canvas before 2023", None, "2022-12-31"),
        ("until May 2023", None, "2023-05-31"),
        ("between June and August 2022 what plugins", "2022-06-01", "2022-08-31"),
        ("from March to May 2023", "2023-03-01", "2023-05-31"),
        ("between 2021 and 2022", "2021-01-01", "2022-12-31"),
    ],
)
def test_range_words_bound_the_period(question: str, since: str | None, until: str | None) -> None:
    assert _days(question) == (since, until)


def test_the_first_month_of_a_range_takes_the_year_of_the_second() -> None:
    # "June" alone is June 2023 (before now); beside "August 2022" it is June 2022.
    assert _days("between June and August 2022") == ("2022-06-01", "2022-08-31")


def test_a_range_over_new_year_keeps_each_months_own_year() -> None:
    assert _days("between December 2022 and January 2023") == ("2022-12-01", "2023-01-31")


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("what did the roundups say about Canvas in late 2022?", "2022-09-01", "2022-12-31"),
        ("the roundups of early 2022", "2022-01-01", "2022-04-30"),
        ("mid 2022", "2022-05-01", "2022-08-31"),
        ("mid-March 2023", "2023-03-11", "2023-03-20"),
        ("at the end of February 2024", "2024-02-21", "2024-02-29"),
    ],
)
def test_early_mid_and_late_are_thirds_of_a_month_or_a_year(
    question: str, since: str, until: str
) -> None:
    assert _days(question) == (since, until)


@pytest.mark.parametrize(
    ("question", "since", "until"),
    [
        ("Was habe ich letzte Woche über Canvas geschrieben?", "2023-07-03", "2023-07-09"),
        ("Notizen von gestern", "2023-07-14", "2023-07-14"),
        ("seit März 2023", "2023-03-01", None),
        ("Zwischen Juni und August 2022", "2022-06-01", "2022-08-31"),
        ("Notizen von vor 2 Wochen", "2023-06-26", "2023-07-02"),
        ("Ende März", "2023-03-21", "2023-03-31"),
        ("notes de la semaine dernière", "2023-07-03", "2023-07-09"),
        ("les notes des 3 derniers jours", "2023-07-12", "2023-07-15"),
        ("notas de ayer", "2023-07-14", "2023-07-14"),
        ("notas de marzo de 2023", "2023-03-01", "2023-03-31"),
        ("notas da semana passada", "2023-07-03", "2023-07-09"),
        ("note della settimana scorsa", "2023-07-03", "2023-07-09"),
        ("notities van vorige week", "2023-07-03", "2023-07-09"),
        ("昨天的笔记", "2023-07-14", "2023-07-14"),
        ("2022年3月的笔记", "2022-03-01", "2022-03-31"),
        ("先週のノート", "2023-07-03", "2023-07-09"),
        ("3月から5月までのノート", "2023-03-01", "2023-05-31"),
    ],
)
def test_the_languages_of_question_notes(question: str, since: str | None, until: str) -> None:
    assert _days(question) == (since, until)


@pytest.mark.parametrize(
    "question",
    [
        "What can I do with Canvas?",
        "How do I make a second brain?",
        "May I embed a PDF?",
        "march on with templates",
        "How to sync now?",
        "What is a daily note?",
        "How do I sort files by date?",
        "the 10 best plugins",
        "what did the 2020 election change",
        "Windows 2000 drivers",
        "",
    ],
)
def test_a_question_with_no_period_has_none(question: str) -> None:
    assert find_period(question, NOW) is None


def test_the_words_are_the_questions_own_with_their_case() -> None:
    period = find_period("What did the Roundups say in Late 2022?", NOW)
    assert period is not None and period.words == "Late 2022"


def test_a_week_runs_monday_to_sunday_whatever_the_day_now() -> None:
    sunday = datetime(2023, 7, 16, 23, 0)
    monday = datetime(2023, 7, 17, 0, 30)
    assert _days("last week", sunday) == ("2023-07-03", "2023-07-09")
    assert _days("last week", monday) == ("2023-07-10", "2023-07-16")


def test_last_month_in_january_is_last_years_december() -> None:
    assert _days("last month", datetime(2024, 1, 10)) == ("2023-12-01", "2023-12-31")


def test_the_last_n_months_from_the_31st_keeps_a_real_day() -> None:
    assert _days("the last 1 months", datetime(2023, 3, 31)) == ("2023-02-28", "2023-03-31")


def test_describe_says_the_days() -> None:
    assert Period(date(2023, 7, 3), date(2023, 7, 9), "").describe() == "2023-07-03 to 2023-07-09"
    assert Period(date(2023, 7, 3), date(2023, 7, 3), "").describe() == "2023-07-03"
    assert Period(date(2024, 1, 5), None, "").describe() == "since 2024-01-05"
    assert Period(None, date(2022, 12, 31), "").describe() == "until 2022-12-31"


@pytest.mark.parametrize(
    ("since", "until", "bounds"),
    [
        ("2024-01-05", None, ("2024-01-05", None)),
        ("2024-01", "2024-03", ("2024-01-01", "2024-03-31")),
        (None, "2023", (None, "2023-12-31")),
        ("last week", None, ("2023-07-03", None)),
        (None, "yesterday", (None, "2023-07-14")),
        ("1850", "1850", ("1850-01-01", "1850-12-31")),
    ],
)
def test_bounds_take_the_first_day_of_since_and_the_last_of_until(
    since: str | None, until: str | None, bounds: tuple[str | None, str | None]
) -> None:
    period = period_from_bounds(since, until, NOW)
    assert period is not None and period.bounds() == bounds


def test_no_bounds_are_no_period() -> None:
    assert period_from_bounds(None, None, NOW) is None
    assert period_from_bounds("", "", NOW) is None


@pytest.mark.parametrize("value", ["whenever", "2023-13-45", "last week about canvas", "12"])
def test_a_bound_that_is_no_date_is_refused_naming_it(value: str) -> None:
    with pytest.raises(ValueError, match="is not a date"):
        period_from_bounds(value, None, NOW)


def test_since_after_until_is_refused() -> None:
    with pytest.raises(ValueError, match="is after until"):
        period_from_bounds("2024-01-01", "2023", NOW)


@pytest.mark.parametrize(
    "question",
    [
        "I bought Obsidian Publish 3 days ago and changed my mind, can I get my money back?",
        "I deleted a note yesterday, how do I get it back?",
        "what will Obsidian call my journal note for today",
        "what happened yesterday?",
        "Ich habe gestern eine Notiz gelöscht, wie bekomme ich sie zurück?",
        # A time to come: "meeting" marks a question about what was written, but a
        # meeting tomorrow is one the user has not had, and no note of it exists yet.
        "want to present one of my notes as slides at a meeting tomorrow. how do i tell "
        "obsidian where one slide stops and the next starts?",
        "I fly to Lisbon next week, how do I take my vault offline?",
    ],
)
def test_a_relative_time_that_dates_an_event_is_no_period(question: str) -> None:
    # A how-to question says when something happened to the user (or will); narrowing the
    # search to the notes of that day would answer it from the wrong notes, or from none.
    assert find_period(question, datetime(2023, 7, 5, 12)) is None


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("what did I write last week about the garden?", "last week"),  # about writing
        ("the plan from 2 weeks ago", "2 weeks ago"),  # the time belongs to a thing
        ("sourdough starter last week", "last week"),  # a search of words
        ("I bought Publish in March 2023, what did the roundups say?", "March 2023"),
    ],
)
def test_a_relative_time_about_the_notes_or_a_calendar_date_is_a_period(
    question: str, words: str
) -> None:
    period = find_period(question, datetime(2023, 7, 5, 12))
    assert period is not None and period.words == words


def test_ago_is_no_month_name_in_an_english_question() -> None:
    # "ago" is August in Spanish, Italian and Portuguese.
    assert find_period("I bought it 3 days ago, can I get a refund?", datetime(2023, 7, 5)) is None


@pytest.mark.parametrize(
    "question",
    [
        # quoted or in code: the date is the text the user wants
        "can the date come out like 'Monday 3 March' instead of 2025-03-03?",
        "my template writes `2024-03-15`, how do I add the weekday?",
        'why does "March 2023" show up as plain text in my property?',
        # an example or a target after a word that gives one
        "the site i clip from writes dates like 31.12.2024. how do i get the web clipper "
        "date filter to turn that into 2024-12-31?",
        "clipping articles whose published dates look like 03/15/2024, month first. i want "
        "2024-03-15 in my property. how do i tell the clipper's date format?",
        "can my daily note's name read as 2024-01-05 rather than 05.01.2024?",
        # a number that starts a compound word
        "i'm drafting an essay and want to give the note a 2000-word target. where do i "
        "set that up in word count?",
        # today's date as a thing
        "can it fill in today's date for me?",
        "I want a layout for meeting notes with today's date filled in automatically.",
        # a year after the English article, not the Romance "a" (to)
        "how do i swap the front brake pads on a 2012 toyota corolla?",
    ],
)
def test_a_date_the_question_gives_as_a_value_is_no_period(question: str) -> None:
    # Questions about how dates are written (templates, properties, the clipper's
    # filters): narrowing them to the notes of that day left nothing to answer from.
    assert find_period(question, datetime(2026, 12, 7, 12)) is None


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("my notes for tomorrow", "tomorrow"),  # tied to notes by "for"
        ("the plan from next week", "next week"),  # a preposition of belonging
        ("notes like the ones from March 2023", "March 2023"),  # "like" is not before it
        ("what did I write on 2023-05-01", "2023-05-01"),
        ("de 2022 a 2023 mis notas", "de 2022 a 2023"),  # the Romance "a" ends a range
        ("what did I write in 2012?", "2012"),
    ],
)
def test_a_date_the_question_asks_about_is_still_a_period(question: str, words: str) -> None:
    period = find_period(question, datetime(2026, 12, 7, 12))
    assert period is not None and period.words == words


def test_a_month_joined_to_the_next_by_a_hyphen_still_starts_a_range() -> None:
    # Only a number starts a compound word ("a 2000-word target"); "march-april" is a range.
    assert _days("my notes between march-april 2023", datetime(2026, 12, 7, 12)) == (
        "2023-03-01",
        "2023-04-30",
    )
