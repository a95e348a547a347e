"""Every command line the user docs show works as written: each `askvault ...` in README.md
and docs/how-to (fenced shell blocks, inline code, the agents' JSON snippets, the part after
`--` of `claude mcp add`) is parsed by the CLI's own click parser, so an option renamed or
removed fails here; every other program a shell block runs is one a user has (or the page
says how to get)."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from askvault.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs" / "how-to").glob("*.md"))]
SHELL_LANGS = ("sh", "bash", "shell", "console")
FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# What a shell block may run besides askvault: each is on a stock system or installed by a
# step the same page (or install-ollama.md) gives.
OTHER_PROGRAMS = {
    "python3", "pip", "git", "cd", "mkdir", "rm", "echo", "sudo", "tee", "sysctl", "curl",
    "sh", "ollama", "systemctl", "journalctl", "loginctl", "launchctl", "claude", "ssh",
    "pytest", "brew", "command", "source", ".", "ln", "apt", "export",
}  # fmt: skip


@dataclass(frozen=True)
class CommandLine:
    """One command line of a page: where it is and its words (already split)."""

    page: str
    line: int
    words: tuple[str, ...]
    # Inline code in prose may name a command without its arguments ("the document of
    # `askvault search --json`"): its command and options must exist all the same.
    names_only: bool = False

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {shlex.join(self.words)}"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _simple_commands(source: str) -> list[list[str]]:
    """A shell line split into its simple commands (at `&&`, `||`, `|`, `;`), comments off."""
    lexer = shlex.shlex(source, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token and set(token) <= set("&|;()"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def shell_lines(page: str, text: str) -> list[CommandLine]:
    """The simple commands of a page's fenced shell blocks (continuation lines joined)."""
    found: list[CommandLine] = []
    for block in FENCE.finditer(text):
        if block.group(2) not in SHELL_LANGS:
            continue
        first = _line_of(text, block.start(3))
        pending, start = "", first
        for number, raw in enumerate(block.group(3).splitlines(), start=first):
            if not pending:
                start = number
            if raw.endswith("\\"):
                pending += raw[:-1] + " "
                continue
            line, pending = (pending + raw).strip(), ""
            line = line.removeprefix("$ ")
            if line and not line.startswith("#"):
                for words in _simple_commands(line):
                    found.append(CommandLine(page, start, tuple(words)))
    return found


def inline_askvault(page: str, text: str) -> list[CommandLine]:
    """Inline code spans that are an askvault command line (`askvault index --vault PATH`)."""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found = []
    for span in INLINE.finditer(prose):
        body = span.group(1).replace("\\|", "|")
        if re.match(r"^(\.venv/bin/)?askvault( |$)", body):
            for words in _simple_commands(body):
                where = _line_of(prose, span.start())
                found.append(CommandLine(page, where, tuple(words), names_only=True))
    return found


def json_snippets(page: str, text: str) -> list[CommandLine]:
    """The agents' MCP configs: every `{"command": ".../askvault", "args": [...]}`."""
    found = []
    for block in FENCE.finditer(text):
        if block.group(2) != "json":
            continue

        def visit(node: object, line: int) -> None:
            if isinstance(node, dict):
                command = node.get("command")
                if isinstance(command, str):
                    found.append(CommandLine(page, line, (command, *node.get("args", []))))
                for value in node.values():
                    visit(value, line)

        visit(json.loads(block.group(3)), _line_of(text, block.start(3)))
    return found


def every_command_line() -> list[CommandLine]:
    lines: list[CommandLine] = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        name = path.name
        lines += shell_lines(name, text) + inline_askvault(name, text) + json_snippets(name, text)
    return lines


def askvault_words(line: CommandLine) -> tuple[str, ...] | None:
    """The arguments of the askvault command a line runs, or None when it runs another."""
    words = list(line.words)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)  # VAR=value before the program
    if not words:
        return None
    if Path(words[0]).name == "askvault":
        return tuple(words[1:])
    if words[0] == "claude" and "--" in words:
        # `claude mcp add NAME -- askvault mcp ...`: the part after `--` is what runs.
        rest = words[words.index("--") + 1 :]
        if rest and Path(rest[0]).name == "askvault":
            return tuple(rest[1:])
    return None


def parse_askvault(args: tuple[str, ...], *, names_only: bool = False) -> None:
    """Parse askvault's arguments as the CLI does, without running anything.

    Raises click.UsageError (an unknown option or command, a missing or extra argument, a
    bad value) exactly where `askvault` would exit 2; with `names_only`, a missing
    positional argument is allowed.
    """
    command: click.Command = cli
    rest = list(args)
    # The contexts askvault makes: a subcommand inherits `-h` from the group's settings.
    parent = click.Context(cli, info_name="askvault", **cli.context_settings)
    while isinstance(command, click.Group):
        if not rest or rest[0] in ("--help", "-h", "--version"):
            return  # the group itself (`askvault service`, `askvault --version`)
        sub = command.commands.get(rest[0])
        if sub is None:
            raise click.UsageError(f"no such command {rest[0]!r} under {parent.info_name}")
        if isinstance(sub, click.Group):
            parent = click.Context(sub, info_name=rest[0], parent=parent)
        name, command, rest = rest[0], sub, rest[1:]
    try:
        command.make_context(name, rest, parent=parent)
    except click.exceptions.Exit:
        pass  # --help
    except click.MissingParameter as exc:
        if not (names_only and isinstance(exc.param, click.Argument)):
            raise


