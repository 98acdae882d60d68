"""HaluMem's judgment arithmetic: upstream ``eval/evaluation.py`` ``aggregate_eval_results`` and
``memory_type_accuracy`` (our own code, equal to upstream's on recorded vectors:
tests/halumem_upstream.py). Every judgment is an LLM call (:mod:`._judge`); these are the counts
over them (:mod:`._figures` pools a run's records)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MEMORY_TYPES",
    "QA_LABELS",
    "UPDATE_LABELS",
    "aggregate",
    "compute_f1",
    "memory_type_accuracy",
]

#: the labels upstream counts (``aggregate_eval_results``)
UPDATE_LABELS = ("Correct", "Hallucination", "Omission", "Other")
QA_LABELS = ("Correct", "Hallucination", "Omission")
#: the memory point types of upstream's ``memory_type_accuracy`` (``main``'s ``eval_results``)
MEMORY_TYPES = ("Event Memory", "Persona Memory", "Relationship Memory")


def compute_f1(precision: float, recall: float) -> float:
    """Upstream ``compute_f1``: 0.0 when both are 0."""
    if precision + recall == 0:
        return 0.0
    return 2 * (precision * recall) / (precision + recall)


def _ratio(num: float, den: float) -> float | None:
    """``num / den``; None where upstream would raise ZeroDivisionError (nothing to score)."""
    return num / den if den else None


def aggregate(
    integrity: Sequence[Mapping[str, Any]],
    accuracy: Sequence[Mapping[str, Any]],
    update: Sequence[Mapping[str, Any]],
    qa: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Upstream's figures from judged records (fields as upstream names them):
    ``integrity`` {memory_source, importance, memory_integrity_score: 0/1/2 or None},
    ``accuracy`` {memory_accuracy_score: 0/1/2 or None, is_included_in_golden_memories},
    ``update`` {memory_update_type}, ``qa`` {result_type}; ``memory_type_accuracy`` reads
    ``memory_type`` of the integrity and update records. A figure whose denominator is 0 is
    None (upstream raises ZeroDivisionError there)."""
    mi_score = mi_wscore = 0.0
    mi_valid = mi_num = 0
    mi_wvalid = mi_wnum = 0.0
    if_score = if_valid = if_num = 0
    for item in integrity:
        interference = item["memory_source"] == "interference"
        if not interference:
            mi_num += 1
            mi_wnum += item["importance"]
        else:
            if_num += 1
        score = item["memory_integrity_score"]
        if score is None:
            continue
        if not interference:
            if score == 2:
                mi_score += 1
            mi_wscore += 0.5 * score * item["importance"]
            mi_valid += 1
            mi_wvalid += item["importance"]
        else:
            if score == 0:
                if_score += 1
            if_valid += 1
    ta_score = wa_score = 0.0
    ta_valid = ta_num = a_valid = a_num = 0
    for item in accuracy:
        a_num += 1
        target = item["is_included_in_golden_memories"] in ("true", "True")
        if target:
            ta_num += 1
        score = item["memory_accuracy_score"]
        if score is None:
            continue
        if target:
            ta_score += 0.5 * score
            ta_valid += 1
        wa_score += 0.5 * score
        a_valid += 1
    up = dict.fromkeys(UPDATE_LABELS, 0)
    up_num = up_valid = 0
    for item in update:
        up_num += 1
        label = item["memory_update_type"]
        if label in up:
            up[label] += 1
            up_valid += 1
    qa_counts = dict.fromkeys(QA_LABELS, 0)
    qa_num = qa_valid = 0
    for item in qa:
        qa_num += 1
        label = item["result_type"]
        if label in qa_counts:
            qa_counts[label] += 1
            qa_valid += 1
    recall_all = _ratio(mi_score, mi_num)
    target_all = _ratio(ta_score, ta_num)
    return {
        "memory_integrity": {
            "recall(all)": recall_all,
            "recall(valid)": _ratio(mi_score, mi_valid),
            "weighted_recall(all)": _ratio(mi_wscore, mi_wnum),
            "weighted_recall(valid)": _ratio(mi_wscore, mi_wvalid),
        },
        "memory_accuracy": {
            "interference_accuracy(all)": _ratio(if_score, if_num),
            "interference_accuracy(valid)": _ratio(if_score, if_valid),
            "target_accuracy(all)": target_all,
            "target_accuracy(valid)": _ratio(ta_score, ta_valid),
            "weighted_accuracy(all)": _ratio(wa_score, a_num),
            "weighted_accuracy(valid)": _ratio(wa_score, a_valid),
        },
        "memory_extraction_f1": (
            None if recall_all is None or target_all is None else compute_f1(target_all, recall_all)
        ),
        "memory_update": {
            f"{label.lower()}_update_memory_ratio({base})": _ratio(up[label], den)
            for label in UPDATE_LABELS
            for base, den in (("all", up_num), ("valid", up_valid))
        },
        "question_answering": {
            f"{label.lower()}_qa_ratio({base})": _ratio(qa_counts[label], den)
            for label in QA_LABELS
            for base, den in (("all", qa_num), ("valid", qa_valid))
        },
        "memory_type_accuracy": memory_type_accuracy(integrity, update),
    }


def memory_type_accuracy(
    integrity: Sequence[Mapping[str, Any]], update: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, float | None]]:
    """Upstream's ``memory_type_accuracy`` per memory type (Event / Persona / Relationship):
    every integrity record (interference points and unscored ones too) and every update record
    with an ``importance`` key counts once in ``total_num``; ``memory_integrity_acc`` = integrity
    records scored 2 / ``total_num``, ``memory_update_acc`` = update records judged ``Correct`` /
    ``total_num`` (both over the same total), ``memory_acc`` their sum. A type with no record
    has None figures (upstream raises ZeroDivisionError); a record of another type is not
    counted (upstream raises KeyError)."""
    hits = {t: [0, 0, 0] for t in MEMORY_TYPES}  # integrity hits, update hits, total
    for item in integrity:
        row = hits.get(item.get("memory_type"))  # type: ignore[arg-type]
        if row is None or "memory_integrity_score" not in item or "importance" not in item:
            continue
        row[0] += 1 if item["memory_integrity_score"] == 2 else 0
        row[2] += 1
    for item in update:
        row = hits.get(item.get("memory_type"))  # type: ignore[arg-type]
        if row is None or "memory_update_type" not in item or "importance" not in item:
            continue
        row[1] += 1 if item["memory_update_type"] == "Correct" else 0
        row[2] += 1
    out: dict[str, dict[str, float | None]] = {}
    for kind, (mi, mu, total) in hits.items():
        mi_acc, mu_acc = _ratio(mi, total), _ratio(mu, total)
        out[kind] = {
            "memory_integrity_acc": mi_acc,
            "memory_update_acc": mu_acc,
            "total_num": total,
            "memory_acc": None if mi_acc is None or mu_acc is None else mi_acc + mu_acc,
        }
    return out
