"""Recognising a reply (or a sentence of one) that says the notes lack the answer.

Pure. Small models rarely write the fixed sentence they are asked for: they say "The
wifi password is not mentioned in the provided excerpts", "I couldn't find any
information about ...", or answer in the question's language ("Die Notizen enthalten
keine Antwort"). A refusal sentence is not a claim to check; a reply whose only
sentences are refusals (or whose checked claims are all unsupported) is a no-answer.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# English: "... not mentioned / not contain / no information / cannot answer / don't know".
_EN = (
    r"(?:\bnot|\bnever|n't)\s+(?:explicitly\s+|directly\s+|specifically\s+)?"
    r"(?:mention(?:ed)?|contain(?:ed)?|include[sd]?|provide[sd]?|state[sd]?|say|said|specif(?:y|ied)|"
    r"cover(?:ed)?|address(?:ed)?|discuss(?:ed)?|answer(?:ed)?|found|available|given|known|"
    r"describe[sd]?|indicate[sd]?)\b",
    r"\bno\s+(?:specific\s+|relevant\s+|such\s+|further\s+|mention|information|details?|answer|"
    r"data|excerpt|note)\b",
    r"\b(?:cannot|can\s*not|can't|could\s*not|couldn't|unable\s+to|am\s+not\s+able\s+to)\s+"
    r"(?:find|answer|determine|tell|provide|say|help|locate|see)\b",
    r"\bi\s+(?:do\s*n[o']t|don't)\s+know\b",
    r"\bthere\s+is\s+nothing\b",
    r"\b(?:does|do)\s+not\s+(?:appear|seem)\s+to\b",
    r"\bis\s+not\s+(?:possible\s+to\s+(?:answer|determine|tell))\b",
    r"\boutside\s+(?:the\s+)?(?:scope|notes|excerpts)\b",
)
_OTHER = (
    # German
    r"\b(?:nicht|keine?n?)\s+(?:\w+\s+){0,3}(?:erwähnt|enthalten|enthält|angegeben|beantwortet|"
    r"informationen|antwort|hinweise?)\b",
    r"\b(?:enthalten|enthält|nennen|nennt)\s+(?:\w+\s+){0,3}(?:keine?n?|nicht)\b",
    # French
    r"\bne\s+(?:\w+\s+){0,3}(?:pas|aucune?|rien)\b",
    r"\baucune\s+(?:information|réponse|mention)\b",
    # Spanish, Portuguese, Italian
    r"\bno\s+(?:\w+\s+){0,3}(?:contienen?|mencionan?|incluyen?|hay|se\s+menciona|contêm|contém|"
    r"mencionam|menciona|contengono|contiene|menzionano|indicano)\b",
    r"\b(?:ninguna|ningún|nenhuma|nenhum|nessuna|nessun)\s+(?:\w+\s+){0,2}"
    r"(?:información|respuesta|informação|resposta|informazione|risposta)\b",
    r"\bnão\s+(?:\w+\s+){0,3}(?:contêm|contém|mencionam|menciona|há)\b",
    r"\bnon\s+(?:\w+\s+){0,3}(?:contengono|contiene|menzionano|menziona|c'è|ci sono)\b",
    # Dutch
    r"\b(?:bevatten|bevat|noemen|vermelden)\s+(?:\w+\s+){0,3}(?:geen|niet)\b",
    r"\bgeen\s+(?:informatie|antwoord)\b",
    # Chinese, Japanese
    r"(?:没有|未|不)(?:提到|提及|包含|说明|涉及)|无法(?:回答|确定)|(?:記載|言及|情報)(?:が|は)?(?:ありません|されていません)",
)
_REFUSAL = re.compile("|".join(_EN + _OTHER), re.IGNORECASE)
# A refusal is about the notes or about knowing: one of these words must be near.
_ABOUT_SOURCES = re.compile(
    r"\b(?:notes?|excerpts?|provided|context|information|documents?|texts?|sources?|"
    r"vault|answer|know|find|notizen|auszüge|informationen|antwort|notes|extraits|"
    r"informations?|réponse|notas|fragmentos|información|respuesta|informação|resposta|"
    r"appunti|estratti|informazioni|risposta|notities|informatie|antwoord)\b"
    r"|笔记|摘录|信息|ノート|情報",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
# A sentence longer than this is an answer that happens to hold a negation.
REFUSAL_MAX_WORDS = 30


def is_refusal(sentence: str) -> bool:
    """True when `sentence` says the notes (or the model) do not have the answer."""
    text = sentence.casefold()
    if len(text.split()) > REFUSAL_MAX_WORDS:
        return False
    return bool(_REFUSAL.search(text) and _ABOUT_SOURCES.search(text))


def is_no_answer(reply: str) -> bool:
    """True when every sentence of `reply` that says anything is a refusal."""
    sentences = [s.strip() for s in _SENTENCE.findall(reply) if re.search(r"\w", s)]
    return bool(sentences) and all(is_refusal(s) for s in sentences)


# Retrieval's absolute signal: the cosine distance from the question to the nearest chunk
# of the vault (0 = same direction). Far from everything, the vault has nothing on the
# question, whatever the model makes of the nearest excerpts. Distances depend on the
# embedding model, so a cut-off is applied where it was measured (docs/benchmarks.md:
# all-minilm on 79 questions over the Obsidian Help vault, the farthest answerable question
# at 0.54, the published near misses at 0.47-0.61; nomic-embed-text's 0.31 is where, on six
# read answer sets, its abstention and false abstention come within 0.05 of all-minilm's at
# 0.58: docs/decisions.md, "nomic-embed-text's cut-off: 0.31"), where the user set one, or
# where the vault calibrated one.
MEASURED_MAX_DISTANCE = {"all-minilm": 0.58, "nomic-embed-text": 0.31}

CutoffSource = Literal["setting", "measured", "calibrated", "none"]


def model_key(embed_model: str) -> str:
    """The name a cut-off is measured under: `All-MiniLM:l6-v2` -> `all-minilm`."""
    return embed_model.split(":", 1)[0].strip().lower()


def measured_cutoff(embed_model: str) -> float | None:
    """The cut-off measured for the embedding model (its name without tag), else None."""
    return MEASURED_MAX_DISTANCE.get(model_key(embed_model))


@dataclass(frozen=True)
class Calibration:
    """A cut-off the vault calibrated for one model's vectors (services/index/calibration.py)."""

    fingerprint: str  # the vectors' fingerprint key (model, digest, dimension)
    cutoff: float | None  # None: fewer than CALIBRATION_MIN titles had a distance
    titles: int  # the held-out distances it rests on (too few: the titles there were)
    notes: int  # the vault's notes when it was made
    chunking: str  # how the notes were cut then (services/index/indexer.chunking_key)


