"""User text never becomes FTS5 syntax; CJK goes to the trigram index."""

from __future__ import annotations

import pytest

from askvault.core.query import (
    bm25_tokens,
    cjk_grams,
    fts_match_expression,
    has_cjk,
    query_terms,
    quote_term,
    snippet,
    trigram_match_expression,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("C++", '"c"'),
        ("sqlite-vec", '"sqlite" OR "vec"'),
        ("title:", '"title"'),
        ("NEAR(", '"near"'),
        ('"unbalanced', '"unbalanced"'),
        ("Crème Brûlée", '"creme" OR "brulee"'),
    ],
)
def test_fts_match_expression_quotes_every_term(text: str, expected: str) -> None:
    assert fts_match_expression(text) == expected


def test_fts_match_expression_is_none_without_a_word() -> None:
    assert fts_match_expression("++ -- ((") is None
    assert fts_match_expression("") is None


def test_query_terms_drop_stopwords_unless_nothing_else_is_left() -> None:
    assert query_terms("how do I water the tomatoes") == ["water", "tomatoes"]
    assert query_terms("how do I") == ["how", "do", "i"]


def test_query_terms_keep_operator_words_as_plain_words() -> None:
    assert query_terms("NOT near OR") == ["not", "near"]


def test_quote_term_doubles_inner_quotes() -> None:
    assert quote_term('a"b') == '"a""b"'


def test_cjk_grams_split_long_runs_into_trigrams_and_keep_short_runs_apart() -> None:
    trigrams, short = cjk_grams("京都の寺 and 東京")
    assert trigrams == ["京都の", "都の寺"]
    assert short == ["東京"]
    assert has_cjk("京都") and not has_cjk("Kyoto")


def test_trigram_match_expression_quotes_each_trigram() -> None:
    assert trigram_match_expression(["京都の"]) == '"京都の"'
    assert trigram_match_expression([]) is None


def test_bm25_tokens_fold_accents_and_split_cjk_characters() -> None:
    assert bm25_tokens("Café 京都abc") == ["cafe", "京", "都", "abc"]


def test_snippet_centres_on_the_first_query_term() -> None:
    text = "filler " * 100 + "the tomato grows " + "more " * 100
    piece = snippet(text, ["tomato"], width=80)
    assert "tomato" in piece and piece.startswith("…") and piece.endswith("…")
    assert snippet("short text", ["x"]) == "short text"


def test_snippet_finds_another_form_of_the_word_the_stemmed_index_matched() -> None:
    text = "filler " * 100 + "the effect of pruning " + "more " * 100
    assert "effect of pruning" in snippet(text, ["effects"], width=80)
    assert "effect of pruning" in snippet(text, ["pruned"], width=80)
    assert snippet(text, ["absent"], width=80).startswith("filler")


def test_fts_match_expression_requiring_every_word_joins_them_with_and() -> None:
    assert fts_match_expression("sqlite-vec tables", require_all=True) == (
        '"sqlite" AND "vec" AND "tables"'
    )
    assert fts_match_expression("NOT or AND", require_all=True) == '"not"'
    assert fts_match_expression("++", require_all=True) is None
