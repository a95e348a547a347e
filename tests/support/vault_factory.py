"""A small fixture vault written byte for byte (CRLF and BOM survive any git setting)."""

from __future__ import annotations

from pathlib import Path

LONG_PARAGRAPHS = [
    f"Paragraph {i} about gardening topic {i}: soil, compost and watering schedule number {i}. "
    f"It mentions plant{i} and tool{i} so every paragraph is distinct."
    for i in range(40)
]

NOTES: dict[str, bytes] = {
    "Welcome.md": (
        "---\naliases: [Start here, Home]\ntags: [intro]\n---\n"
        "# Welcome\n\nThis vault is about [[Embeds]] and [[Links|linking notes]].\n\n"
        "## Getting started\n\nRead [[folder/Deep Note#Section two]] first.\n"
    ).encode(),
    "Embeds.md": (
        "---\naliases: [Transclusion]\n---\n# Embeds\n\nAn embed shows another note inline: "
        "![[Welcome]].\n\n## Block references\n\nLink a block with a caret id. ^block-1\n"
    ).encode(),
    "Links.md": (
        "# Links\n\nWikilinks connect notes.\n\n```markdown\n[[Not a real link]]\n```\n\n"
        "Inline code `[[Also not a link]]` and escaped \\[[Nor this]] are ignored.\n"
    ).encode(),
    "folder/Deep Note.md": (
        "# Deep Note\n\n## Section one\n\nThe first section talks about sourdough bread.\n\n"
        "## Section two\n\nThe second section explains fermentation of rye.\n"
    ).encode(),
    "CRLF note.md": b"# Windows\r\n\r\nThis note was written on Windows with CRLF endings.\r\n",
    "BOM note.md": "\ufeff---\ntitle: bom\n---\nA note that starts with a byte order mark.\n".encode(),
    "Caf\u00e9 \u00fcber \u65e5\u672c.md": (
        "# Unicode\n\nNotes about caf\u00e9 culture and \u65e5\u672c\u8a9e\u306e\u6587\u7ae0.\n"
    ).encode(),
    "Empty.md": b"",
    "Garden log.md": ("# Garden log\n\n" + "\n\n".join(LONG_PARAGRAPHS) + "\n").encode(),
    ".obsidian/app.json": b'{"userIgnoreFilters": ["Templates/"]}',
    "Templates/Daily.md": b"# {{date}}\n",
    "attachments/image.png": b"\x89PNG\r\n\x1a\n\x00\x00",
}


def make_fixture_vault(root: Path) -> Path:
    """Write the fixture vault under `root` and return it."""
    for rel, data in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


# Notes that are indexed (Templates/ is excluded by app.json, .obsidian is hidden).
INDEXED_NOTES = sorted(
    p for p in NOTES if p.endswith(".md") and not p.startswith((".obsidian/", "Templates/"))
)
