"""Which words each link cites (DESIGN §3: a link closes the claim before it): one golden
case per placement a model writes."""

from __future__ import annotations

import pytest

from askvault.core.claims import MIN_CLAIM_WORDS, split_claims


def _claims(answer: str) -> list[tuple[str, list[str]]]:
    return [(c.text, [span.link.target for span in c.links]) for c in split_claims(answer)]


PLACEMENTS = {
    "link_after_the_full_stop_belongs_to_the_sentence_before": (
        "You can embed a note with an exclamation mark. [[Embed files]] You can embed a canvas "
        "too. [[Canvas]] Bases can be embedded with a view name. [[Create a base]]",
        [
            ("You can embed a note with an exclamation mark.", ["Embed files"]),
            ("You can embed a canvas too.", ["Canvas"]),
            ("Bases can be embedded with a view name.", ["Create a base"]),
        ],
    ),
    "link_before_the_full_stop_closes_its_sentence": (
        "Embeds show another note inline [[Embeds]]. Links connect two notes [[Links]].",
        [("Embeds show another note inline", ["Embeds"]), ("Links connect two notes", ["Links"])],
    ),
    "several_links_in_one_sentence_each_cite_the_words_since_the_previous": (
        "Embeds show a note inline [[Embeds]], and block links point at a paragraph [[Blocks]].",
        [
            ("Embeds show a note inline", ["Embeds"]),
            ("and block links point at a paragraph", ["Blocks"]),
        ],
    ),
    "links_side_by_side_cite_the_same_words": (
        "Sync keeps versions for a year [[Version history]], [[Plans]].",
        [("Sync keeps versions for a year", ["Version history", "Plans"])],
    ),
    "link_at_the_start_of_a_paragraph_cites_what_follows": (
        "[[Embeds]]: an embed shows another note inline.",
        [("an embed shows another note inline.", ["Embeds"])],
    ),
    "a_line_of_links_alone_cites_the_uncited_claims_before_it": (
        "An embed shows a note inline.\nIt keeps itself up to date.\n\nSources: [[Embeds]], "
        "[[Links]]",
        [
            ("An embed shows a note inline.", ["Embeds", "Links"]),
            ("It keeps itself up to date.", ["Embeds", "Links"]),
        ],
    ),
    "list_items_are_claims_of_their_own": (
        "- Item one is about embeds [[A]]\n- [[B]] item two is about links\n"
        "1. The third item is numbered. [[C]]\n- [ ] A task item is a claim too [[D]]",
        [
            ("Item one is about embeds", ["A"]),
            ("item two is about links", ["B"]),
            ("The third item is numbered.", ["C"]),
            ("A task item is a claim too", ["D"]),
        ],
    ),
    "table_rows_are_claims_header_and_separator_are_not": (
        "| Feature | Page |\n|---|:---:|\n| Embeds use an exclamation mark | [[Embeds]] |\n"
        "| Blocks use a caret | [[Blocks]] |",
        [("Embeds use an exclamation mark", ["Embeds"]), ("Blocks use a caret", ["Blocks"])],
    ),
    "a_short_opener_before_the_link_gives_it_the_whole_sentence": (
        "According to [[Embeds]], an embed shows another note inline.",
        [("According to, an embed shows another note inline.", ["Embeds"])],
    ),
    "a_few_words_after_the_link_belong_to_its_claim": (
        "Use an exclamation mark to embed [[Embeds]] notes.",
        [("Use an exclamation mark to embed notes.", ["Embeds"])],
    ),
    "words_after_the_last_link_that_say_something_are_an_uncited_claim": (
        "Embeds show a note [[Embeds]] and they also refresh when the source changes.",
        [
            ("Embeds show a note", ["Embeds"]),
            ("and they also refresh when the source changes.", []),
        ],
    ),
    "headings_are_not_claims": (
        "## Embeds [[Embeds]]\nAn embed shows a note inline [[Embeds]].",
        [("An embed shows a note inline", ["Embeds"])],
    ),
    "code_spans_keep_their_text_and_their_links_are_not_citations": (
        "Write `![[Note]]` to embed a note [[Embeds]].",
        [("Write `![[Note]]` to embed a note", ["Embeds"])],
    ),
    "an_embed_is_part_of_the_claim_not_a_citation_and_abbreviations_end_no_sentence": (
        "Embed a PDF, e.g. a paper, with ![[paper.pdf]] syntax in the note. [[Embed files]]",
        [("Embed a PDF, e.g. a paper, with ![[paper.pdf]] syntax in the note.", ["Embed files"])],
    ),
    "a_dot_inside_a_link_ends_no_sentence": (
        "Open [[notes.v2]] for the details of the second version [[Versions]].",
        [("Open for the details of the second version", ["notes.v2", "Versions"])],
    ),
    "an_answer_without_links_is_claims_without_citations": (
        "File recovery saves snapshots every 5 minutes. They are kept for 7 days.",
        [("File recovery saves snapshots every 5 minutes.", []), ("They are kept for 7 days.", [])],
    ),
    "cjk_sentences_end_at_their_own_full_stop": (
        "嵌入会显示另一条笔记。[[Embeds]]块链接指向段落。[[Blocks]]",
        [("嵌入会显示另一条笔记。", ["Embeds"]), ("块链接指向段落。", ["Blocks"])],
    ),
}


@pytest.mark.parametrize("case", sorted(PLACEMENTS))
def test_claim_placement(case: str) -> None:
    answer, expected = PLACEMENTS[case]
    assert _claims(answer) == expected


def test_a_short_claim_is_judged_with_its_whole_sentence() -> None:
    claims = split_claims("Embeds show another note inline [[Embeds]], and links [[Links]].")
    assert claims[1].text == "and links" and claims[1].words < MIN_CLAIM_WORDS
    assert claims[1].judged == "Embeds show another note inline, and links."
    assert claims[0].judged == claims[0].text


def test_anchor_is_after_the_claim_and_its_links() -> None:
    answer = "Fact one is here. [[A]] Fact two is here."
    first, second = split_claims(answer)
    assert answer[: first.anchor] == "Fact one is here. [[A]]"
    assert answer[: second.anchor] == answer


def test_a_number_after_the_link_belongs_to_the_claim_it_completes() -> None:
    (claim,) = split_claims(
        "The Wi-Fi password of my home network is [[Home Network]]: 192.168.178.1."
    )
    assert claim.text == "The Wi-Fi password of my home network is: 192.168.178.1."


def test_text_sentences_are_cut_like_an_answers() -> None:
    from askvault.core.claims import text_sentences

    text = (
        "**Android**\n\n"
        "To access the folder:\n"
        "1. Open your file manager.\n"
        "2) Enable the toggle. Then go on.\n"
        "- [ ] Navigate, e.g. to your vault.\n"
        "> Quoted line.\n"
        "Run `a. b` here. 设置已保存。下一步\n"
    )
    assert text_sentences(text) == [
        "**Android**",
        "To access the folder:",
        "Open your file manager.",  # a list marker opens the sentence, it is none itself
        "Enable the toggle.",
        "Then go on.",
        "Navigate, e.g. to your vault.",  # an abbreviation ends no sentence
        "Quoted line.",
        "Run `a. b` here.",  # nor does a full stop in code
        "设置已保存。",
        "下一步",
    ]
    assert text_sentences("") == []


def test_a_shortcut_s_last_key_ends_its_sentence_an_initial_does_not() -> None:
    claims = split_claims("Press Ctrl+Shift+T. Then J. Smith reopens it.")
    assert [c.sentence for c in claims] == ["Press Ctrl+Shift+T.", "Then J. Smith reopens it."]
