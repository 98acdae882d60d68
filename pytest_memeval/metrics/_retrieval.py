"""Retrieval metrics: LoCoMo evidence recall and LongMemEval recall@k / nDCG@k.

Rules: docs/scoring.md#evidence-recall (LoCoMo ``eval_question_answering`` recall) and
docs/scoring.md#retrieval-metrics (LongMemEval ``src/retrieval/eval_utils.py``).
``evaluate_retrieval`` and ``evaluate_retrieval_turn2session`` take upstream's inputs (rankings as
corpus indices) and give upstream's numbers; the ``*_at_k`` functions take ranked ids, the shape
memory systems produce.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

__all__ = [
    "dcg",
    "evaluate_retrieval",
    "evaluate_retrieval_turn2session",
    "evidence_recall",
    "ndcg_any_at_k",
    "recall_all_at_k",
    "recall_any_at_k",
]


def evidence_recall(
    retrieved_ids: Sequence[str] | None,
    evidence_ids: Sequence[str],
    valid_ids: Collection[str] | None = None,
) -> float:
    """LoCoMo's per-question evidence recall (docs/scoring.md#evidence-recall).

    ``valid_ids``: the ids a retrieval can really return (the conversation's turn and session
    ids); a retrieved id outside it, or a part of a comma-joined one, is dropped first, so a
    memory citing ids that do not exist in the conversation counts for nothing. None: all count
    (upstream's inputs, where the context ids come from the conversation itself).

    - ``retrieved_ids`` None (no retrieval context recorded) or empty ``evidence_ids`` -> 1.0.
    - If the first retrieved id starts with ``S`` (session-summary retrieval, ids ``S<n>``): an
      evidence id ``D<s>:<t>`` counts when ``S<s>`` was retrieved (upstream compares
      ``e.split(':')[0][1:]`` with the retrieved ids minus their first character).
    - Otherwise (dialog / observation ids): an evidence id counts when it appears verbatim among
      the retrieved ids; a retrieved comma-joined observation id is split on ``,`` first.

    Malformed evidence strings (``"D8:6; D9:17"``, ``"D"``) never equal a dialog id, so they never
    count in the dialog branch. In the session branch upstream keeps only the text between the
    leading character and the first ``:`` (``"D8:6; D9:17"`` -> session ``8``) and so do we.
    An empty retrieved list scores 0.0 (upstream would raise IndexError).
    """
    if retrieved_ids is None or len(evidence_ids) == 0:
        return 1.0
    if valid_ids is not None:
        kept: list[str] = []
        for c in retrieved_ids:
            parts = [p.strip() for p in c.split(",")] if "," in c else [c]
            kept.extend(p for p in parts if p in valid_ids)
        retrieved_ids = kept
    if len(retrieved_ids) == 0:
        return 0.0
    if retrieved_ids[0].startswith("S"):
        sessions = {c[1:] for c in retrieved_ids}
        hits = sum(1 for e in evidence_ids if e.split(":")[0][1:] in sessions)
    else:
        context: set[str] = set()
        for c in retrieved_ids:
            if "," in c:
                context.update(part.strip() for part in c.split(","))
            else:
                context.add(c)
        hits = sum(1 for e in evidence_ids if e in context)
    return float(hits) / len(evidence_ids)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def recall_any_at_k(ranked_ids: Sequence[str], correct_ids: Collection[str], k: int) -> float:
    """1.0 if any correct id is among the top ``k`` ranked ids, else 0.0 (also with none)."""
    _check_k(k)
    top = set(ranked_ids[:k])
    return float(any(c in top for c in correct_ids))


def recall_all_at_k(ranked_ids: Sequence[str], correct_ids: Collection[str], k: int) -> float:
    """1.0 if every correct id is among the top ``k`` ranked ids (vacuously 1.0 with none)."""
    _check_k(k)
    top = set(ranked_ids[:k])
    return float(all(c in top for c in correct_ids))


def dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG@k: r1 + sum_{p=2..k} r_p / log2(p) (positions 1 and 2 both weigh 1)."""
    values = np.asarray(relevances, dtype=float)[:k]
    if values.size:
        return float(values[0] + np.sum(values[1:] / np.log2(np.arange(2, values.size + 1))))
    return 0.0


def ndcg_any_at_k(
    ranked_ids: Sequence[str],
    correct_ids: Collection[str],
    k: int,
    corpus_ids: Sequence[str] | None = None,
) -> float:
    """LongMemEval's ``ndcg_any@k`` over ranked ids (docs/scoring.md#retrieval-metrics).

    Relevance of an entry is 1 when its id is correct (duplicates each count). The ideal DCG is
    that of all relevances of ``corpus_ids`` sorted descending, exactly as upstream; without
    ``corpus_ids`` the corpus is taken to be ``ranked_ids`` plus one entry for each correct id
    that was not retrieved at all (equal to upstream whenever ``ranked_ids`` ranks the whole
    corpus). 0.0 when the ideal DCG is 0.
    """
    _check_k(k)
    correct = correct_ids if isinstance(correct_ids, (set, frozenset)) else set(correct_ids)
    actual = [1 if d in correct else 0 for d in ranked_ids[:k]]
    if corpus_ids is not None:
        ideal = sorted((1 if d in correct else 0 for d in corpus_ids), reverse=True)
    else:
        present = set(ranked_ids)
        n_relevant = sum(1 for d in ranked_ids if d in correct)
        n_relevant += sum(1 for c in correct if c not in present)
        ideal = [1] * n_relevant
    ideal_dcg = dcg(ideal, k)
    if ideal_dcg == 0:
        return 0.0
    return dcg(actual, k) / ideal_dcg


def evaluate_retrieval(
    rankings: Sequence[int],
    correct_docs: Collection[str],
    corpus_ids: Sequence[str],
    k: int = 10,
) -> dict[str, float]:
    """LongMemEval's ``evaluate_retrieval``: rankings are corpus indices, best first.

    Returns ``{"recall_any": ..., "recall_all": ..., "ndcg_any": ...}`` at cut-off ``k``.
    """
    ranked_ids = [corpus_ids[i] for i in rankings]
    return {
        "recall_any": recall_any_at_k(ranked_ids, correct_docs, k),
        "recall_all": recall_all_at_k(ranked_ids, correct_docs, k),
        "ndcg_any": ndcg_any_at_k(ranked_ids, correct_docs, k, corpus_ids=corpus_ids),
    }


def _strip_turn_id(doc_id: str) -> str:
    return "_".join(doc_id.split("_")[:-1])


def evaluate_retrieval_turn2session(
    rankings: Sequence[int],
    correct_docs: Collection[str],
    corpus_ids: Sequence[str],
    k: int = 10,
) -> dict[str, float]:
    """LongMemEval's turn-level ranking scored at session level (docs/scoring.md#retrieval-metrics).

    The last ``_<k>`` is stripped from every id; the cut-off grows from ``k`` until the top
    entries hold ``k`` distinct sessions (or it passes the corpus size); then
    ``evaluate_retrieval`` is applied with that cut-off to the session ids.
    """
    _check_k(k)
    session_correct = sorted({_strip_turn_id(d) for d in correct_docs})
    session_ids = [_strip_turn_id(d) for d in corpus_ids]
    effective_k = k
    unique = {session_ids[i] for i in rankings[:effective_k]}
    while effective_k <= len(session_ids) and len(unique) < k:
        effective_k += 1
        unique = {session_ids[i] for i in rankings[:effective_k]}
    return evaluate_retrieval(rankings, session_correct, session_ids, effective_k)
