"""core/qualifiers.py: the platform a question asks about, and a price that is money."""

from __future__ import annotations

import pytest

from askvault.core.qualifiers import (
    asked_platform,
    asks_price,
    platform_mismatch,
    platforms,
    value_mismatch,
)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("on my iphone how do i close a tab", ["mobile"]),
        ("on android theres no ctrl+o", ["mobile"]),
        ("at work on windows, like i have on my mac at home?", ["Windows", "macOS"]),
        ("on my phone where? on the laptop its down in the corner", ["mobile", "desktop"]),
        ("Press Ctrl+O (or Cmd+O on macOS)", ["macOS"]),
        ("The Obsidian team removed translucency in Windows.", ["Windows"]),
        # Windows of the app are not the system.
        ("Open the note in pop-out windows", []),
        ("how do i open two windows side by side", []),
        ("Drag a tab out to open it in Pop-out windows.", []),
        ("New windows open beside the main one.", []),
        ("a windows 11 laptop", ["Windows", "desktop"]),
        ("Install it with Flatpak", ["Linux"]),
        ("How do I export a note to PDF?", []),
    ],
)
def test_which_platforms_a_text_names(text: str, named: list[str]) -> None:
    assert platforms(text) == named


def test_the_platform_asked_about_is_the_first_the_question_names() -> None:
    assert asked_platform("on my phone where do i see it? on the laptop its down") == "mobile"
    assert asked_platform("at work on windows, like on my mac at home?") == "Windows"
    assert asked_platform("how do i close a tab?") is None


@pytest.mark.parametrize(
    ("question", "claim", "quote"),
    [
        # A desktop chord for a phone.
        (
            "on android how do i bring up the quick switcher?",
            "Press `Ctrl+O` to open it.",
            "Quick switcher: Press `Ctrl+O` to open the Quick switcher.",
        ),
        # The note's desktop sentence for a mobile question.
        (
            "on my phone where do i see the word count?",
            "It appears in the status bar.",
            "Word count: On desktop word count appears in the status bar.",
        ),
        # The claim is about the context platform, not the one asked.
        (
            "on my phone where do i see the word count? on the laptop its in the corner",
            "On the laptop, it appears in the status bar.",
            "Word count: word count appears in the status bar.",
        ),
        # The claim names Windows; the note says it of macOS.
        (
            "at work on windows, can i make the window see-through like on my mac?",
            "Yes, you can make the window translucent on Windows in **Appearance**.",
            "Appearance#Translucency: On MacOS you can make the Obsidian window translucent.",
        ),
        # No question platform needed for a claim against its own quote.
        (
            "can the window be translucent?",
            "On Windows, enable translucency in Appearance.",
            "Appearance: On macOS you can enable translucency in Appearance.",
        ),
        (
            "how do i hide the ribbon?",
            "On mobile, turn off Show ribbon.",
            "Appearance: On desktop, turn off Show ribbon.",
        ),
    ],
)
def test_a_claim_about_another_platform_is_a_mismatch(
    question: str, claim: str, quote: str
) -> None:
    assert platform_mismatch(question, claim, quote)


@pytest.mark.parametrize(
    ("question", "claim", "quote"),
    [
        # The other system's key in passing holds for this one too.
        (
            "on windows how do i close a tab?",
            "On Windows, press Ctrl+W (Cmd+W on macOS).",
            "Tabs#Close a tab: To close the active tab, press Ctrl+W (Cmd+W on macOS).",
        ),
        (
            "on windows how do i close a tab?",
            "Press Ctrl+W.",
            "Tabs#Close a tab: To close the active tab, press Ctrl+W (Cmd+W on macOS).",
        ),
        # A note that names no platform may hold for the one asked.
        (
            "what's the keyboard shortcut on windows to delete the whole line",
            "On Windows, press `Ctrl+Shift+K`.",
            "Editing shortcuts: Delete paragraph: `Ctrl+Shift+K`.",
        ),
        # Mobile asked, mobile said.
        (
            "on my iphone how do i open the quick switcher?",
            "Tap the plus icon at the bottom center.",
            "Quick switcher#Mobile: On mobile, tap the plus icon at the bottom center.",
        ),
        # A mobile heading says mobile for its sentences.
        (
            "on android how do i close a tab?",
            "Swipe the tab away.",
            "Tabs#Mobile: Swipe the tab away to close it.",
        ),
        # A generic desktop goes with any desktop system.
        (
            "on my laptop how do i close a tab?",
            "On Windows, press Ctrl+W.",
            "Tabs: On desktop, press Ctrl+W to close a tab.",
        ),
        # No platform anywhere.
        ("how do i close a tab?", "Press Ctrl+W.", "Tabs: press Ctrl+W."),
        # A chord for a mobile question whose note says mobile (an external keyboard).
        (
            "on my ipad with a keyboard, how do i search?",
            "Press Cmd+Shift+F.",
            "Search: On iPad with a keyboard, press Cmd+Shift+F.",
        ),
    ],
)
def test_a_claim_that_may_hold_for_the_platform_asked_is_no_mismatch(
    question: str, claim: str, quote: str
) -> None:
    assert platform_mismatch(question, claim, quote) == ""


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("how much does obsidian sync cost a month?", True),
        ("what's the price of Publish in euros?", True),
        ("what does the catalyst license cost?", True),
        ("how expensive is Sync?", True),
        ("how much storage does Sync give me?", False),
        ("how do i cancel my plan?", False),
    ],
)
def test_which_questions_ask_for_a_price(question: str, asks: bool) -> None:
    assert asks_price(question) is asks


