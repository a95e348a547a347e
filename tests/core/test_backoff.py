from __future__ import annotations

import pytest

from askvault.core.backoff import Backoff, delay_after


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


def test_delay_after_counts_failures_from_one_and_never_overflows() -> None:
    assert [delay_after(n, 60.0, 3600.0) for n in (1, 2, 6, 7, 8)] == [
        60.0,
        120.0,
        1920.0,
        3600.0,
        3600.0,
    ]
    assert delay_after(100_000, 60.0, 3600.0) == 3600.0  # 60 * 2 ** 99_999 overflows a float
    with pytest.raises(ValueError):
        delay_after(0)


def test_backoff_with_equal_bounds_still_says_it_is_waiting() -> None:
    backoff = Backoff(5.0, 5.0)
    assert backoff.failed() == 5.0
    assert backoff.waiting
