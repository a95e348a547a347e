"""askvault's ownership marker in the answer notes it writes (issue 15, 16e); pure text.

Which notes under `queries/answers/` are askvault's own is recorded in the index
(`answers` table: the sha256 of the bytes written). An index that is deleted and
rebuilt (doctor recommends it for a corrupt one) loses that record, so every note
also carries its proof in its frontmatter:

    askvault: "v1:<sha256>"

the sha256 of the note's text without that line, bound to the question's file name
(the answer's stem without a ` (N)` suffix, or with it). A note whose marker matches
its current text is one askvault wrote and nobody changed since; an edit anywhere
(the marker line aside), a marker copied into another note or another name, or a
made-up value does not match, and such a note stays the user's. The marker is not a
secret: a user who recomputes it on purpose makes the note askvault's again.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

MARKER_KEY = "askvault"
MARKER_VERSION = "v1"
_MARKER_LINE = re.compile(r'^askvault: "?(v1:[0-9a-f]{64})"?[ \t]*\r?\n', re.MULTILINE)
_ANY_MARKER_LINE = re.compile(r"^askvault:.*\r?\n", re.MULTILINE)
_COPY_SUFFIX = re.compile(r"^(.*) \((\d+)\)$")
_STATUS = re.compile(r"^status: *([a-z-]+)[ \t]*\r?$", re.MULTILINE)
_REPORT = re.compile(r"^## Citation report[ \t]*\n(.*?)(?=^## |^> \[!info\]- |\Z)",
                     re.MULTILINE | re.DOTALL)
_RESOLVED = re.compile(r"^- `[^`\n]*` — \*\*resolved\*\* → `([^`\n]+)`(.*)$", re.MULTILINE)
PLAIN_TEXT_NOTE = "shown as plain text"


@dataclass(frozen=True)
class OwnedNote:
    """What an answer note that proves to be askvault's own says about itself."""

    question_stem: str
    status: str
    cited: tuple[str, ...]


def sign_note(text: str, question_stem: str) -> str:
    """`text` with the ownership marker for `question_stem` as its frontmatter's last key
    (replacing any earlier marker). A text without frontmatter is returned unchanged."""
    head, body = _split(text)
    if head is None:
        return text
    head = _ANY_MARKER_LINE.sub("", head)
    digest = _digest(question_stem, head + body)
    return f'{head}{MARKER_KEY}: "{MARKER_VERSION}:{digest}"\n{body}'


def owned_note(text: str, answer_stem: str) -> OwnedNote | None:
    """The note's own account if its marker matches its text, for the question named like
    the answer (`Q` for `Q.md` or `Q (2).md`, or a question itself named `Q (2)`)."""
    head, body = _split(text)
    if head is None:
        return None
    found = _MARKER_LINE.search(head)
    if found is None:
        return None
    unsigned = head[: found.start()] + head[found.end():] + body
    for stem in question_stems(answer_stem):
        if f"{MARKER_VERSION}:{_digest(stem, unsigned)}" == found.group(1):
            status = _STATUS.search(head)
            return OwnedNote(stem, status.group(1) if status else "", cited_paths_of(body))
    return None


def question_stems(answer_stem: str) -> list[str]:
    """The question names an answer note of this stem may belong to."""
    match = _COPY_SUFFIX.match(answer_stem)
    return [answer_stem, match.group(1)] if match else [answer_stem]


def cited_paths_of(body: str) -> tuple[str, ...]:
    """The vault paths the citation report shows as resolved and published, in order."""
    report = _REPORT.search(body)
    if report is None:
        return ()
    paths = [m.group(1) for m in _RESOLVED.finditer(report.group(1))
             if PLAIN_TEXT_NOTE not in m.group(2)]
    return tuple(dict.fromkeys(paths))


def _split(text: str) -> tuple[str | None, str]:
    """(the frontmatter from its opening `---` line up to, not including, its closing one;
    the rest) or (None, text)."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 3)
    if end < 0:
        return None, text
    return text[: end + 1], text[end + 1:]


def _digest(question_stem: str, unsigned_text: str) -> str:
    data = f"askvault answer note\n{question_stem}\n{unsigned_text}".encode()
    return hashlib.sha256(data).hexdigest()
