"""Lexical answer metrics: LoCoMo's official F1, A-Mem/Mem0 set-F1, EM and BLEU-1, keyword recall.

Rules and edge cases: docs/scoring.md#locomo (LoCoMo, A-Mem/Mem0) and
docs/scoring.md#keyword-recall. All functions are pure and return Python floats.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ._text import _stemmed_counts, simple_tokenize
from ._word_tokenize import word_tokenizer

__all__ = [
    "CATEGORY5_KEYWORDS",
    "Answer",
    "bleu1",
    "exact_match",
    "keyword_recall",
    "locomo_f1",
    "round3",
    "set_f1",
    "token_f1",
]

#: A gold or predicted answer as found in benchmark files (LoCoMo has integer golds; LoCoMo
#: category-5 items may have none).
Answer = str | int | float | None

#: LoCoMo category 5 (adversarial) scores 1 when one of these is a substring of the lower-cased
#: prediction, whatever the gold says.
CATEGORY5_KEYWORDS = ("no information available", "not mentioned")


def round3(x: float) -> float:
    """The official per-question rounding of LoCoMo's pipeline: ``round(x, 3)`` as a float."""
    return float(round(x, 3))


def token_f1(prediction: str, gold: str) -> float:
    """LoCoMo's official ``f1_score``: multiset F1 over stemmed, normalised tokens
    (docs/scoring.md#token-f1).

    Returns 0.0 whenever no token is shared, including when both sides are empty after
    normalisation ("the the the" vs "the" is 0, not 1).
    """
    pred_counts, pred_len = _stemmed_counts(prediction)
    gold_counts, gold_len = _stemmed_counts(gold)
    if pred_len > gold_len:
        small, large = gold_counts, pred_counts
    else:
        small, large = pred_counts, gold_counts
    num_same = 0
    for token, count in small.items():
        other = large.get(token, 0)
        num_same += count if count < other else other
    if num_same == 0:
        return 0.0
    precision = num_same / pred_len
    recall = num_same / gold_len
    return (2 * precision * recall) / (precision + recall)


def _multi_answer_f1(prediction: str, gold: str) -> float:
    """LoCoMo's category-1 ``f1``: split both on ``,``; mean over gold parts of the best part F1."""
    predictions = [p.strip() for p in prediction.split(",")]
    best = [max(token_f1(p, g.strip()) for p in predictions) for g in gold.split(",")]
    if len(best) == 1:
        return best[0]
    # numpy's pairwise summation order, so the value is bit-identical to upstream's np.mean.
    return float(np.mean(best))


def locomo_f1(prediction: str, gold: Answer, category: int) -> float:
    """LoCoMo's official per-question score for one answer, unrounded
    (docs/scoring.md#locomo-per-category-score).

    - category 1 (multi-hop): comma-split mean-of-max F1;
    - category 2 (temporal) and 4 (single-hop): ``token_f1``;
    - category 3 (open-domain): ``token_f1`` against the gold cut at its first ``;``;
    - category 5 (adversarial): 1.0 if "no information available" or "not mentioned" occurs in
      the lower-cased prediction, else 0.0; the gold is ignored and may be ``None``.

    Integer (or float) golds are converted with ``str()``. Any other category raises ValueError,
    as does a missing gold for categories 1-4.
    """
    if category == 5:
        lowered = prediction.lower()
        return 1.0 if any(k in lowered for k in CATEGORY5_KEYWORDS) else 0.0
    if category not in (1, 2, 3, 4):
        raise ValueError(f"LoCoMo category must be 1, 2, 3, 4 or 5, got {category!r}")
    if gold is None:
        raise ValueError(f"LoCoMo category {category} needs a gold answer, got None")
    gold_text = str(gold)
    if category == 1:
        return _multi_answer_f1(prediction, gold_text)
    if category == 3:
        gold_text = gold_text.split(";")[0].strip()
    return token_f1(prediction, gold_text)


def _amem_pair(prediction: Answer, gold: Answer) -> tuple[str, str] | None:
    """A-Mem ``calculate_metrics`` preamble: falsy side -> None, else ``str(x).strip()`` both."""
    if not prediction or not gold:
        return None
    return str(prediction).strip(), str(gold).strip()


