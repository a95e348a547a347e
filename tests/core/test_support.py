"""Support of one sentence by one text: content words, numbers and names (core/support.py)."""

from __future__ import annotations

from askvault.core.support import (
    content_tokens,
    is_claim,
    judge,
    prepare_evidence,
    simple_tokens,
)

NOTE = (
    "By default, snapshots are saved a minimum of 5 minutes from each other, and kept "
    "for 7 days. Obsidian Sync stores remote vaults in Frankfurt when you pick Europe."
)


def _judge(sentence: str, text: str = NOTE, question: str = "") -> tuple[str, float]:
    (content,) = content_tokens([sentence], simple_tokens, given=question)
    (evidence,) = prepare_evidence([text], simple_tokens)
    support = judge(sentence, content, evidence, question=question)
    return support.verdict, support.coverage


def test_a_paraphrase_with_the_same_facts_is_supported() -> None:
    assert _judge("Snapshots are saved every 5 minutes and kept for 7 days.")[0] == "supported"


def test_a_wrong_number_is_unsupported_whatever_the_words() -> None:
    assert (
        _judge("Snapshots are saved a minimum of 5 minutes apart and kept for 30 days.")[0]
        == "unsupported"
    )


def test_a_missing_name_caps_the_verdict_at_weak() -> None:
    assert _judge("Obsidian Sync stores remote vaults in Paris when you pick Europe.")[0] == "weak"
    assert (
        _judge("Obsidian Sync stores remote vaults in Frankfurt when you pick Europe.")[0]
        == "supported"
    )


def test_unrelated_sentence_is_unsupported() -> None:
    assert (
        _judge("The Wi-Fi password of my home network is written on the router.")[0]
        == "unsupported"
    )


def test_words_of_the_question_claim_nothing_what_the_answer_adds_must_be_found() -> None:
    question = "how long are file recovery snapshots kept"
    assert (
        _judge("File recovery snapshots are kept for 7 days.", question=question)[0] == "supported"
    )
    assert (
        _judge("File recovery snapshots are kept in a cloud bucket.", question=question)[0]
        == "unsupported"
    )


def test_an_answer_that_only_echoes_the_question_is_judged_on_all_its_words() -> None:
    (content,) = content_tokens(
        ["Snapshots are saved."], simple_tokens, given="are snapshots saved"
    )
    assert content == ["snapshots", "saved"]


def test_stopwords_and_words_about_the_notes_are_not_content() -> None:
    (content,) = content_tokens(
        ["According to the notes, it is mentioned that snapshots are kept."], simple_tokens
    )
    assert content == ["snapshots", "kept"]


def test_fragments_without_content_are_not_claims() -> None:
    assert not is_claim("and", [])
    assert not is_claim("For example:", ["example"])
    assert is_claim("kept 7 days", ["kept"])


def test_stemming_is_the_tokenizer_s() -> None:
    def stemmer(texts: list[str]) -> list[list[str]]:
        return [[w.removesuffix("s").removesuffix("ed") for w in ws] for ws in simple_tokens(texts)]

    (content,) = content_tokens(["Snapshot saving keeps notes"], stemmer)
    (evidence,) = prepare_evidence(["snapshots saving keep notes"], stemmer)
    assert judge("Snapshot saving keeps notes", content, evidence).verdict == "supported"


def test_the_same_words_with_the_opposite_polarity_are_only_weak() -> None:
    note = "If you forget your encryption password, you cannot recover your remote vault."
    verdict, _ = _judge(
        "You can recover your remote vault if you forget the encryption password.", note
    )
    assert verdict == "weak"
    assert (
        _judge("You cannot recover your remote vault if you forget the encryption password.", note)[
            0
        ]
        == "supported"
    )


def test_a_sentence_that_only_echoes_the_question_is_judged_strictly_on_all_its_words() -> None:
    from askvault.core.support import claim_contents

    ((content, echo),) = claim_contents(
        ["The wifi password is stored in the excerpt."],
        simple_tokens,
        given="what is my wifi password",
    )
    assert echo and content == ["wifi", "password", "stored"]
    (evidence,) = prepare_evidence(["The site password is stored in your browser."], simple_tokens)
    assert judge("The wifi password is stored.", content, evidence, lenient=False).verdict == "weak"
    assert judge("The wifi password is stored.", content, evidence).verdict == "supported"


SEARCH = "Use the task-todo: operator to find tasks you have not checked off yet."


def test_a_code_span_must_be_found_exactly_and_then_carries_the_claim() -> None:
    question = "how do i search only for tasks i haven't checked off yet"
    assert _judge("Use the `task-todo:` operator.", SEARCH, question)[0] == "supported"
    assert _judge("Use the `task-done:` operator.", SEARCH, question)[0] == "unsupported"


