"""`askvault doctor`: every hint is a command that fixes what its check found.

Each case breaks one thing, asks doctor, runs the commands its failing check's hint names
(`askvault ...` through the real CLI; `ollama serve` and `ollama pull` as the fake Ollama
doing them; `rm -r` as it is written), and asks again: nothing fails any more. Before
issue 25 item 10, `askvault index` did nothing for a model whose vectors changed length,
and the hint for a model reporting one length and returning another named it too.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from askvault.adapters.db import connect
from askvault.app.clients import OllamaClients
from askvault.cli.main import cli
from askvault.services.admin.doctor import Check, run_checks
from askvault.services.index.index_pass import index_vault
from askvault.settings import Settings
from support.fake_ollama import FAKE_EMBED_MODEL, FakeOllama, full_name
from support.settings_factory import cli_env, settings_for
from support.vault_factory import make_fixture_vault

EMBED = FAKE_EMBED_MODEL
CHAT = "llama3.2"


class Machine:
    """A vault, its index and the fake Ollama: what a doctor hint may act on."""

    def __init__(self, tmp_path: Path, fake: FakeOllama) -> None:
        self.vault = make_fixture_vault(tmp_path / "vault")
        self.fake = fake
        self.env = cli_env(self.vault, tmp_path / "state", fake.url)
        self.settings: Settings = settings_for(self.vault, tmp_path / "state", fake.url)

    def askvault(self, *args: str) -> int:
        return CliRunner().invoke(cli, list(args), env=self.env, catch_exceptions=False).exit_code

    def failed(self) -> list[Check]:
        return [c for c in run_checks(self.settings, OllamaClients(self.settings)) if not c.ok]

    def run(self, command: str) -> None:
        """Do what a hint's command does (the machine's own commands, for real)."""
        words = shlex.split(command)
        if words[0] == "askvault":
            assert self.askvault(*words[1:]) == 0, command
        elif words[:2] == ["ollama", "serve"]:
            self.fake.recover()
        elif words[:2] == ["ollama", "pull"]:
            self.fake.models.append(full_name(words[2]))
        elif words[:2] == ["rm", "-r"]:
            shutil.rmtree(words[2])
        else:
            raise AssertionError(f"a hint names a command no one can run: {command}")


def _no_index(m: Machine) -> None:
    pass


def _vectors_changed_length(m: Machine) -> None:
    m.fake.dimensions[EMBED] = 32  # a re-pull under the same digest, another output length


def _vectors_disagree_with_the_report(m: Machine) -> None:
    m.fake.dimensions[EMBED] = 32  # the vectors change, what Ollama reports does not
    m.fake.reported_dimensions[EMBED] = 64


def _model_re_pulled(m: Machine) -> None:
    m.fake.digests[full_name(EMBED)] = "sha256:" + "e" * 64


def _indexed_while_ollama_was_down(m: Machine) -> None:
    shutil.rmtree(m.settings.state_path)
    m.fake.set_fault("down")
    assert m.askvault("index") == 0  # words only
    m.fake.recover()


def _a_note_indexed_while_ollama_was_down(m: Machine) -> None:
    m.fake.set_fault("down")
    (m.vault / "Late.md").write_text("# Late\n\nWritten while Ollama was away.\n")
    assert m.askvault("index") == 0
    m.fake.recover()


def _word_rows_lost(m: Machine) -> None:
    conn = connect(m.settings.db_path)
    try:
        conn.execute("DELETE FROM chunks_fts WHERE rowid = (SELECT min(id) FROM chunks)")
    finally:
        conn.close()


def _index_file_damaged(m: Machine) -> None:
    with open(m.settings.db_path, "r+b") as fh:
        fh.write(b"this is not a database file at all")


def _ollama_down(m: Machine) -> None:
    m.fake.set_fault("down")


def _chat_model_not_pulled(m: Machine) -> None:
    m.fake.models.remove(full_name(CHAT))


def _vault_emptied(m: Machine) -> None:
    for note in list(m.vault.rglob("*.md")):
        note.unlink()
    assert m.askvault("index") == 1  # refused: an unmounted drive looks the same


def _commands(hint: str) -> list[str]:
    """The commands of a hint in order, up to an alternative (`a`, or `b`: only `a`)."""
    out: list[str] = []
    end = 0
    for found in re.finditer(r"`([^`]+)`", hint):
        if out and re.search(r"\bor\b", hint[end : found.start()]):
            break
        out.append(found.group(1))
        end = found.end()
    return out


CASES: dict[str, tuple[Callable[[Machine], None], str]] = {
    "no index": (_no_index, "index"),
    "vectors changed length": (_vectors_changed_length, "embedding dimension"),
    "vectors disagree with what Ollama reports": (
        _vectors_disagree_with_the_report,
        "embedding dimension",
    ),
    "model re-pulled": (_model_re_pulled, "embedding model"),
    "indexed while Ollama was down": (_indexed_while_ollama_was_down, "vectors"),
    "a note indexed while Ollama was down": (
        _a_note_indexed_while_ollama_was_down,
        "vectors match chunks",
    ),
    "word rows lost": (_word_rows_lost, "fts rows match chunks"),
    "index file damaged": (_index_file_damaged, "sqlite-vec / database"),
    "Ollama down": (_ollama_down, "ollama reachable"),
    "chat model not pulled": (_chat_model_not_pulled, "chat model"),
    "vault emptied": (_vault_emptied, "vault present"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_doctor_hint_is_a_command_that_fixes_its_check(
    tmp_path: Path, fake_ollama: FakeOllama, case: str
) -> None:
    breaks, check = CASES[case]
    machine = Machine(tmp_path, fake_ollama)
    if case != "no index":
        assert machine.askvault("index") == 0 and machine.failed() == []
    breaks(machine)
    failed = {c.name: c for c in machine.failed()}
    assert check in failed, list(failed)
    commands = _commands(failed[check].hint)
    assert commands, f"the hint names no command: {failed[check].hint}"
    for command in commands:
        machine.run(command)
    assert machine.failed() == [], f"after {commands}"


def test_doctor_names_the_distance_cut_off_in_force(
    tmp_path: Path, fake_ollama: FakeOllama
) -> None:
    machine = Machine(tmp_path, fake_ollama)
    assert machine.askvault("index") == 0

    def cut_off(settings: Settings) -> Check:
        checks = run_checks(settings, OllamaClients(settings))
        return next(c for c in checks if c.name == "distance cut-off")

    none = cut_off(machine.settings)  # never measured, too few notes to calibrate: no gate
    assert none.ok and none.detail.startswith("none: ") and "are needed" in none.detail
    nomic = settings_for(
        machine.vault,
        tmp_path / "state",
        fake_ollama.url,
        **{"ollama.embed_model": "nomic-embed-text:latest"},
    )
    assert cut_off(nomic).detail.startswith("none: ")  # the suite model's vectors still serve
    index_vault(nomic, OllamaClients(nomic))
    assert cut_off(nomic) == Check("distance cut-off", True, "0.31 (measured for nomic-embed-text)")
