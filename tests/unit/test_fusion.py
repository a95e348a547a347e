"""Deterministic scores: channel points sum to the score; ordering is total."""

from __future__ import annotations

from askvault.core.fusion import (
    BM25_WEIGHT,
    Candidate, budget_prefix, collapse_pages, context_order_key, corpus_idf, fuse_rankings,
    name_bonuses, rank_contribution, rerank_candidates,
)


def _cand(cid: int, path: str, title: str, text: str = "", *, words: int | None = None,
          vector: int | None = None, aliases: tuple[str, ...] = (),
          headings: tuple[str, ...] = ()) -> Candidate:
    return Candidate(cid, path, title, aliases, headings, text, words_rank=words,
                     words_raw=None if words is None else -1.0 / words, vector_rank=vector,
                     vector_raw=None if vector is None else 0.1 * vector)


def test_fuse_rankings_points_sum_exactly_to_score() -> None:
    cands = [_cand(i, f"n{i}.md", f"Note {i}", words=i, vector=8 - i,
                   aliases=("note",), headings=("Note",)) for i in range(1, 8)]
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
    cands = [_cand(1, "z/b.md", "beta", words=1), _cand(2, "a/b.md", "beta", vector=1),
             _cand(3, "q.md", "Alpha", vector=1)]
    ranked = fuse_rankings(cands, [])
    assert [s.candidate.path for s in ranked] == ["q.md", "a/b.md", "z/b.md"]


def test_fuse_rankings_is_independent_of_input_order() -> None:
    cands = [_cand(i, f"{i}.md", f"T{i % 3}", words=i % 4 + 1, vector=i % 5 + 1) for i in range(12)]
    assert fuse_rankings(cands, ["t1"]) == fuse_rankings(list(reversed(cands)), ["t1"])


def test_name_bonuses_name_the_channels_that_matched() -> None:
    cand = _cand(1, "t.md", "Tomato Growing", aliases=("tomatoes",),
                 headings=("Tomato Growing", "Blossom end rot"))
    bonuses = name_bonuses(["tomato", "growing"], cand)
    assert set(bonuses) == {"title-phrase", "title-term", "heading"}
    assert "alias" in name_bonuses(["tomatoes", "rot"], cand)
    assert name_bonuses([], cand) == {}


def test_rank_contribution_gives_full_weight_at_rank_one() -> None:
    assert rank_contribution(1, 1.0) == 1.0
    assert rank_contribution(2, 1.0) < 1.0


def test_rerank_candidates_lets_exact_terms_win_over_vector_rank() -> None:
    cands = [_cand(1, "a.md", "A", "general gardening advice", vector=1),
             _cand(2, "b.md", "B", "blossom end rot comes from uneven watering", vector=2)]
    cands += [_cand(i, f"{i}.md", "C", "compost and mulch in spring", vector=i)
              for i in range(3, 7)]
    ranked = rerank_candidates(cands, ["blossom", "rot"])
    assert ranked[0].candidate.chunk_id == 2
    assert dict(ranked[0].matched)["bm25"] == BM25_WEIGHT
    for scored in ranked:
        assert round(sum(p for _, p in scored.matched), 4) == scored.score


def test_rerank_candidates_uses_corpus_idf_when_given() -> None:
    cands = [_cand(1, "a.md", "A", "common rare", vector=1),
             _cand(2, "b.md", "B", "common common", vector=2)]
    idf = corpus_idf(1000, {"common": 900, "rare": 1})
    ranked = rerank_candidates(cands, ["common", "rare"], idf=idf)
    assert ranked[0].candidate.chunk_id == 1
    assert idf["rare"] > idf["common"] > 0


def test_collapse_pages_keeps_the_best_chunk_of_each_page() -> None:
    ranked = fuse_rankings([_cand(1, "a.md", "A", words=1), _cand(2, "a.md", "A", words=3),
                            _cand(3, "b.md", "B", words=2)], [])
    assert [s.candidate.chunk_id for s in collapse_pages(ranked)] == [1, 3]


def test_budget_prefix_stops_at_the_first_item_that_does_not_fit() -> None:
    assert budget_prefix([10, 10, 5], 24) == 2
    assert budget_prefix([30, 1], 25) == 0
    assert budget_prefix([], 5) == 0
    assert budget_prefix([5, 5], 10) == 2


def test_context_order_puts_a_title_hit_first_among_equal_scores() -> None:
    keys = [context_order_key(1.0, False, "A", "a.md", 1),
            context_order_key(1.0, True, "Z", "z.md", 2)]
    assert sorted(keys)[0][3] == "z.md"
