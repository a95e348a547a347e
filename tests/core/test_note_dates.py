"""A note's day: daily-note names (moment.js formats, folders), dated file names, date
properties, the file time; and the Daily notes settings file read."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from askvault.core.note_dates import (
    DatingRules,
    daily_note_day,
    note_day,
    property_day,
    read_daily_notes_config,
)

MTIME_NS = int(datetime(2026, 12, 1, 9, 30).timestamp() * 1e9)
DEFAULT = DatingRules()


def test_a_daily_note_in_the_default_format_is_dated_by_its_name() -> None:
    assert note_day("2023-05-20.md", {}, MTIME_NS, DEFAULT) == (date(2023, 5, 20), "daily")


@pytest.mark.parametrize(
    ("fmt", "folder", "path", "day"),
    [
        ("DD.MM.YYYY", "", "14.07.2023.md", date(2023, 7, 14)),
        ("YYYY/MM/DD.MM.YYYY", "Journal", "Journal/2023/07/14.07.2023.md", date(2023, 7, 14)),
        ("YYYY-MM-DD", "Daily/", "Daily/2023-07-14.md", date(2023, 7, 14)),
        ("dddd, MMMM Do YYYY", "", "Friday, July 14th 2023.md", date(2023, 7, 14)),
        ("D MMM YY", "", "4 Jul 23.md", date(2023, 7, 4)),
        ("[Journal] YYYY-MM-DD", "", "Journal 2023-07-04.md", date(2023, 7, 4)),
        ("YYYYMMDD", "", "20230704.md", date(2023, 7, 4)),
    ],
)
def test_a_daily_note_follows_the_vaults_format_and_folder(
    fmt: str, folder: str, path: str, day: date
) -> None:
    rules = DatingRules(daily_format=fmt, daily_folder=folder.strip("/"))
    assert note_day(path, {}, MTIME_NS, rules) == (day, "daily")


def test_a_daily_name_outside_the_daily_folder_is_not_a_daily_note() -> None:
    assert daily_note_day("Elsewhere/14.07.2023.md", "DD.MM.YYYY", "Journal") is None


def test_a_daily_name_that_is_no_real_day_is_not_a_daily_note() -> None:
    assert daily_note_day("2023-02-30.md", "YYYY-MM-DD", "") is None
    assert note_day("2023-02-30.md", {}, MTIME_NS, DEFAULT)[1] == "mtime"


def test_a_format_without_a_day_dates_nothing() -> None:
    assert daily_note_day("2023-07.md", "YYYY-MM", "") is None


def test_a_file_name_that_starts_with_a_day_is_dated_by_it() -> None:
    path = "Roundup/2022-12-10 Whiteboard Canvas for Mindmaps.md"
    assert note_day(path, {}, MTIME_NS, DEFAULT) == (date(2022, 12, 10), "name")
    assert note_day("2021.05.01 notes.md", {}, MTIME_NS, DEFAULT) == (date(2021, 5, 1), "name")


def test_a_file_name_with_a_day_inside_it_is_not_dated_by_it() -> None:
    assert note_day("Notes of 2022-12-10.md", {}, MTIME_NS, DEFAULT)[1] == "mtime"


def test_the_name_wins_over_a_date_property() -> None:
    frontmatter = {"date": "2020-01-01"}
    assert note_day("2022-12-10 Roundup.md", frontmatter, MTIME_NS, DEFAULT)[1] == "name"


@pytest.mark.parametrize(
    ("frontmatter", "day"),
    [
        ({"date": "2022-03-04"}, date(2022, 3, 4)),
        ({"created": "2022-03-04T10:00:00+01:00"}, date(2022, 3, 4)),
        ({"Date": date(2022, 3, 4)}, date(2022, 3, 4)),
        ({"created": datetime(2022, 3, 4, 23, 59)}, date(2022, 3, 4)),
        ({"date": ["2022-03-04", "2022-05-01"]}, date(2022, 3, 4)),
        ({"date": "soon", "created": "2022-03-04"}, date(2022, 3, 4)),
    ],
)
def test_a_date_property_dates_the_note(frontmatter: dict[str, object], day: date) -> None:
    assert note_day("Meeting.md", frontmatter, MTIME_NS, DEFAULT) == (day, "property")


def test_the_first_configured_property_wins() -> None:
    rules = DatingRules(properties=("published", "date"))
    frontmatter = {"date": "2020-01-01", "published": "2022-08-13T13:13:55"}
    assert note_day("Post.md", frontmatter, MTIME_NS, rules) == (date(2022, 8, 13), "property")


@pytest.mark.parametrize("value", ["next week", 2022, None, {"y": 2022}, [], "2022-13-01"])
def test_a_property_that_is_no_date_is_passed_over(value: object) -> None:
    assert property_day(value) is None


def test_the_file_time_dates_a_note_with_nothing_else() -> None:
    assert note_day("Plain.md", {}, MTIME_NS, DEFAULT) == (date(2026, 12, 1), "mtime")


def test_the_daily_notes_settings_give_format_and_folder() -> None:
    raw = b'{"format": "DD.MM.YYYY", "folder": "/Journal/", "template": "t"}'
    assert read_daily_notes_config(raw) == ("DD.MM.YYYY", "Journal", None)


@pytest.mark.parametrize("raw", [None, b"{}", b'{"format": "", "folder": null}'])
def test_missing_settings_are_obsidians_defaults(raw: bytes | None) -> None:
    assert read_daily_notes_config(raw) == ("YYYY-MM-DD", "", None)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_unreadable_settings_fall_back_to_the_default_and_say_why(raw: bytes) -> None:
    fmt, folder, problem = read_daily_notes_config(raw)
    assert (fmt, folder) == ("YYYY-MM-DD", "")
    assert problem and "daily-notes.json" in problem


def test_the_rules_key_changes_with_each_rule() -> None:
    keys = {
        DatingRules().key(),
        DatingRules(daily_format="DD.MM.YYYY").key(),
        DatingRules(daily_folder="Journal").key(),
        DatingRules(properties=("date",)).key(),
    }
    assert len(keys) == 4
