"""Progress that tells the truth: a moving-window rate, no ETA before it means something."""

from __future__ import annotations

import pytest

from askvault.core.progress import RateWindow, format_duration


def test_no_eta_before_a_second_of_real_progress() -> None:
    window = RateWindow()
    window.add(0.0, 0)
    window.add(0.2, 1)
    window.add(0.4, 2)
    assert window.eta_s(2, 1000) is None


def test_slow_start_before_the_first_item_never_becomes_a_huge_eta() -> None:
    # 20 s to list the vault and start the pool, then 100 notes a second.
    window = RateWindow()
    window.add(0.0, 0)
    for step in range(1, 31):
        window.add(20.0 + step * 0.05, step * 5)
    eta = window.eta_s(150, 2000)
    assert eta is not None and 15 < eta < 22  # 1,850 notes at 100/s, not hours


def test_a_jump_of_unchanged_notes_at_once_is_the_baseline_not_a_rate() -> None:
    window = RateWindow()
    window.add(0.0, 900)  # 900 unchanged notes counted at once
    window.add(1.0, 901)
    window.add(2.0, 902)
    assert window.eta_s(902, 1000) == pytest.approx(98.0)


def test_the_rate_follows_a_change_of_pace_within_the_window() -> None:
    window = RateWindow(window_s=10.0)
    window.add(0.0, 0)
    for t in range(1, 31):  # 10 per second for 30 s ...
        window.add(float(t), t * 10)
    for t in range(31, 61):  # ... then 1 per second
        window.add(float(t), 300 + (t - 30))
    rate = window.rate()
    assert rate is not None and rate == pytest.approx(1.0, rel=0.01)


def test_no_eta_without_progress_or_total() -> None:
    window = RateWindow()
    window.add(0.0, 5)
    window.add(3.0, 5)
    assert window.rate() is None and window.eta_s(5, 0) is None


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.42, "0.4 s"),
        (23.2, "23 s"),
        (245, "4 min 05 s"),
        (7380, "2 h 03 min"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