@dataclass(frozen=True)
class Cutoff:
    """The distance cut-off in force and where it comes from."""

    value: float | None
    source: CutoffSource
    detail: str  # says where it comes from: "measured for all-minilm", "none yet: ..."

    @property
    def reason_words(self) -> str:
        """How a withheld answer's reason names it: "the 0.58 {reason_words}"."""
        if self.source == "setting":
            return "of `queries.max_distance`"
        return f"{self.detail} (`queries.max_distance` sets another)"


def cutoff_in_force(
    setting: float, embed_model: str, calibration: Calibration | None = None
) -> Cutoff:
    """The cut-off in force: `setting` when set (> 0), else the measured one for the
    embedding model, else the vault's `calibration` of its vectors, else none."""
    if setting > 0:
        return Cutoff(setting, "setting", "set by queries.max_distance")
    measured = measured_cutoff(embed_model)
    if measured is not None:
        return Cutoff(measured, "measured", f"measured for {model_key(embed_model)}")
    if calibration is None:
        return Cutoff(
            None, "none", "none yet: calibrated once every chunk of the vault has a vector"
        )
    if calibration.cutoff is None:
        return Cutoff(
            None,
            "none",
            f"none: {calibration.titles} note titles to calibrate from, "
            f"{CALIBRATION_MIN} are needed",
        )
    return Cutoff(
        calibration.cutoff, "calibrated", f"calibrated from {calibration.titles} note titles"
    )


