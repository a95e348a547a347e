"""A sanitised reply, read by a real renderer, holds nothing that loads, links or imitates.

markdown-it-py (CommonMark with GFM tables and linkify, HTML on: Obsidian renders HTML)
reads what askvault publishes of thousands of hostile replies: random mixtures of
images, tags, comments, links, autolinks, backticks, fences, quotes, list markers,
tables, headings, callouts and control characters. The reply is read three ways, as
the answer note shows it: as the body, quoted (the folded reply of a no-answer note),
and one sentence of it quoted on a line of the report. It is a stand-in for Obsidian's
own renderer, not a copy of it: where they may differ (a fence in a list item, a table
cell), core/code_view.py takes nothing for code.
"""

from __future__ import annotations

import random

import pytest

from askvault.core.inert import inert_line
from askvault.core.reply import sanitize_reply
from support.rendered import live_content as _live

PIECES = [
    "![x](http://e.x/p.png)", '![a b](<http://e.x/q r.png> "t")', "![x][r]", "![y]",
    "[r]: http://e.x/r.png", "<img src=http://e.x/i>", '<img\nsrc="//e.x/j">',
    "<iframe src=https://e.x>", "</iframe>", "<!-- c -->", "<!--", "<!-- x\n\n-->",
    "<video src=x>", '<a href="http://e.x">', "<a\nhref=x>", "<https://e.x/a>",
    "<mailto:a@b.c>", "https://e.x/b?d=1", "_https://e.x/u", "www.e.x",
    "[t](https://e.x/l)", "[t](Note.md)", "[t [[A]]](http://e.x)", "[t](<http://e.x/a b>)",
    "](http://e.x)", "(http://e.x/p)", "![[https://e.x/p.png]]", "![[A]](http://e.x)",
    "[[https://e.x]]", "[[A]]", "![", "[!", "](", "\\]", "`", "``", "`code`", "\\", "\\`",
    "!", "[", "]", "(", ")", "<", ">", "\n", "\n\n", "> ", "\n> > ", "\n> - ", "- ", "\n1. ",
    "\n  ", "# ", "```", "~~~", "\n- ```\n", "\n   ```\n", "\n> ```\n", "\n    ```\n",
    "    ", "|", "| a | b |\n|---|---|\n| ", "text", " ", '"', "'", "<pre>", "</pre>",
    "\n\n<pre>\n", "<div>\n", "\n</div>\n", "<script>", "<style>", "&lt;", "*", "_", "=",
    "\n---\n", "\n===\n", "[!note]", "⚠️", "%%", "added by askvault", "\r", "\x1b[2J",
    "\u2028", "\t",
]  # fmt: skip
CASES = 2500


def _hostile(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 25)))


@pytest.mark.parametrize("seed", range(4))
def test_no_hostile_reply_is_published_with_anything_that_loads_links_or_imitates(
    seed: int,
) -> None:
    rng = random.Random(seed)
    for _ in range(CASES // 4):
        reply = _hostile(rng)
        body = sanitize_reply(reply).text
        quoted = "\n".join(f"> {line}" if line.strip() else ">" for line in body.split("\n"))
        report_line = f'- "{inert_line(body, 60)}" (unsupported)'
        for name, shown in (("body", body), ("quoted", quoted), ("report", report_line)):
            live = _live(shown, structure=name == "body")
            assert live is None, f"{name}: {live} in {shown!r}, from {reply!r}"


def test_the_renderer_finds_what_a_raw_reply_would_do() -> None:
    """The check can fail: unsanitised, the hostile pieces load, link and imitate."""
    assert _live("![x](http://e.x/p.png)", structure=True) is not None
    assert _live("<img src=http://e.x/i>", structure=True) is not None
    assert _live("see https://e.x/b", structure=True) is not None
    assert _live("## Citation report", structure=True) == "heading_open"
    assert _live("> [!success] Verified", structure=True) is not None
