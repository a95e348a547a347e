"""Generate docs/reference/*.md from the code: CLI help, Settings, the JSON documents and
the schema.

    .venv/bin/python docs/gen_reference.py          # rewrite the files
    .venv/bin/python docs/gen_reference.py --check  # exit 1 if any file drifted

tests/repo/test_docs_reference.py runs the check, so the reference never drifts.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import click

from askvault.adapters.db import connect
from askvault.adapters.migrations import MIGRATIONS
from askvault.app.mcp_tools import AskInput, ContextInput, ReadNoteInput, SearchInput
from askvault.cli.main import cli
from askvault.core.schema import input_schema, output_schema
from askvault.services.documents.answer import AnswerDocument
from askvault.services.documents.context import ContextDocument
from askvault.services.documents.note import NoteDocument
from askvault.services.documents.search import SearchDocument
from askvault.services.documents.status import StatusDocument
from askvault.settings import (
    ENV_ALIASES,
    SECTIONS,
    Settings,
    section_type,
    setting_choices,
    setting_kind,
)

REFERENCE = Path(__file__).resolve().parent / "reference"


def cli_reference() -> str:
    lines = [
        "# Command-line reference",
        "",
        "Generated from `--help` by `docs/gen_reference.py`; do not edit by hand.",
        "",
    ]
    ctx = click.Context(
        cli,
        info_name="askvault",
        terminal_width=100,
        max_content_width=100,
        help_option_names=["-h", "--help"],
    )
    lines += ["## askvault", "", "```", cli.get_help(ctx), "```", ""]
    lines += _command_sections(cli, ctx, "askvault")
    return "\n".join(lines)


def _command_sections(group: click.Group, parent: click.Context, path: str) -> list[str]:
    """A section per command, sub-commands of a group after it; each usage line reads as
    typed (`askvault service install`): the context's name is the command's own, the
    parent contexts supply the rest."""
    lines: list[str] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        sub = click.Context(
            command,
            info_name=name,
            parent=parent,
            terminal_width=100,
            max_content_width=100,
            help_option_names=["-h", "--help"],
        )
        lines += [f"## {path} {name}", "", "```", command.get_help(sub), "```", ""]
        if isinstance(command, click.Group):
            lines += _command_sections(command, sub, f"{path} {name}")
    return lines


def config_reference() -> str:
    aliases = {v: k for k, v in ENV_ALIASES.items()}
    lines = [
        "# Configuration reference",
        "",
        "Generated from `daemon/askvault/settings.py` by `docs/gen_reference.py`.",
        "Order: defaults -> TOML file (`--config`, `ASKVAULT_CONFIG`, or "
        "`$XDG_CONFIG_HOME/askvault/config.toml`) -> environment -> flags.",
        "",
        "| key | type | default | environment | meaning |",
        "|---|---|---|---|---|",
    ]

    def row(key: str, cls: type, f: object) -> str:
        default = f.default_factory() if f.default is MISSING else f.default  # type: ignore[attr-defined]
        env = aliases.get(key) or "ASKVAULT_" + key.upper().replace(".", "__")
        name = f.name  # type: ignore[attr-defined]
        choices = setting_choices(cls, name)
        kind = " \\| ".join(f"`{c}`" for c in choices) if choices else setting_kind(cls, name)
        return (
            f"| `{key}` | {kind} | `{default!r}` | `{env}` | "
            + f.metadata["help"].replace("|", "\\|")  # type: ignore[attr-defined]
            + " |"
        )

    for f in fields(Settings):
        if f.name not in SECTIONS:
            lines.append(row(f.name, Settings, f))
    for section in SECTIONS:
        cls = section_type(section)
        for f in fields(cls):
            lines.append(row(f"{section}.{f.name}", cls, f))
    return "\n".join(lines) + "\n"


# (title, printed by, MCP tool, model): each document once.
DOCUMENTS = (
    ("Search", "`askvault search --json`", "`search`", SearchDocument),
    ("Evidence pack", "`askvault context --json`", "`get_context_pack`", ContextDocument),
    ("Answer", "`askvault ask --json`", "`ask`", AnswerDocument),
    ("Status", "`askvault status --json`", "`status`", StatusDocument),
    ("Note", "(no command)", "`read_note`", NoteDocument),
)
TOOL_INPUTS = (
    ("search", SearchInput),
    ("get_context_pack", ContextInput),
    ("read_note", ReadNoteInput),
    ("ask", AskInput),
)


def documents_reference() -> str:
    lines = [
        "# JSON documents",
        "",
        "Generated from the typed models (`daemon/askvault/services/documents/`, the tools'",
        "arguments in `daemon/askvault/app/mcp_tools.py`) by `docs/gen_reference.py`. Each",
        "`--json` prints one of these documents (keys sorted, UTF-8, two-space indents), and the",
        "MCP tool of the same section returns the same document as its structured result; the",
        "tool's output schema is derived from the same model, so the two cannot differ.",
        "",
        "Every field below is always present (`null` when there is nothing to say), except",
        "those marked *absent unless set*. `a[]` is each item of the list `a`.",
        "",
    ]
    for title, command, tool, model in DOCUMENTS:
        lines += [f"## {title}", "", f"Printed by {command}; returned by the MCP tool {tool}.", ""]
        lines += ["| field | type | meaning |", "|---|---|---|"]
        lines += _field_rows(output_schema(model), "")
        lines.append("")
    lines += [
        "## MCP tool arguments",
        "",
        "Each tool refuses an argument it does not list (`status` takes none); an argument",
        "left out takes its default.",
        "",
    ]
    for tool, model in TOOL_INPUTS:
        schema = input_schema(model)
        lines += [f"### {tool}", "", "| argument | type | default | meaning |", "|---|---|---|---|"]
        for name, prop in schema["properties"].items():
            default = (
                "required"
                if name in schema["required"]
                else f"`{json.dumps(prop['default'])}`"
                if "default" in prop
                else "unset"
            )
            lines.append(
                f"| `{name}` | {_type_text(prop)} | {default} | {_cell(prop.get('description', ''))} |"
            )
        lines.append("")
    return "\n".join(lines)


def _field_rows(schema: dict[str, Any], prefix: str) -> list[str]:
    rows = []
    for name, prop in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        meaning = prop.get("description", "")
        if name not in schema.get("required", []):
            meaning = f"*absent unless set.* {meaning}".strip()
        rows.append(f"| `{path}` | {_type_text(prop)} | {_cell(meaning)} |")
        item = prop.get("items", {})
        if (
            "properties" in prop
            and "additionalProperties" in prop
            and prop["additionalProperties"] is False
        ):
            rows += _field_rows(prop, path + ".")
        elif "properties" in item:
            rows += _field_rows(item, path + "[].")
    return rows


def _type_text(prop: dict[str, Any]) -> str:
    kinds = prop.get("type", "any")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    named = []
    for kind in kinds:
        if kind == "array":
            item = prop.get("items", {})
            size = (
                f"{prop['minItems']} " if prop.get("minItems") == prop.get("maxItems", -1) else ""
            )
            inner = "objects" if "properties" in item else _type_text(item) + "s"
            named.append(f"list of {size}{inner}")
        elif "enum" in prop and kind != "null":
            named.append(" \\| ".join(f"`{json.dumps(v)}`" for v in prop["enum"] if v is not None))
        else:
            named.append(kind)
    return " or ".join(named)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def schema_reference() -> str:
    lines = [
        "# Index schema",
        "",
        "Generated by applying the migrations of `daemon/askvault/adapters/migrations.py`",
        "to an empty database (`docs/gen_reference.py`). The per-fingerprint sign-bit",
        "table `vecbits_fp<N>` is created when a model is first used (float vectors",
        "live once per text in `embedding_cache`):",
        "",
        "```sql",
        "CREATE VIRTUAL TABLE vecbits_fp<N> USING vec0(chunk_id INTEGER PRIMARY KEY, "
        "embedding bit[<dim>])",
        "```",
        "",
    ]
    for name, sql in MIGRATIONS:
        if callable(sql):
            doc = (sql.__doc__ or "").strip().splitlines()[0]
            body = getattr(sql, "schema_sql", "").strip()
            lines += [f"## {name}", "", f"A Python migration: {doc}", ""]
            lines += ["```sql", body, "```", ""] if body else []
            continue
        lines += [f"## {name}", "", "```sql", sql.strip(), "```", ""]
    with tempfile.TemporaryDirectory() as tmp:
        conn = connect(Path(tmp) / "schema.sqlite")
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table') ORDER BY name"
            )
        ]
        conn.close()
    lines += ["## All tables (including FTS5 shadow tables)", ""]
    lines += [f"- `{t}`" for t in tables]
    return "\n".join(lines) + "\n"


FILES = {
    "cli.md": cli_reference,
    "configuration.md": config_reference,
    "documents.md": documents_reference,
    "schema.md": schema_reference,
}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    drifted = []
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for name, render in FILES.items():
        text = render()
        path = REFERENCE / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                drifted.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if drifted:
        print("drifted: " + ", ".join(drifted) + " (run `python docs/gen_reference.py`)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