def test_a_name_must_be_in_the_page_even_when_the_question_brings_it() -> None:
    question = "how do i add a new lane to a board in the kanban plugin"
    note = "Drag a tab group above or below a current lane group."
    assert (
        _judge(
            "To add a lane in the Kanban plugin, drag a tab group above a lane group.",
            note,
            question,
        )[0]
        == "weak"
    )
    note = "In the Kanban plugin, drag a tab group above or below a current lane group."
    assert (
        _judge(
            "To add a lane in the Kanban plugin, drag a tab group above a lane group.",
            note,
            question,
        )[0]
        == "supported"
    )


def test_names_are_looked_for_in_every_excerpt_of_the_page() -> None:
    first, second = prepare_evidence(
        ["You need a custom domain first.", "Google Analytics needs a tracking code."],
        simple_tokens,
        pages=["Analytics.md", "Analytics.md"],
    )
    sentence = "You need a custom domain first for Google."
    (content,) = content_tokens([sentence], simple_tokens)
    assert judge(sentence, content, first).verdict == "supported"
    (alone,) = prepare_evidence(["You need a custom domain first."], simple_tokens)
    assert judge(sentence, content, alone).verdict == "weak"


def test_a_negation_the_question_brings_is_not_required_of_the_excerpt() -> None:
    question = "how do i find tasks i haven't checked off"
    assert (
        _judge("Tasks you haven't checked off are found with `task-todo:`.", SEARCH, question)[0]
        == "supported"
    )


STEPS = (
    "To access the `.obsidian` folder on Android:\n\n"
    "1. Open your system file manager.\n"
    '2. Enable the "Show hidden files" toggle in the settings.\n'
    "3. Navigate to your vault folder. The `.obsidian` folder will appear at the top level.\n"
)


def test_a_claim_that_joins_three_consecutive_steps_is_supported() -> None:
    # "1." is no sentence of its own, and one window holds three sentences: the steps
    # a model sums up in one sentence are backed by one place of the excerpt.
    question = "how can i see the hidden .obsidian folder on my android phone"
    sentence = (
        'To see the hidden `.obsidian` folder, enable "Show hidden files" in your system '
        "file manager and navigate to your vault folder."
    )
    assert _judge(sentence, STEPS, question)[0] == "supported"


def test_words_scattered_beyond_one_window_are_not_support() -> None:
    # Each word of the claim is in the excerpt, but no three consecutive sentences hold
    # them together: bag-of-words over the whole excerpt would have supported it.
    text = (
        "The Standard plan syncs one vault. "
        "Version history is part of every plan. "
        "Attachments can be large. "
        "Snapshots are saved often. "
        "Billing happens once a month."
    )
    assert _judge("The Standard plan is saved once a month.", text)[0] != "supported"
    assert _judge("The Standard plan syncs one vault.", text)[0] == "supported"


def test_evidence_windows_are_three_consecutive_sentences() -> None:
    (evidence,) = prepare_evidence(["One. Two. Three. Four."], simple_tokens)
    assert [w.text for w in evidence.windows] == ["One. Two. Three.", "Two. Three. Four."]
    (short,) = prepare_evidence(["Only one sentence here"], simple_tokens)
    assert [w.text for w in short.windows] == ["Only one sentence here"]


def test_a_name_of_the_question_no_excerpt_mentions_is_an_unknown_subject() -> None:
    from askvault.core.support import unknown_subjects

    question = "how do i get the excalidraw plugin to save an svg copy of every drawing?"
    texts = ["Workspaces\nIn the ribbon, click **Manage workspace layouts**. Select **Save**."]
    reply = [
        "To get the Excalidraw plugin to save an SVG copy, follow these steps:",
        "In the ribbon, click Manage workspace layouts.",
    ]
    assert unknown_subjects(reply, question, texts) == ("Excalidraw", "SVG")
    # A name the excerpts mention is known, whatever its case in the question.
    assert unknown_subjects(["Open Manage workspace layouts."], "manage workspace", texts) == ()
    # A name only the reply brings is not the question's subject (it caps its claim at weak).
    assert unknown_subjects(["Use the Kanban plugin."], question, texts) == ()
    # Names are words: "Apple" is in the notes, "Watch" is not.
    assert unknown_subjects(
        ["There is no Obsidian app for the Apple Watch."],
        "is there an obsidian app for the apple watch?",
        ["Obsidian runs on an Apple iPhone."],
    ) == ("Watch",)
    assert unknown_subjects([], question, texts) == ()


# -- a restatement of the question, and the question's own numbers ---------------------------


def _restates(sentence: str, question: str) -> bool:
    from askvault.core.support import claim_contents, restates

    ((content, echo),) = claim_contents([sentence], simple_tokens, given=question)
    (asked,) = simple_tokens([question])
    return echo and restates(sentence, content, asked, question)


