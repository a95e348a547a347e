"""Deterministic scores: channel points sum to the score; ordering is total."""

from __future__ import annotations

import pytest

from askvault.core.fusion import (
    BM25_WEIGHT,
    CARRIED_POINTS,
    VECTOR_SHARE,
    Candidate,
    Scored,
    budget_prefix,
    carry_pages,
    collapse_pages,
    context_order_key,
    corpus_idf,
    coverage_weight,
    fuse_rankings,
    fuse_scores,
    min_max,
    name_bonuses,
    rank_contribution,
    rerank_candidates,
)
from askvault.records import IndexedChunk


def chunk(
    cid: int,
    path: str,
    title: str,
    aliases: tuple[str, ...] = (),
    headings: tuple[str, ...] = (),
    text: str = "",
) -> IndexedChunk:
    """An indexed chunk with only what fusion reads (names and text)."""
    return IndexedChunk(cid, path, title, aliases, (), None, headings, 1, 1, text, (), 0, 0, 0, "")


def _cand(
    cid: int,
    path: str,
    title: str,
    text: str = "",
    *,
    words: int | None = None,
    vector: int | None = None,
    aliases: tuple[str, ...] = (),
    headings: tuple[str, ...] = (),
) -> Candidate:
    return Candidate(
        chunk(cid, path, title, aliases, headings, text),
        words_rank=words,
        words_raw=None if words is None else -1.0 / words,
        vector_rank=vector,
        vector_raw=None if vector is None else 0.1 * vector,
    )


def test_fuse_rankings_points_sum_exactly_to_score() -> None:
    cands = [
        _cand(
            i, f"n{i}.md", f"Note {i}", words=i, vector=8 - i, aliases=("note",), headings=("Note",)
        )
        for i in range(1, 8)
    ]
    for scored in fuse_rankings(cands, ["note", "7"]):
        assert round(sum(p for _, p in scored.matched), 4) == scored.score
        assert all(len(str(p).split(".")[-1]) <= 4 for _, p in scored.matched)


def test_fuse_rankings_rewards_agreement_of_both_rankings() -> None:
    both = _cand(1, "a.md", "A", words=2, vector=2)
    words_only = _cand(2, "b.md", "B", words=1)
    vector_only = _cand(3, "c.md", "C", vector=1)
    order = [s.candidate.chunk_id for s in fuse_rankings([words_only, vector_only, both], [])]
    assert order[0] == 1


def test_fuse_rankings_breaks_ties_by_title_then_path() -> None:
    cands = [
        _cand(1, "z/b.md", "beta", words=1),
        _cand(2, "a/b.md", "beta", vector=1),
        _cand(3, "q.md", "Alpha", vector=1),
    ]
    ranked = fuse_rankings(cands, [])
    assert [s.candidate.path for s in ranked] == ["q.md", "a/b.md", "z/b.md"]


def test_fuse_rankings_is_independent_of_input_order() -> None:
    cands = [_cand(i, f"{i}.md", f"T{i % 3}", words=i % 4 + 1, vector=i % 5 + 1) for i in range(12)]
    assert fuse_rankings(cands, ["t1"]) == fuse_rankings(list(reversed(cands)), ["t1"])


def _scored(
    cid: int, *, words: float | None = None, vector: float | None = None, title: str = "T"
) -> Candidate:
    """A candidate with raw channel scores: bm25 (negative, lower is better), cosine distance."""
    return Candidate(
        chunk(cid, f"{cid}.md", title),
        words_rank=None if words is None else 1,
        words_raw=words,
        vector_rank=None if vector is None else 1,
        vector_raw=vector,
    )


def test_min_max_scales_to_zero_one_and_handles_equal_values() -> None:
    assert min_max({1: 2.0, 2: 4.0, 3: 3.0}) == {1: 0.0, 2: 1.0, 3: 0.5}
    assert min_max({1: 5.0, 2: 5.0}) == {1: 1.0, 2: 1.0}
    assert min_max({}) == {}


def test_fuse_scores_mixes_scaled_scores_by_the_vector_share() -> None:
    cands = [
        _scored(1, words=-10.0, vector=0.2),
        _scored(2, words=-5.0, vector=0.1),
        _scored(3, words=-1.0, vector=0.6),
    ]
    by_id = {s.candidate.chunk_id: s for s in fuse_scores(cands, [])}
    # words: 1 -> 1.0, 2 -> 4/9, 3 -> 0; vector similarity: 1 -> 0.8, 2 -> 1.0, 3 -> 0.4
    assert dict(by_id[1].matched) == {
        "words": round(1 - VECTOR_SHARE, 4),
        "vector": round(VECTOR_SHARE * 0.8, 4),
    }
    assert dict(by_id[2].matched)["vector"] == round(VECTOR_SHARE, 4)
    assert "words" not in dict(by_id[3].matched) and "vector" not in dict(by_id[3].matched)
    assert by_id[3].score == 0.0
    for scored in by_id.values():
        assert round(sum(p for _, p in scored.matched), 4) == scored.score


