"""When each inbox question may be tried again: its own backoff, or skipped until an edit."""

from __future__ import annotations

from askvault.services.inbox.schedule import QuestionSchedule
from support.inbox_driver import FakeClock

Q = "queries/inbox/Q.md"
SIG = (10, 1_000, 7)


def test_each_question_backs_off_on_its_own_by_the_one_backoff() -> None:
    clock = FakeClock()
    schedule = QuestionSchedule(1.0, 4.0, clock)
    assert [schedule.put_off(Q) for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    assert schedule.put_off("queries/inbox/Other.md") == 1.0
    assert not schedule.is_due(Q)
    clock.advance(3.9)
    assert not schedule.is_due(Q)
    clock.advance(0.1)
    assert schedule.is_due(Q)


def test_an_answered_question_waits_the_first_delay_again() -> None:
    schedule = QuestionSchedule(1.0, 60.0, FakeClock())
    schedule.put_off(Q)
    schedule.put_off(Q)
    schedule.answered(Q)
    assert schedule.put_off(Q) == 1.0


def test_a_skipped_question_is_skipped_until_its_bytes_change() -> None:
    schedule = QuestionSchedule()
    schedule.skip(Q, SIG)
    assert schedule.is_skipped(Q, SIG)
    assert not schedule.is_skipped(Q, (11, 2_000, 7))


def test_a_question_that_left_the_inbox_is_forgotten_unless_it_is_finishing() -> None:
    clock = FakeClock()
    schedule = QuestionSchedule(1.0, 60.0, clock)
    finishing = "queries/inbox/Answered.md"
    schedule.put_off(Q)
    schedule.skip(Q, SIG)
    schedule.put_off_finishing(finishing)
    schedule.put_off_finishing(finishing)
    schedule.forget_absent(set())
    assert schedule.is_due(Q) and not schedule.is_skipped(Q, SIG)
    assert schedule.put_off(Q) == 1.0
    assert schedule.is_finishing(finishing)
    assert not schedule.is_due(finishing)
    assert schedule.put_off_finishing(finishing) == 4.0
    schedule.finished(finishing)
    assert not schedule.is_finishing(finishing) and schedule.is_due(finishing)