def test_a_yes_or_no_that_says_the_question_again_restates_it() -> None:
    assert _restates(
        "Yes, there is a student discount on Sync.", "is there a student discount on sync?"
    )
    assert _restates("No, you are not doing something wrong.", "am i doing something wrong?")
    assert _restates("Yes, search only in file names.", "search only in file names")


def test_one_word_more_or_a_value_is_an_answer_not_a_restatement() -> None:
    assert not _restates("Compost heaps need air.", "what do compost heaps need?")
    assert not _restates("The key is `Ctrl+P`.", "what is the key?")
    assert not _restates("Keep 7 versions.", "how many versions can i keep?")
    # the question's own number is not a value the reply adds
    assert _restates("Yes, you can open 10 tabs.", "can i open 10 tabs?")


def test_a_number_of_the_question_is_not_required_in_the_note() -> None:
    """ "like 10 lines" comes from the question: the note's sentence without the 10 still
    backs the claim; a number the question does not hold still must be found."""
    note = "To edit consecutive lines, hold `Shift+Alt` while dragging."
    question = "how do i type the same thing at the start of 10 lines in a row?"
    claim = "To type at the start of 10 lines in a row, hold `Shift+Alt` while dragging."
    assert _judge(claim, note, question)[0] == "supported"
    assert _judge(claim, note, "how do i type the same thing at the start of lines?")[0] == (
        "unsupported"
    )


def test_a_number_of_the_question_found_in_the_note_still_counts() -> None:
    note = "Tags cannot be only numbers: #1984 is not a valid tag, use #y1984."
    question = "why does my tag #1984 not work"
    assert _judge("Because #1984 is only numbers.", note, question)[0] == "supported"


# -- a number's unit -------------------------------------------------------------------------


def test_a_value_the_note_gives_in_another_unit_is_unsupported() -> None:
    """Another currency, size or span of time says something else than the note: "100
    euros" is not "$100", nor "5 GB" "5 MB"; the same unit written otherwise is the same."""
    table = "| **Contribution (USD)** | **$25** | **$50** | **$100** |"
    question = "how much is the catalyst vip tier in euros"
    assert _judge("The VIP tier costs 100 euros.", table, question)[0] == "unsupported"
    assert _judge("The VIP tier costs $100.", table, question)[0] != "unsupported"
    sizes = "The maximum file size is 5 MB on the Standard plan."
    assert _judge("The Standard plan allows files of 5 GB.", sizes, "")[0] == "unsupported"
    assert _judge("The Standard plan allows files of 5MB.", sizes, "")[0] != "unsupported"
    days = "You can ask for a refund within 30 days of your payment."
    assert _judge("There is a 30-day refund window.", days, "")[0] != "unsupported"
    assert _judge("You can get a refund within 30 months.", days, "")[0] == "unsupported"


def test_a_number_written_against_its_unit_is_the_same_number_and_unit() -> None:
    """Seen with the 1.5B model (main set): "50 MB" against the Help vault's "up to 50mb"
    was withheld as unsupported (the number was not found, "MB" a missing name). Either
    side may glue them; other letters after a number ("2FA", "1st", "x86") stay a word."""
    from askvault.core.units import spaced

    note = "You can upload files **up to 50mb** in size to your Publish site."
    assert _judge("The maximum file size for one upload is 50 MB.", note)[0] == "supported"
    assert _judge("You can upload files of up to 50MB.", note)[0] == "supported"
    assert _judge("You can upload files of up to 50 MB.", "Upload files of 50 MB.")[0] == (
        "supported"
    )
    assert _judge("The maximum file size for one upload is 50 GB.", note)[0] == "unsupported"
    assert _judge("The maximum file size for one upload is 5 MB.", note)[0] == "unsupported"
    assert spaced("up to 50mb, 4GB or 1.5TB in 10min") == "up to 50 mb, 4 GB or 1.5 TB in 10 min"
    assert spaced("Turn on 2FA for the 1st vault on x86 and v2.") == (
        "Turn on 2FA for the 1st vault on x86 and v2."
    )


def test_a_number_the_note_gives_without_a_unit_is_not_contradicted_by_one() -> None:
    from askvault.core.units import conflicting, values

    assert conflicting(values("It costs 100 euros."), "| VIP | 100 |") == ()
    assert conflicting(values("It takes 30 notes."), "30 days") == ()  # another kind
    assert conflicting(values("It costs 100 euros."), "$100 or €100") == ()
    assert conflicting(values("It costs 100 dollars."), "**$100**") == ()
    assert conflicting(values("Keep 7 days, then 5 GB."), "7 weeks, 5 GB") == ("7 days",)
    assert [(v.number, v.kind, v.unit) for v in values("US$ 1,200 and 2 hrs")] == [
        ("1200", "money", "usd"),
        ("2", "time", "hour"),
    ]