def test_a_price_answer_needs_an_amount_of_money_in_one_claim() -> None:
    q = "how much does the standard plan cost a month?"
    assert value_mismatch(q, ["The monthly cost for the Standard plan is 5 MB."])
    assert value_mismatch(q, ["The cost of Obsidian Sync per month is 1 month."])
    assert value_mismatch(q, ["It costs $4 per month.", "It includes 1 GB."]) == ""
    assert value_mismatch(q, ["It costs 4 USD a month."]) == ""
    assert value_mismatch(q, ["It costs 8 €."]) == ""
    assert value_mismatch(q, ["Obsidian is free for personal use."]) == ""
    assert value_mismatch(q, []) == ""  # nothing supported: decided elsewhere
    assert value_mismatch("how much storage do i get?", ["You get 1 GB."]) == ""


# Through the citation check: the claims flagged, their links backing nothing.
PLANS = (
    "# Plans\n\n## Sync plans\n\nThe Standard plan gives 1 GB of storage and 5 MB per file. "
    "The Plus plan costs $8 per month and gives 10 GB.\n\n## Quick switcher\n\nPress "
    "`Ctrl+O` (or `Cmd+O` on macOS) to open the Quick switcher.\n"
)


def _checked(answer: str, question: str):  # type: ignore[no-untyped-def]
    from askvault.core.citations import Excerpt, check_citations
    from askvault.core.links import build_link_index
    from askvault.core.notes import parse_note

    note = parse_note("Plans.md", PLANS)
    index = build_link_index([("Plans.md", note.aliases)])
    excerpt = Excerpt("Plans.md", note.title, None, note.body, "[[Plans]]")
    return check_citations(
        answer, index, {"Plans.md": note}, set(), excerpts=[excerpt], question=question
    )


def test_a_price_answered_with_a_size_is_flagged_in_the_citation_check() -> None:
    report = _checked(
        "The Standard plan gives 5 MB per file [[Plans]].",
        "how much does the standard plan cost a month?",
    )
    (claim,) = report.claims
    assert claim.verdict == "unsupported" and "price" in claim.reason
    assert report.supported_claims == 0 and claim.quote is None and not claim.backed_by


def test_a_price_with_its_amount_keeps_every_supported_claim() -> None:
    report = _checked(
        "The Plus plan costs $8 per month [[Plans]]. It gives 10 GB [[Plans]].",
        "how much does the plus plan cost?",
    )
    assert [c.verdict for c in report.claims] == ["supported", "supported"]


def test_a_desktop_chord_for_an_android_question_is_flagged_and_the_same_reply_passes_for_windows() -> (
    None
):
    answer = "Press `Ctrl+O` (or `Cmd+O` on macOS) to open the Quick switcher [[Plans]]."
    (android,) = _checked(answer, "on android how do i open the quick switcher?").claims
    assert android.verdict == "unsupported" and "mobile" in android.reason
    (windows,) = _checked(answer, "on windows how do i open the quick switcher?").claims
    assert windows.verdict == "supported"
    (plain,) = _checked(answer, "how do i open the quick switcher?").claims
    assert plain.verdict == "supported"
