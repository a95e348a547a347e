"""The files of the inbox protocol: askvault's own answer notes, the archive, the log.

`AnswerFiles` owns every write the question inbox makes under `queries/` (DESIGN §2), and
`askvault ask --save`'s:
answer notes are rewritten only while their bytes are still askvault's (sha256 in the
`answers` table, re-checked right before the rename), new ones never overwrite (`(2)`),
the archive move is idempotent and reports why it cannot happen, the log is appended
only to a regular file of its own, and the empty names reserved where hard links are
refused are recorded so that a start-up removes only those.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import stat
import time
from dataclasses import replace
from pathlib import Path

from askvault.adapters import answer_store, meta
from askvault.adapters.answer_store import AnswerRow
from askvault.adapters.db import Connection, write_transaction
from askvault.adapters.vault import (
    append_line,
    cleanup_temp_files,
    move_to_free_name,
    resolve_inside,
    write_atomic,
    write_new_file,
)
from askvault.core.answer_note import answer_status
from askvault.core.links import strip_md_suffix
from askvault.core.notices import (
    WRITE_PROBLEM_STEM,
    render_write_problem,
    what_it_says,
    with_archive_warning,
    without_archive_warning,
)
from askvault.core.ownership import owned_note, question_stems, sign_note
from askvault.core.timestamps import local_iso
from askvault.errors import AskvaultError, StoreError, VaultError, VaultUnavailable
from askvault.records import AnswerStatus
from askvault.services.inbox.clock import SYSTEM_CLOCK, Clock
from askvault.services.inbox.question_options import question_summary
from askvault.settings import Settings

log = logging.getLogger(__name__)

# The problem note is rewritten at most this often (and only when its reason changes).
PROBLEM_NOTE_MIN_INTERVAL_S = 60.0


class AnswerFiles:
    """askvault's files under `queries/` for one vault."""

    def __init__(self, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> None:
        self.settings = settings
        self.clock = clock
        self.root = settings.vault_path
        q = settings.queries
        self.inbox_rel = f"{q.folder}/{q.inbox}"
        self.answers_rel = f"{q.folder}/{q.answers}"
        self.archive_rel = f"{q.folder}/{q.archive}"
        self.log_rel = f"{q.folder}/{q.log}"
        self.problem_rel = f"{q.folder}/{WRITE_PROBLEM_STEM}.md"
        self._problem: tuple[str, str] | None = None  # (reason, since) shown in the note
        self._problem_shown_at = float("-inf")

    def remove_leftovers(self, conn: Connection) -> None:
        """At start-up: the temp files of writers that are gone, in every folder askvault
        writes into (a refresh writes into the inbox), and the empty names a crash left
        reserved."""
        for rel in (self.answers_rel, self.archive_rel, self.inbox_rel):
            with contextlib.suppress(AskvaultError, OSError):
                cleanup_temp_files(resolve_inside(self.root, rel))
        self.clean_placeholders(conn)

    def own_answer(self, conn: Connection, rel: str) -> str | None:
        """`rel` if that answer note still holds exactly the bytes askvault wrote, else None.

        With no row (an index deleted and rebuilt), the note's ownership marker decides:
        a note whose marker matches its text is recorded as ours again."""
        row = answer_store.get_answer(conn, rel)
        if row is None:
            return rel if self.adopt_own_note(conn, rel) is not None else None
        try:
            data = resolve_inside(self.root, rel).read_bytes()
        except (OSError, AskvaultError):
            return None
        return rel if row.holds(data) else None

    def queries_folder_for(self, rel: str) -> Path:
        """The folder `rel` under `queries/`, created if missing; VaultUnavailable (nothing
        created) when the vault root or its `queries/` folder is gone: a vault moved away or
        unmounted mid-answer must not get a fresh skeleton at its old place (a missing
        `queries/` is created only in a root that holds something: a first answer)."""
        queries = resolve_inside(self.root, self.settings.queries.folder)
        if not queries.is_dir() and not _holds_anything(self.root):
            raise VaultUnavailable(
                f"the vault's {self.settings.queries.folder}/ folder is gone from {self.root} "
                "(the vault moved away or unmounted?)",
                "put the vault back; askvault finishes its notes then",
            )
        folder = resolve_inside(self.root, rel)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except FileExistsError as exc:
            raise VaultError(
                f"{rel} is not a folder (a file has its name)",
                f"rename or remove that file so askvault can use {rel}/",
            ) from exc
        return folder

    def adopt_own_note(self, conn: Connection, rel: str) -> AnswerRow | None:
        """Record `rel` as askvault's own again if its ownership marker matches its text
        (core/ownership.py); None (nothing recorded) for any other note."""
        if not rel.startswith(self.answers_rel + "/") or not rel.lower().endswith(".md"):
            return None
        try:
            path = resolve_inside(self.root, rel)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.settings.index.max_note_bytes:
                return None
            data = path.read_bytes()
            owned = owned_note(data.decode("utf-8"), stem_of(rel))
        except (OSError, UnicodeDecodeError, AskvaultError):
            return None
        status = answer_status(owned.status) if owned else None
        if owned is None or status is None:
            return None  # not askvault's, or a status askvault does not write
        question = (
            f"{self.settings.queries.folder}/{self.settings.queries.inbox}/{owned.question_stem}.md"
        )
        row = AnswerRow(rel, question, status, hashlib.sha256(data).hexdigest(), owned.cited)
        with write_transaction(conn):
            if answer_store.get_answer(conn, rel) is not None:
                return None  # recorded meanwhile (not by this thread: nothing to adopt)
            answer_store.put_answer(conn, row)
        log.info("%s is askvault's own (its marker matches): recorded again", rel)
        return row

    def adopt_own_notes(self, conn: Connection) -> list[AnswerRow]:
        """Every answer note with no row whose marker proves it ours, recorded again (the
        start-up after an index was deleted and rebuilt)."""
        try:
            folder = resolve_inside(self.root, self.answers_rel)
            names = sorted(
                e.name
                for e in os.scandir(folder)
                if e.name.lower().endswith(".md") and not e.name.startswith(".")
            )
        except (OSError, AskvaultError):
            return []
        adopted = []
        for name in names:
            rel = f"{self.answers_rel}/{name}"
            if answer_store.get_answer(conn, rel) is None:
                row = self.adopt_own_note(conn, rel)
                if row is not None:
                    adopted.append(row)
        if adopted:
            log.info("%d answer note(s) recognised as askvault's own by their marker", len(adopted))
        return adopted

    def signed(self, text: str, rel: str, old_text: str) -> bytes:
        """`text`, a new version of our own note `rel` (whose text was `old_text`), with
        its ownership marker, encoded."""
        owned = owned_note(old_text, stem_of(rel))
        stem = owned.question_stem if owned else question_stems(stem_of(rel))[-1]
        return sign_note(text, stem).encode("utf-8")

    def rewrite_own(self, conn: Connection, path: Path, data: bytes, row: AnswerRow) -> bool:
        """Replace our own note's bytes: the new hash is recorded beside the old one before
        the rename and alone after it, so a crash anywhere leaves a note we still know.

        The note is read again right before the rename: if a user's save landed since it
        was checked, nothing is replaced, the old row is put back and False is returned.
        """
        old = answer_store.get_answer(conn, row.path)
        with write_transaction(conn):
            answer_store.put_answer(
                conn, replace(row, previous_sha256=old.written_sha256 if old else "")
            )
        still_ours = old.holds if old is not None else (lambda _data: False)
        if not write_atomic(path, data, still_ours=still_ours):
            with write_transaction(conn):
                if old is not None:
                    answer_store.put_answer(conn, old)
            log.warning(
                "%s changed while askvault was rewriting it; the user's bytes are kept", row.path
            )
            return False
        with write_transaction(conn):
            answer_store.put_answer(conn, replace(row, previous_sha256=""))
        return True

    def write_answer(
        self,
        conn: Connection,
        own_path: str | None,
        text: str,
        question_rel: str,
        status: AnswerStatus,
        cited: tuple[str, ...],
        stem: str,
    ) -> str:
        """Rewrite our own note `own_path`, or write a new `<stem>.md` / `<stem> (2).md`.

        Our own note is left alone when it already says the same (`what_it_says`), so a
        question retried while Ollama is down does not rewrite its waiting note each time.
        While no answer note can be written the problem note says so in the vault.
        """
        try:
            rel = self._write_answer(conn, own_path, text, question_rel, status, cited, stem)
        except (VaultUnavailable, StoreError):
            raise  # the vault gone, the index busy or full: not the answers folder's fault
        except (OSError, AskvaultError) as exc:
            self.show_write_problem(exc)
            raise
        self.clear_write_problem()
        return rel

    def show_write_problem(self, exc: BaseException, now: float | None = None) -> None:
        """Keep `queries/Answers cannot be written.md` saying why (issue 15, 16b): written
        when the reason first appears or changes, at most once a minute, never over a note
        that is not askvault's own; the user's question notes are never touched."""
        reason = (
            exc.message
            if isinstance(exc, AskvaultError)
            else (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
        )
        now = self.clock.monotonic() if now is None else now
        if self._problem is not None and self._problem[0] == reason:
            return
        if now - self._problem_shown_at < PROBLEM_NOTE_MIN_INTERVAL_S:
            return
        since = self._problem[1] if self._problem else local_iso(self.clock.time())
        log.warning("answer notes cannot be written to %s: %s", self.answers_rel, reason)
        text = sign_note(render_write_problem(self.answers_rel, reason, since), WRITE_PROBLEM_STEM)
        try:
            if not self._replace_problem_note(text.encode("utf-8")):
                return
        except (OSError, AskvaultError) as note_exc:
            log.warning("could not write %s either: %s", self.problem_rel, note_exc)
            return
        self._problem, self._problem_shown_at = (reason, since), now

    def clear_write_problem(self, *, at_start: bool = False) -> None:
        """Remove the problem note (if it is still askvault's own) once an answer note was
        written again, or at start-up (a problem that remains shows it again)."""
        if self._problem is None and not at_start:
            return
        self._problem, self._problem_shown_at = None, float("-inf")
        with contextlib.suppress(OSError, AskvaultError):
            path = resolve_inside(self.root, self.problem_rel)
            if self._is_own_problem_note(path):
                path.unlink()
                log.info("answer notes can be written again; removed %s", self.problem_rel)

    def _is_own_problem_note(self, path: Path) -> bool:
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > 65536:
                return False
            return owned_note(path.read_bytes().decode("utf-8"), WRITE_PROBLEM_STEM) is not None
        except (OSError, UnicodeDecodeError):
            return False

    def _replace_problem_note(self, data: bytes) -> bool:
        """Write the problem note: a new file, or over our own; False if a user's note has
        that name (it is left alone)."""
        path = resolve_inside(self.root, self.problem_rel)
        if not os.path.lexists(path):
            self.queries_folder_for(self.settings.queries.folder)
            with contextlib.suppress(FileExistsError):
                written = write_new_file(path, data)
                if written == path:
                    return True
                written.unlink()  # a user's note took the name meanwhile: not ours to add
                return False
        if not self._is_own_problem_note(path):
            log.warning("%s is not askvault's note; not written", self.problem_rel)
            return False
        return write_atomic(
            path,
            data,
            still_ours=lambda old: (
                owned_note(old.decode("utf-8", "replace"), WRITE_PROBLEM_STEM) is not None
            ),
        )

    def _write_answer(
        self,
        conn: Connection,
        own_path: str | None,
        text: str,
        question_rel: str,
        status: AnswerStatus,
        cited: tuple[str, ...],
        stem: str,
    ) -> str:
        text = sign_note(text, stem)
        data = text.encode("utf-8")
        folder = self.queries_folder_for(self.answers_rel)
        digest = hashlib.sha256(data).hexdigest()
        if own_path is not None:
            path = resolve_inside(self.root, own_path)
            with contextlib.suppress(OSError, UnicodeDecodeError):
                current = answer_store.get_answer(conn, own_path)
                if (
                    current is not None
                    and current.status == status
                    and what_it_says(path.read_bytes().decode("utf-8")) == what_it_says(text)
                ):
                    return own_path
            if self.rewrite_own(
                conn, path, data, AnswerRow(own_path, question_rel, status, digest, cited)
            ):
                return own_path
        claimed: list[str] = []

        def claim(candidate: Path) -> None:
            # Recorded before the file exists: after a crash right behind the link, the
            # restart finds this row and rewrites the note instead of adding `(2)`; where
            # hard links are refused, the empty name reserved for it is known as ours.
            with write_transaction(conn):
                for previous in claimed:
                    answer_store.delete_answer(conn, previous)
                claimed[:] = [f"{self.answers_rel}/{candidate.name}"]
                answer_store.put_answer(
                    conn, AnswerRow(claimed[0], question_rel, status, digest, cited)
                )
                answer_store.record_placeholder(conn, claimed[0])

        try:
            written = write_new_file(folder / f"{stem}.md", data, claim=claim)
        finally:
            if claimed:
                with write_transaction(conn):
                    answer_store.forget_placeholders(conn, claimed)
        rel = f"{self.answers_rel}/{written.name}"
        with write_transaction(conn):
            answer_store.put_answer(conn, AnswerRow(rel, question_rel, status, digest, cited))
        return rel

    def archive_question(
        self, conn: Connection, rel: str, abs_path: Path
    ) -> tuple[str | None, str | None]:
        """Move the question, byte for byte, to the archive (never over another file).

        Returns (the archived path, None), (None, None) if the question is gone, or
        (None, why it cannot be archived). Calling it again after an interrupted move
        finishes that move (the archive already holds the inbox file's inode).
        """
        claimed: list[str] = []

        def claim(candidate: Path) -> None:
            name = f"{self.archive_rel}/{candidate.name}"
            with write_transaction(conn):
                answer_store.record_placeholder(conn, name)
            claimed.append(name)

        try:
            folder = self.queries_folder_for(self.archive_rel)
            if not folder.is_dir():
                return None, f"{self.archive_rel} is not a folder"
            moved = move_to_free_name(abs_path, folder / f"{stem_of(rel)}.md", claim=claim)
        except FileExistsError:
            return None, f"{self.archive_rel} is not a folder"
        except OSError as exc:
            where = exc.filename if isinstance(exc.filename, str) else self.archive_rel
            return None, f"{exc.strerror or exc} ({_vault_relative(self.root, where)})"
        except AskvaultError as exc:
            return None, exc.message
        finally:
            if claimed:
                with write_transaction(conn):
                    answer_store.forget_placeholders(conn, claimed)
        return (None, None) if moved is None else (f"{self.archive_rel}/{moved.name}", None)

    def append_log(self, question: str, answer_rel: str | None = None) -> bool:
        """`## [YYYY-MM-DD] query | <summary>` appended to the log note (the summary a
        link to `answer_rel` if given); failure only warns."""
        try:
            return self.append_log_line(log_line_for(question, answer_rel))
        except OSError as exc:
            log.warning("could not append to %s: %s", self.log_rel, exc)
            return False

    def append_log_line(self, line: str, *, unless_last: bool = False) -> bool:
        """Append `line` to the log note. A log that is not askvault's to append to (a
        symlink, not a regular file, outside the vault) is skipped with a warning (False);
        an OSError (disk full, vault gone) is raised so the caller can retry."""
        try:
            return append_line(self.root, self.log_rel, line, unless_last=unless_last)
        except AskvaultError as exc:
            log.warning("not appending to %s: %s", self.log_rel, exc)
            return False

    def clean_placeholders(self, conn: Connection) -> int:
        """Remove the empty files askvault reserved (and recorded) that a crash left behind."""
        paths = answer_store.placeholders(conn)
        removed = 0
        for rel in paths:
            with contextlib.suppress(OSError, AskvaultError):
                path = resolve_inside(self.root, rel)
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and st.st_size == 0:
                    path.unlink()
                    removed += 1
                    log.info("removed %s, an empty placeholder left by a crash", rel)
        if paths:
            with write_transaction(conn):
                answer_store.forget_placeholders(conn, paths)
        return removed

    def show_archive_problem(self, conn: Connection, answer_path: str, reason: str | None) -> None:
        """Add (`reason`) or drop (None) the archive warning in our own answer note."""
        own = self.own_answer(conn, answer_path)
        row = answer_store.get_answer(conn, own) if own else None
        if own is None or row is None:
            return  # edited by the user, moved or deleted: the log says why
        try:
            path = resolve_inside(self.root, own)
            text = path.read_bytes().decode("utf-8")
            new = with_archive_warning(text, reason) if reason else without_archive_warning(text)
            if new != text:
                data = self.signed(new, own, text)
                self.rewrite_own(
                    conn,
                    path,
                    data,
                    replace(
                        row, written_sha256=hashlib.sha256(data).hexdigest(), previous_sha256=""
                    ),
                )
        except (OSError, UnicodeDecodeError, AskvaultError) as exc:
            log.warning("could not update %s about its question's archive: %s", own, exc)

    def list_edited_stale(self, conn: Connection, rel: str) -> None:
        """List `rel` in `status` as a stale answer the user edited (so not marked)."""
        with write_transaction(conn):
            listed = meta.stale_answers_edited(conn)
            if rel not in listed:
                listed.append(rel)
            meta.set_stale_answers_edited(conn, listed)


# Characters that end or break a wikilink's target or label.
_LINK_BREAKERS = re.compile(r"[\[\]|#^]")


def log_line_for(question: str, answer_rel: str | None = None, now: float | None = None) -> str:
    """The line `queries/log.md` gets for an answered question: `## [YYYY-MM-DD] query |
    <summary>`, the summary a link to its answer note when there is one (issue 14 item 4):
    `## [2026-12-01] query | [[queries/answers/How do embeds work|How do embeds work?]]`.

    A note name that cannot be a link target (`[`, `]`, `|`, `#`, `^`) keeps the summary
    as plain text; brackets and bars in the summary become parentheses and slashes. The
    day is today's, or that of `now` (seconds since the epoch)."""
    summary = question_summary(question)
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    target = strip_md_suffix(answer_rel) if answer_rel else answer_rel
    if not target or _LINK_BREAKERS.search(target):
        return f"## [{day}] query | {summary}\n"
    label = summary.replace("|", "/").replace("[", "(").replace("]", ")") or stem_of(target)
    return f"## [{day}] query | [[{target}|{label}]]\n"


def _vault_relative(root: Path, where: str) -> str:
    with contextlib.suppress(ValueError):
        return Path(where).relative_to(os.path.realpath(root)).as_posix()
    return where


def _holds_anything(root: Path) -> bool:
    """Is `root` a folder with at least one entry (not a vanished or empty mount point)?"""
    try:
        with os.scandir(root) as entries:
            return next(iter(entries), None) is not None
    except OSError:
        return False


def stem_of(rel: str) -> str:
    """The file name of `rel` without its `.md`."""
    return strip_md_suffix(rel.rsplit("/", 1)[-1])
