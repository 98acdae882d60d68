"""Pure metric maths: answer normalisation, F1 variants, BLEU-1, keyword recall, event ordering,
rubric aggregation and retrieval recall / nDCG. No pytest, no I/O, no LLM calls.

Every function reproduces the published scorer named in its docstring (rules and edge cases:
docs/scoring.md); golden vectors computed by running the upstream scorers are checked in
``tests/unit/metrics/test_metrics.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._lexical import (
    CATEGORY5_KEYWORDS,
    Answer,
    bleu1,
    exact_match,
    keyword_recall,
    locomo_f1,
    round3,
    set_f1,
    token_f1,
)
from ._ordering import (
    NuggetScore,
    OrderingResult,
    case_insensitive_equal,
    nugget_score,
    official_nugget_score,
    ordering_score,
    response_lines,
)
from ._retrieval import (
    dcg,
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    evidence_recall,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
)
from ._text import clear_caches, normalize_answer, simple_tokenize, stem, stemmed_tokens

if TYPE_CHECKING:
    from ._word_tokenize import nltk_tokenizers, provenance, word_tokenizer


__all__ = [
    "CATEGORY5_KEYWORDS",
    "Answer",
    "NuggetScore",
    "OrderingResult",
    "bleu1",
    "case_insensitive_equal",
    "clear_caches",
    "dcg",
    "evaluate_retrieval",
    "evaluate_retrieval_turn2session",
    "evidence_recall",
    "exact_match",
    "keyword_recall",
    "locomo_f1",
    "ndcg_any_at_k",
    "nltk_tokenizers",
    "normalize_answer",
    "nugget_score",
    "official_nugget_score",
    "ordering_score",
    "provenance",
    "recall_all_at_k",
    "recall_any_at_k",
    "response_lines",
    "round3",
    "set_f1",
    "simple_tokenize",
    "stem",
    "stemmed_tokens",
    "token_f1",
    "word_tokenizer",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "nltk_tokenizers": "._word_tokenize",
    "provenance": "._word_tokenize",
    "word_tokenizer": "._word_tokenize",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
