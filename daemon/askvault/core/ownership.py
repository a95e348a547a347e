"""askvault's ownership marker in the answer notes it writes (issue 15, 16e); pure text.

Which notes under `queries/answers/` are askvault's own is recorded in the index
(`answers` table: the sha256 of the bytes written). An index that is deleted and
rebuilt (doctor recommends it for a corrupt one) loses that record, so every note
also carries its proof in its frontmatter:

    askvault: "v1:<sha256>"

the sha256 of the note's body and of its frontmatter's values (parsed, without the
marker: Obsidian rewrites the YAML of a note whose properties are edited, quoting and
ordering it its own way, and that changes no value), bound to the question's file name
(the answer's stem without a ` (N)` suffix, or with it). A note whose marker matches
its current text is one askvault wrote and nobody changed since; an edit of the body
or of a property's value, a marker copied into another note or another name, or a
made-up value does not match, and such a note stays the user's. The marker is not a
secret: a user who recomputes it on purpose makes the note askvault's again.

`refresh: true` is the one property a user may add to an answer that stays askvault's
(`owned_note(..., ignore=("refresh",))`): it asks the question again (issue 14 item 5).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

MARKER_KEY = "askvault"
MARKER_VERSION = "v1"
_MARKER_LINE = re.compile(r'^askvault: "?(v1:[0-9a-f]{64})"?[ \t]*\r?\n', re.MULTILINE)
_ANY_MARKER_LINE = re.compile(r"^askvault:.*\r?\n", re.MULTILINE)
_COPY_SUFFIX = re.compile(r"^(.*) \((\d+)\)$")
_STATUS = re.compile(r"^status: *([a-z-]+)[ \t]*\r?$", re.MULTILINE)
_REPORT = re.compile(
    r"^## Citation report[ \t]*\n(.*?)(?=^## |^> \[!info\]- |\Z)", re.MULTILINE | re.DOTALL
)
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
    (replacing any earlier marker). A text without (valid) frontmatter is returned
    unchanged."""
    head, body = _split(text)
    if head is None:
        return text
    head = _ANY_MARKER_LINE.sub("", head)
    canonical = _canonical(head, body, ())
    if canonical is None:
        return text
    digest = _digest(question_stem, canonical)
    return f'{head}{MARKER_KEY}: "{MARKER_VERSION}:{digest}"\n{body}'


def owned_note(text: str, answer_stem: str, *, ignore: Iterable[str] = ()) -> OwnedNote | None:
    """The note's own account if its marker matches its text, for the question named like
    the answer (`Q` for `Q.md` or `Q (2).md`, or a question itself named `Q (2)`).
    Properties named in `ignore` are left out of the comparison (a user's `refresh:`)."""
    head, body = _split(text)
    if head is None:
        return None
    found = _MARKER_LINE.search(head)
    if found is None:
        return None
    canonical = _canonical(head, body, tuple(ignore))
    if canonical is None:
        return None
    for stem in question_stems(answer_stem):
        if f"{MARKER_VERSION}:{_digest(stem, canonical)}" == found.group(1):
            status = _STATUS.search(head)
            return OwnedNote(stem, status.group(1) if status else "", cited_paths_of(body))
    return None


def properties_of(text: str) -> dict[str, Any]:
    """The note's frontmatter values ({} if it has none or they cannot be read)."""
    head, _ = _split(text)
    values = _load(head) if head is not None else None
    return values if isinstance(values, dict) else {}


def without_property(text: str, key: str) -> str:
    """`text` with the frontmatter line(s) of a top-level scalar `key:` removed."""
    head, body = _split(text)
    if head is None:
        return text
    return re.sub(rf"^{re.escape(key)}:[^\n]*\n", "", head, flags=re.MULTILINE) + body


def question_stems(answer_stem: str) -> list[str]:
    """The question names an answer note of this stem may belong to."""
    match = _COPY_SUFFIX.match(answer_stem)
    return [answer_stem, match.group(1)] if match else [answer_stem]


def cited_paths_of(body: str) -> tuple[str, ...]:
    """The vault paths the citation report shows as resolved and published, in order."""
    report = _REPORT.search(body)
    if report is None:
        return ()
    paths = [
        m.group(1) for m in _RESOLVED.finditer(report.group(1)) if PLAIN_TEXT_NOTE not in m.group(2)
    ]
    return tuple(dict.fromkeys(paths))


def _split(text: str) -> tuple[str | None, str]:
    """(the frontmatter from its opening `---` line up to, not including, its closing one;
    the rest) or (None, text)."""
    if not text.startswith("---\n"):
        return None, text
    end = text.find("\n---\n", 3)
    if end < 0:
        return None, text
    return text[: end + 1], text[end + 1 :]


def _digest(question_stem: str, canonical: str) -> str:
    data = f"askvault answer note\n{question_stem}\n{canonical}".encode()
    return hashlib.sha256(data).hexdigest()


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases (no expansion bomb in a hostile note)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            raise yaml.YAMLError("aliases are not read")
        return super().compose_node(parent, index)


_UNREADABLE = object()


def _load(head: str) -> Any:
    """The frontmatter's values ({} if empty), or _UNREADABLE."""
    try:
        values = yaml.load(head[4:], Loader=_NoAliasLoader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, ValueError, RecursionError):
        return _UNREADABLE
    return {} if values is None else values


def _canonical(head: str, body: str, ignore: tuple[str, ...]) -> str | None:
    """The frontmatter's values (without the marker and `ignore`) as sorted JSON, then the
    body: what a note says, whatever YAML style wrote its properties."""
    values = _load(head)
    if not isinstance(values, dict):
        return None
    kept = {str(k): v for k, v in values.items() if k != MARKER_KEY and k not in ignore}
    props = json.dumps(kept, sort_keys=True, ensure_ascii=False, default=_plain)
    return props + "\n---\n" + body


def _plain(value: Any) -> str:
    iso = getattr(value, "isoformat", None)
    return iso() if callable(iso) else str(value)