def test_fuse_scores_counts_how_far_ahead_a_hit_is_not_only_its_place() -> None:
    # Rank fusion sees two rankings in which 1 and 2 swap places, a tie it settles by title;
    # scores show that 1 leads the words channel by far and trails the vectors by a hair.
    cands = [
        _scored(1, words=-20.0, vector=0.30, title="B"),
        _scored(2, words=-2.0, vector=0.29, title="A"),
        _scored(3, words=-1.0, vector=0.9, title="C"),
    ]
    assert fuse_scores(cands, [])[0].candidate.chunk_id == 1


def test_fuse_scores_gives_nothing_from_a_channel_that_missed_the_chunk() -> None:
    only_words = _scored(1, words=-3.0)
    only_vector = _scored(2, vector=0.1)
    ranked = fuse_scores([only_words, only_vector, _scored(3, words=-1.0, vector=0.5)], [])
    by_id = {s.candidate.chunk_id: dict(s.matched) for s in ranked}
    assert set(by_id[1]) == {"words"} and set(by_id[2]) == {"vector"}
    assert ranked == fuse_scores(
        list(reversed([only_words, only_vector, _scored(3, words=-1.0, vector=0.5)])), []
    )


def test_min_max_leaves_out_non_finite_values_and_clamps_to_a_reference() -> None:
    nan, inf = float("nan"), float("inf")
    assert min_max({1: 1.0, 2: nan, 3: 3.0, 4: -inf}) == {1: 0.0, 3: 1.0}
    assert min_max({1: nan}) == {}
    assert min_max({1: 0.0, 2: 5.0, 3: 10.0}, reference=[5.0, 10.0]) == {1: 0.0, 2: 0.0, 3: 1.0}


def test_fuse_scores_gives_no_points_for_a_non_finite_score_and_does_not_fail() -> None:
    cands = [
        _scored(1, words=-3.0, vector=float("nan")),
        _scored(2, words=float("-inf"), vector=0.2),
        _scored(3, words=-1.0, vector=0.4),
    ]
    by_id = {s.candidate.chunk_id: dict(s.matched) for s in fuse_scores(cands, [])}
    assert "vector" not in by_id[1] and "words" in by_id[1]
    assert "words" not in by_id[2] and "vector" in by_id[2]


def test_fuse_scores_with_a_scale_depth_is_not_moved_by_weaker_extra_candidates() -> None:
    def ranked(cands: list[Candidate]) -> list[Candidate]:
        return [
            Candidate(
                chunk(c.chunk_id, c.path, c.title),
                words_rank=i + 1,
                words_raw=c.words_raw,
                vector_rank=i + 1,
                vector_raw=c.vector_raw,
            )
            for i, c in enumerate(cands)
        ]

    head = [
        _scored(1, words=-9.0, vector=0.10),
        _scored(2, words=-8.0, vector=0.30),
        _scored(3, words=-2.0, vector=0.12),
        _scored(4, words=-1.0, vector=0.20),
    ]
    tail = [_scored(10 + i, words=-0.1, vector=1.9) for i in range(6)]
    short = fuse_scores(ranked(head), [], scale_depth=4)
    long = fuse_scores(ranked(head + tail), [], scale_depth=4)
    assert [(s.candidate.chunk_id, s.score) for s in long[:4]] == [
        (s.candidate.chunk_id, s.score) for s in short
    ]
    assert all(s.score == 0.0 for s in long[4:])


def test_fuse_scores_explains_raw_rank_and_scaled_values() -> None:
    scored = fuse_scores([_scored(1, words=-4.0, vector=0.2), _scored(2, words=-2.0)], [])[0]
    assert scored.trace["words"] == {
        "raw": -4.0,
        "rank": 1,
        "scaled": 1.0,
        "points": round(1 - VECTOR_SHARE, 4),
    }
    assert scored.trace["vector"]["scaled"] == 1.0


def test_name_bonuses_name_the_channels_that_matched() -> None:
    cand = _cand(
        1,
        "t.md",
        "Tomato Growing",
        aliases=("tomatoes",),
        headings=("Tomato Growing", "Blossom end rot"),
    )
    bonuses = name_bonuses(["tomato", "growing"], cand)
    assert set(bonuses) == {"title-phrase", "title-term", "heading"}
    assert "alias" in name_bonuses(["tomatoes", "rot"], cand)
    assert name_bonuses([], cand) == {}