def distance_cutoff(
    setting: float, embed_model: str, calibration: Calibration | None = None
) -> float | None:
    """The value of `cutoff_in_force` (None: no gate)."""
    return cutoff_in_force(setting, embed_model, calibration).value


# The distance to the nearest chunk says "nothing in the vault is about this" only when
# (nearly) every chunk has a vector: during a first index, or right after many notes came
# in, the chunk that answers may have none yet, and the nearest one with a vector is far
# (seen: 0.61-0.92 with 0-6% embedded, all three questions withheld as "far from every
# note"). Below this share the gate waits; the checks of the reply still decide.
GATE_MIN_SHARE = 0.95


def gate_applies(vector_share: float | None) -> bool:
    """Whether the distance gate may withhold a reply: the active vectors cover at least
    GATE_MIN_SHARE of the chunks (None, no share measured: it may)."""
    return vector_share is None or vector_share >= GATE_MIN_SHARE


def too_far(nearest_distance: float | None, cutoff: float | None) -> bool:
    """True when the nearest chunk is farther from the question than `cutoff` allows
    (never when either is unknown: words-only search, or no cut-off in force)."""
    return nearest_distance is not None and cutoff is not None and nearest_distance > cutoff


# Self-calibration, for a model never measured: note titles asked as queries, each held out
# from its own note, land at the distance of "a question on the vault's topics whose own
# page is missing". The cut-off is a high quantile of those distances: a question farther
# from every chunk than most held-out titles are has nothing in the vault. The sample is
# drawn with a fixed seed, so a vault calibrates to the same value every time (and to the
# value bench/abstention_bench.py reports for it).
CALIBRATION_SAMPLE = 120
CALIBRATION_MIN = 20
CALIBRATION_QUANTILE = 0.95
CALIBRATION_SEED = 22
# A calibration is made again when the vault's notes have changed in number by more than
# this share since (or the model, its vectors or the chunking changed): not on every edit.
CALIBRATION_REFRESH_SHARE = 0.25


def calibration_sample(
    paths: Sequence[str], *, size: int = CALIBRATION_SAMPLE, seed: int = CALIBRATION_SEED
) -> list[str]:
    """The notes whose titles calibrate the cut-off: `size` of `paths`, drawn with `seed`
    from their sorted order (the same paths always give the same sample)."""
    chosen = sorted(set(paths))
    random.Random(seed).shuffle(chosen)
    return chosen[:size]


def calibration_due(
    stored: Calibration | None, *, fingerprint: str, chunking: str, notes: int
) -> bool:
    """True when the vault should calibrate again: nothing stored for these vectors, the
    notes were cut another way since, or their number moved by more than
    CALIBRATION_REFRESH_SHARE."""
    if stored is None or stored.fingerprint != fingerprint or stored.chunking != chunking:
        return True
    return abs(notes - stored.notes) > CALIBRATION_REFRESH_SHARE * max(stored.notes, 1)


def calibrated_cutoff(
    held_out: Sequence[float], *, quantile: float = CALIBRATION_QUANTILE
) -> float | None:
    """The cut-off the vault calibrates by itself: the `quantile` of `held_out` (each a
    title-as-query's cosine distance to the nearest chunk of another note), or None when
    fewer than CALIBRATION_MIN finite distances are known."""
    values = sorted(d for d in held_out if math.isfinite(d))
    if len(values) < CALIBRATION_MIN:
        return None
    position = quantile * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)
