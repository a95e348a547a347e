"""One time format for everything askvault writes (issue 12 item 4, issue 14 item 2)."""

from __future__ import annotations

import re
from datetime import datetime

from askvault.core.timestamps import local_iso


def test_local_iso_is_to_the_second_with_the_local_offset() -> None:
    text = local_iso(1_764_583_200.75)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", text), text
    assert datetime.fromisoformat(text).timestamp() == 1_764_583_200  # fraction dropped


def test_every_writer_uses_the_one_helper() -> None:
    from askvault.services import answer
    from askvault.services.index import indexer

    assert answer.iso_now(1_764_583_200) == local_iso(1_764_583_200)
    assert indexer._iso(1_764_583_200) == local_iso(1_764_583_200)
