"""Notices askvault adds to (or drops from) an answer note it already wrote; pure text.

- The archive warning: a question that was answered but cannot be moved to the archive
  stays in the inbox, and its answer says why (issue 15, defect 1).
- What a note says: the text with the timing line of its retrieval trace left out, used
  to decide whether a `waiting` note needs rewriting (the timings of a failed attempt
  change on every retry and tell the user nothing new).
"""

from __future__ import annotations

import re

ARCHIVE_WARNING_TITLE = "> [!warning] Question not archived"
_ARCHIVE_WARNING = re.compile(r"\n> \[!warning\] Question not archived\n(?:>.*\n)*")
_QUESTION_CALLOUT = re.compile(r"^> \[!question\]\n(?:>.*\n)*", re.MULTILINE)
_TIMING_LINE = re.compile(r"^> time: [^\n]*\n?", re.MULTILINE)
# The ownership marker (core/ownership.py) hashes the whole text, timings included.
_MARKER_LINE = re.compile(r"^askvault: [^\n]*\n?", re.MULTILINE)


def render_archive_warning(reason: str) -> str:
    """The callout naming why the question could not be archived."""
    flat = " ".join(reason.split())
    return (
        f"{ARCHIVE_WARNING_TITLE}\n"
        f"> askvault could not archive the question: {flat}\n"
        "> It stays in the inbox and is not answered again; askvault moves it to the archive"
        " as soon as it can."
    )


def with_archive_warning(note_text: str, reason: str) -> str:
    """`note_text` with the archive warning (replacing any earlier one) after the question."""
    body = without_archive_warning(note_text)
    callout = render_archive_warning(reason)
    match = _QUESTION_CALLOUT.search(body)
    if match is None:
        return body.rstrip("\n") + "\n\n" + callout + "\n"
    return body[: match.end()] + "\n" + callout + "\n" + body[match.end() :]


def without_archive_warning(note_text: str) -> str:
    """`note_text` without the archive warning (unchanged if it has none)."""
    return _ARCHIVE_WARNING.sub("", note_text, count=1)


def what_it_says(note_text: str) -> str:
    """The note's text minus its trace's timing line and its ownership marker: equal
    texts tell the user the same."""
    return _MARKER_LINE.sub("", _TIMING_LINE.sub("", note_text))


WRITE_PROBLEM_STEM = "Answers cannot be written"


def render_write_problem(folder: str, reason: str, since: str) -> str:
    """The note askvault keeps in `queries/` while no answer note can be written
    (issue 15, 16b): what fails, since when, and that it goes away by itself."""
    flat = " ".join(reason.split())
    return (
        "---\n"
        "status: problem\n"
        f'since: "{since}"\n'
        "---\n"
        "> [!failure] askvault cannot write answer notes\n"
        f"> Writing to `{folder}/` fails: {flat}.\n"
        "> Questions stay in the inbox and are retried by themselves. askvault removes this "
        "note as soon as an answer note can be written again.\n"
    )