COMMAND_LINES = every_command_line()


def test_the_pages_show_command_lines_of_every_kind() -> None:
    askvault = [line for line in COMMAND_LINES if askvault_words(line) is not None]
    pages = {line.page for line in askvault}
    assert {"README.md", "run-as-a-service.md", "use-with-agents.md"} <= pages
    commands = {askvault_words(line)[:1] for line in askvault}  # type: ignore[index]
    for command in ("run", "ask", "search", "mcp", "service", "config-example", "doctor"):
        assert (command,) in commands, f"no page shows askvault {command}"
    # the JSON snippets and `claude mcp add ... --` are read too
    assert any(line.words[0].endswith("/askvault") for line in askvault)
    assert any(line.words[0] == "claude" for line in askvault)


@pytest.mark.parametrize("line", COMMAND_LINES, ids=str)
def test_every_command_line_of_the_docs_parses(line: CommandLine) -> None:
    args = askvault_words(line)
    if args is None:
        words = [w for w in line.words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
        program = (words[0] if words[0] == "." else Path(words[0]).name) if words else ""
        assert program in OTHER_PROGRAMS, f"{line}: runs {program!r}, which no page installs"
        return
    try:
        parse_askvault(args, names_only=line.names_only)
    except click.UsageError as exc:
        pytest.fail(f"{line}: askvault refuses it: {exc.format_message()}")


@pytest.mark.parametrize(
    "args",
    [
        ("serch", "embeds"),  # a misspelt command
        ("search", "embeds", "--vaults", "~/Notes"),  # an option that does not exist
        ("search",),  # the query is missing
        ("service", "instal"),
        ("context", "x", "--budget", "many"),  # not a number
        ("status", "extra"),  # an argument it does not take
    ],
)
def test_a_wrong_command_line_is_refused(args: tuple[str, ...]) -> None:
    with pytest.raises(click.UsageError):
        parse_askvault(args)


def test_inline_code_may_leave_out_arguments_but_not_invent_options() -> None:
    parse_askvault(("search", "--json"), names_only=True)
    with pytest.raises(click.UsageError):
        parse_askvault(("search", "--jsn"), names_only=True)
    with pytest.raises(click.UsageError):
        parse_askvault(("search", "--json"))


def test_the_extractors_find_each_kind_of_line() -> None:
    text = (
        "Run `askvault status --vault ~/Notes` or `askvault: no index` (a message).\n"
        "```sh\n"
        "mkdir -p x && askvault index \\\n"
        "  --vault ~/Notes   # a comment\n"
        "$ ollama pull llama3.2\n"
        "```\n"
        '```json\n{"a": {"command": "askvault", "args": ["mcp"]}}\n```\n'
        "```sh\nclaude mcp add askvault -- askvault mcp --vault ~/N\n```\n"
    )
    shell = [line.words for line in shell_lines("p", text)]
    assert shell == [
        ("mkdir", "-p", "x"),
        ("askvault", "index", "--vault", "~/Notes"),
        ("ollama", "pull", "llama3.2"),
        ("claude", "mcp", "add", "askvault", "--", "askvault", "mcp", "--vault", "~/N"),
    ]
    assert [line.words for line in inline_askvault("p", text)] == [
        ("askvault", "status", "--vault", "~/Notes")
    ]
    assert [line.words for line in json_snippets("p", text)] == [("askvault", "mcp")]
    assert askvault_words(CommandLine("p", 1, shell[-1])) == ("mcp", "--vault", "~/N")
    assert askvault_words(CommandLine("p", 1, ("X=1", ".venv/bin/askvault", "run"))) == ("run",)


def test_every_pip_is_a_virtual_environments_and_nothing_assumes_a_package_index() -> None:
    """Debian 12 and Ubuntu 23.04+ refuse `pip install --user` and a system pip (PEP 668),
    pipx is not on a stock machine, and askvault is installed from its clone, not from a
    package index: every pip a page runs is a virtual environment's, installing `.`."""
    pips = [line for line in COMMAND_LINES if Path(line.words[0]).name in ("pip", "pip3")]
    assert pips, "no page shows how to install askvault"
    for line in pips:
        assert "/bin/" in line.words[0], f"{line}: not a virtual environment's pip"
        assert "--user" not in line.words, f"{line}: PEP 668 refuses --user"
        if line.words[1] == "install":
            assert "askvault" not in line.words, f"{line}: askvault is not on a package index"
    for path in PAGES:  # the comments of shell blocks too ("# or: pip install --user .")
        text = path.read_text(encoding="utf-8")
        blocks = "".join(m.group(3) for m in FENCE.finditer(text) if m.group(2) in SHELL_LANGS)
        for refused in ("pip install --user", "pipx ", "pip install -U askvault"):
            assert refused not in blocks, f"{path.name} still runs {refused!r}"
        assert "pipx" not in text, f"{path.name} names pipx, which a stock machine lacks"
