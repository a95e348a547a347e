"""Control characters in untrusted text: removed (what is shown and written) or escaped
(log lines, where what was there should stay visible).

Pure. C0 controls but newline and tab, DEL and C1 controls; terminal escape sequences
(CSI, OSC, DCS, two-character escapes) go whole, so no residue like `[2J` is left; a
carriage return (alone or before a newline) and U+2028/U+2029 become newlines, so the
lines askvault quotes are the lines Obsidian and a terminal see.
"""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"\r\n?|[\u2028\u2029]")
# CSI (ESC [ ... final), OSC and DCS/SOS/PM/APC strings with their terminator, the
# two-character escapes (ESC, intermediates, final) and the 8-bit CSI. An OSC without its
# terminator is not taken whole: its ESC and `]` go, the rest stays readable.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b\n]*\x1b\\"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def strip_controls(text: str) -> str:
    """`text` without control characters (C0 but newline and tab, DEL, C1) and terminal
    escape sequences; `\\r\\n`, a lone `\\r` and U+2028/U+2029 become `\\n`. What a
    terminal, a note or a JSON document may show of untrusted text."""
    return strip_counted(text)[0]


def strip_counted(text: str) -> tuple[str, int]:
    """(the text without controls, how many sequences and characters were removed)."""
    if _UNSAFE.search(text) is None:
        return text, 0
    text = _LINE_BREAKS.sub("\n", text)
    text, sequences = _ESCAPE_SEQUENCE.subn("", text)
    text, controls = _CONTROL.subn("", text)
    return text, sequences + controls


def escape_controls(text: str) -> str:
    """`text` with each control character but newline and tab written as `\\xNN` or
    `\\uNNNN` (log lines: what was there stays visible, the terminal showing the log is
    not driven by it)."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escaped_char, text)


def _escaped_char(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