def test_rank_contribution_gives_full_weight_at_rank_one() -> None:
    assert rank_contribution(1, 1.0) == 1.0
    assert rank_contribution(2, 1.0) < 1.0


def test_rerank_candidates_lets_exact_terms_win_over_vector_rank() -> None:
    cands = [
        _cand(1, "a.md", "A", "general gardening advice", vector=1),
        _cand(2, "b.md", "B", "blossom end rot comes from uneven watering", vector=2),
    ]
    cands += [
        _cand(i, f"{i}.md", "C", "compost and mulch in spring", vector=i) for i in range(3, 7)
    ]
    ranked = rerank_candidates(cands, ["blossom", "rot"])
    assert ranked[0].candidate.chunk_id == 2
    assert dict(ranked[0].matched)["bm25"] == BM25_WEIGHT
    for scored in ranked:
        assert round(sum(p for _, p in scored.matched), 4) == scored.score


def test_rerank_candidates_scores_the_tokens_it_is_given() -> None:
    cands = [
        _cand(1, "a.md", "A", "effects of drugs", vector=3),
        _cand(2, "b.md", "B", "nothing relevant", vector=1),
        _cand(3, "c.md", "C", "other words", vector=2),
    ]
    # Stemmed tokens (as the word index makes them) match a query worded differently.
    ranked = rerank_candidates(
        cands,
        ["effect"],
        tokens=[["effect", "of", "drug"], ["noth", "relev"], ["other", "word"]],
        query_tokens=["effect"],
    )
    assert "bm25" in dict(next(s for s in ranked if s.candidate.chunk_id == 1).matched)
    unstemmed = rerank_candidates(cands, ["effect"])
    assert "bm25" not in dict(unstemmed[0].matched)


def test_rerank_candidates_uses_corpus_idf_when_given() -> None:
    cands = [
        _cand(1, "a.md", "A", "common rare", vector=1),
        _cand(2, "b.md", "B", "common common", vector=2),
    ]
    idf = corpus_idf(1000, {"common": 900, "rare": 1})
    ranked = rerank_candidates(cands, ["common", "rare"], idf=idf)
    assert ranked[0].candidate.chunk_id == 1
    assert idf["rare"] > idf["common"] > 0


def test_collapse_pages_keeps_the_best_chunk_of_each_page() -> None:
    ranked = fuse_rankings(
        [
            _cand(1, "a.md", "A", words=1),
            _cand(2, "a.md", "A", words=3),
            _cand(3, "b.md", "B", words=2),
        ],
        [],
    )
    assert [s.candidate.chunk_id for s in collapse_pages(ranked)] == [1, 3]


def _ranked_pages() -> list[Scored]:
    return fuse_rankings(
        [
            _cand(1, "a.md", "A", words=1, vector=1),
            _cand(2, "b.md", "B", words=2, vector=2),
            _cand(3, "b.md", "B", words=5),
            _cand(4, "c.md", "C", words=3, vector=3),
            _cand(5, "d.md", "D", words=4, vector=4),
        ],
        [],
    )


def test_carried_pages_earn_points_falling_with_their_place_on_every_chunk_of_theirs() -> None:
    ranked = _ranked_pages()
    before = {s.candidate.chunk_id: s.score for s in ranked}
    carried = {s.candidate.chunk_id: s for s in carry_pages(ranked, ["d.md", "b.md"])}
    assert dict(carried[5].matched)["carried"] == CARRIED_POINTS
    assert dict(carried[2].matched)["carried"] == CARRIED_POINTS / 2
    assert dict(carried[3].matched)["carried"] == CARRIED_POINTS / 2  # each chunk of the page
    assert carried[5].trace["carried"] == {"raw": None, "rank": 1, "points": CARRIED_POINTS}
    for cid, item in carried.items():
        assert round(sum(p for _, p in item.matched), 4) == item.score
        if cid in (1, 4):  # not carried: untouched
            assert item.score == before[cid] and "carried" not in dict(item.matched)


def test_carried_pages_are_candidates_not_a_cage() -> None:
    ranked = _ranked_pages()
    out = carry_pages(ranked, ["z.md", "d.md", "d.md"], points=1.0)
    # A carried page the search did not find is not added; a repeated one counts once,
    # at its first place; the others keep their places among themselves.
    assert [s.candidate.chunk_id for s in out] == [5, 1, 2, 4, 3]
    assert dict(out[0].matched)["carried"] == 0.5
    assert carry_pages(ranked, []) == ranked


