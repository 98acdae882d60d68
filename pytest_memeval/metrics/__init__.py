"""Pure metric maths: answer normalisation, F1 variants, BLEU-1, keyword recall, event ordering,
rubric aggregation and retrieval recall / nDCG. No pytest, no I/O, no LLM calls.

Every function reproduces the published scorer named in its docstring (rules and edge cases:
docs/scoring.md); golden vectors computed by running the upstream scorers are checked in
``tests/unit/metrics/test_metrics.py``.
"""

from __future__ import annotations

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
    "normalize_answer",
    "nugget_score",
    "official_nugget_score",
    "ordering_score",
    "recall_all_at_k",
    "recall_any_at_k",
    "response_lines",
    "round3",
    "set_f1",
    "simple_tokenize",
    "stem",
    "stemmed_tokens",
    "token_f1",
]