def exact_match(prediction: Answer, gold: Answer) -> float:
    """A-Mem/Mem0 exact match: 1.0 iff the stripped, lower-cased strings are equal
    (docs/scoring.md#set-f1-exact-match-and-bleu-1)."""
    pair = _amem_pair(prediction, gold)
    if pair is None:
        return 0.0
    return 1.0 if pair[0].lower() == pair[1].lower() else 0.0


def set_f1(prediction: Answer, gold: Answer) -> float:
    """A-Mem/Mem0 token F1 over *sets* of ``simple_tokenize`` tokens
    (docs/scoring.md#set-f1-exact-match-and-bleu-1).

    No stemming and no article removal; duplicates collapse. 0.0 when either side is falsy
    (empty string, None, 0), either token set is empty, or nothing overlaps.
    """
    pair = _amem_pair(prediction, gold)
    if pair is None:
        return 0.0
    pred_tokens = set(simple_tokenize(pair[0]))
    gold_tokens = set(simple_tokenize(pair[1]))
    if not pred_tokens or not gold_tokens:
        return 0.0
    common = len(pred_tokens & gold_tokens)
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: Answer, gold: Answer) -> float:
    """A-Mem/Mem0 BLEU-1 (docs/scoring.md#set-f1-exact-match-and-bleu-1): nltk ``sentence_bleu`` with weights (1, 0, 0, 0) and
    ``SmoothingFunction().method1`` over ``nltk.word_tokenize`` tokens of the lower-cased text,
    Punkt English sentence split included, as nltk 3.9.1 tokenises (``word_tokenize.py``).

    Falsy inputs and any exception while scoring give 0.0, as upstream; a missing Punkt model
    (``PunktUnavailableError``) is raised, never scored 0.
    """
    pair = _amem_pair(prediction, gold)
    if pair is None:
        return 0.0
    word_tokenizer()  # builds (or fails loudly) outside the upstream catch-all below
    try:
        return bleu1_tokens(_bleu_tokens(pair[0]), _bleu_tokens(pair[1]))
    except Exception:
        return 0.0


@lru_cache(maxsize=1 << 14)
def _bleu_tokens(text: str) -> tuple[str, ...]:
    return tuple(word_tokenizer()(text.lower()))


def bleu1_tokens(hypothesis: Sequence[str], reference: Sequence[str]) -> float:
    """BLEU-1 of one hypothesis against one reference, the exact arithmetic of nltk's
    ``sentence_bleu(weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1)``:
    0 without a clipped unigram match, else ``bp * exp(log(matches / len(hypothesis)))`` with
    ``bp = 1`` when the hypothesis is longer than the reference, else ``exp(1 - r / c)``. The higher
    orders carry weight 0 and the smoothing only touches them, so they add exactly 0.0 to the
    log-sum. Written out because nltk's general path (n-gram generators, Fractions) dominated the
    per-question scoring time; tests compare it with nltk on every vector and on random text."""
    if not hypothesis:
        return 0.0
    ref_counts = Counter(reference)
    matches = sum(min(n, ref_counts[tok]) for tok, n in Counter(hypothesis).items())
    if matches == 0:
        return 0.0
    c, r = len(hypothesis), len(reference)
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(math.log(matches / c))


def _keyword_normalize(text: str) -> str:
    return " ".join(text.lower().split())


def keyword_recall(answer: str, facts: Sequence[str | Sequence[str]]) -> float | None:
    """Offline keyword recall of the user-memory suite (docs/scoring.md#keyword-recall).

    Each fact is a string or a sequence of acceptable variants; it is recalled when any variant,
    lower-cased with whitespace runs collapsed, is a plain substring of the answer normalised the
    same way. Returns recalled / number of facts, or None when there are no facts (such cases
    are skipped, not scored 0).
    """
    if not facts:
        return None
    text = _keyword_normalize(answer)
    found = 0
    for fact in facts:
        variants = (fact,) if isinstance(fact, str) else fact
        if any(_keyword_normalize(v) in text for v in variants):
            found += 1
    return found / len(facts)