def test_budget_prefix_stops_at_the_first_item_that_does_not_fit() -> None:
    assert budget_prefix([10, 10, 5], 24) == 2
    assert budget_prefix([30, 1], 25) == 0
    assert budget_prefix([], 5) == 0
    assert budget_prefix([5, 5], 10) == 2


def test_context_order_puts_a_title_hit_first_among_equal_scores() -> None:
    keys = [
        context_order_key(1.0, False, "A", "a.md", 1),
        context_order_key(1.0, True, "Z", "z.md", 2),
    ]
    assert sorted(keys)[0][3] == "z.md"


# -- a partly embedded index: the vector side scaled by the share of chunks with vectors ----


def _partial() -> list[Candidate]:
    """A strong word hit without a vector, and a weak word hit whose chunk has one (the
    only vector candidate: min-max gives it the channel's full points)."""
    return [
        _scored(1, words=-12.0, title="Strong"),
        _scored(2, words=-1.0, vector=0.8, title="Weak"),
    ]


def test_fuse_scores_at_full_vector_weight_is_the_fusion_unchanged() -> None:
    cands = _partial()
    assert fuse_scores(cands, [], vector_weight=1.0) == fuse_scores(cands, [])
    ranked = fuse_scores(cands, [])
    assert [s.candidate.chunk_id for s in ranked] == [2, 1]  # the weak embedded chunk leads


def test_fuse_scores_scales_only_the_vector_points_by_the_weight() -> None:
    full = {s.candidate.chunk_id: dict(s.matched) for s in fuse_scores(_partial(), [])}
    scaled = fuse_scores(_partial(), [], vector_weight=0.25)
    by_id = {s.candidate.chunk_id: dict(s.matched) for s in scaled}
    assert by_id[2]["vector"] == round(full[2]["vector"] * 0.25, 4)
    assert by_id[1]["words"] == full[1]["words"]  # the words keep their points
    assert [s.candidate.chunk_id for s in scaled] == [1, 2]  # the strong word hit leads
    for s in scaled:
        assert round(sum(p for _, p in s.matched), 4) == s.score


def test_fuse_scores_with_no_vector_weight_ranks_by_words_and_names_alone() -> None:
    cands = _partial()
    without = fuse_scores(cands, ["weak"], vector_weight=0.0)
    assert all("vector" not in dict(s.matched) for s in without)
    no_vectors = [Candidate(c.chunk, words_rank=c.words_rank, words_raw=c.words_raw) for c in cands]
    assert [(s.candidate.chunk_id, s.score) for s in without] == [
        (s.candidate.chunk_id, s.score) for s in fuse_scores(no_vectors, ["weak"])
    ]


def test_rank_fusion_and_rerank_scale_the_vector_points_too() -> None:
    cands = [_cand(1, "a.md", "A", words=1), _cand(2, "b.md", "B", words=2, vector=1)]
    full = {s.candidate.chunk_id: dict(s.matched) for s in fuse_rankings(cands, [])}
    half = {
        s.candidate.chunk_id: dict(s.matched) for s in fuse_rankings(cands, [], vector_weight=0.5)
    }
    assert half[2]["vector"] == round(full[2]["vector"] / 2, 4)
    assert half[2]["words"] == full[2]["words"]
    assert fuse_rankings(cands, [], vector_weight=1.0) == fuse_rankings(cands, [])
    docs = [
        _cand(1, "a.md", "A", "blossom rot", words=1),
        _cand(2, "b.md", "B", "leaf curl", vector=1),
        _cand(3, "c.md", "C", "aphids", vector=2),
    ]
    reranked = {
        s.candidate.chunk_id: dict(s.matched)
        for s in rerank_candidates(docs, ["rot"], vector_weight=0.0)
    }
    assert reranked[2] == {} and "bm25" in reranked[1]
    assert rerank_candidates(docs, ["rot"], vector_weight=1.0) == rerank_candidates(docs, ["rot"])
    assert "vector" in dict(rerank_candidates(docs, ["rot"])[1].matched)


def test_the_vector_weight_is_the_square_of_the_share_of_chunks_with_vectors() -> None:
    assert coverage_weight(0.0) == 0.0  # none embedded: words only
    assert coverage_weight(1.0) == 1.0  # all embedded: the fusion exactly as before
    assert coverage_weight(0.5) == 0.25
    assert coverage_weight(0.1) == pytest.approx(0.01)
    weights = [coverage_weight(i / 20) for i in range(21)]
    assert weights == sorted(weights)  # more vectors never weigh less
    assert coverage_weight(-0.2) == 0.0 and coverage_weight(1.3) == 1.0  # clamped
    assert coverage_weight(float("nan")) == 0.0
