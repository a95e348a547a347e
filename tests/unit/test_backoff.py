from __future__ import annotations

import pytest

from askvault.app.backoff import Backoff


def test_backoff_starts_at_1_s_and_doubles_up_to_60_s() -> None:
    backoff = Backoff()
    delays = [backoff.failed() for _ in range(10)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0, 60.0, 60.0]


def test_backoff_resets_after_a_success() -> None:
    backoff = Backoff()
    backoff.failed()
    backoff.failed()
    assert backoff.waiting
    backoff.succeeded()
    assert not backoff.waiting
    assert backoff.failed() == 1.0


def test_backoff_stays_capped_during_a_very_long_outage() -> None:
    backoff = Backoff()
    for _ in range(5000):
        delay = backoff.failed()
    assert delay == 60.0


def test_backoff_rejects_a_cap_below_the_first_delay() -> None:
    with pytest.raises(ValueError):
        Backoff(first_s=10, max_s=5)
