"""A question's `ask_language` as the model should read it: the language's name.

A small model told "Write the answer in this language: fr" may not take "fr" for French;
"French" it does. The ISO 639 tables come from python-iso639 (two- and three-letter codes,
and names); a tag with a region (`pt-BR`) keeps it beside the name. A value that is no
code (`Brazilian Portuguese`, a typo) is passed on as the user wrote it.
"""

from __future__ import annotations

import re

_TAG = re.compile(r"^([A-Za-z]{2,3})(?:[-_]([A-Za-z0-9]{2,8}))?$")


def language_name(value: str) -> str:
    """`fr` -> `French`, `fra` -> `French`, `pt-BR` -> `Portuguese (pt-BR)`; other values
    as they are."""
    text = value.strip()
    match = _TAG.match(text)
    if match is None:
        return text
    # Imported here: its tables load on first use, only when a question sets the option.
    from iso639 import Language, LanguageNotFoundError

    try:
        name = Language.match(match.group(1).lower()).name
    except LanguageNotFoundError:
        return text
    return f"{name} ({text})" if match.group(2) else name
