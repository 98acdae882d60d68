"""Throughput of LoCoMo's official F1: a plain implementation vs ``pytest_memeval.metrics``.

Run ``python perf/bench_f1.py`` (reads ``$MEMEVAL_DATA_DIR/locomo/locomo10.json``, default
``../shared/data`` next to the repository root). Every one of the 1,986 questions is scored
twice: its gold against itself, and against a deterministic pseudo-prediction (another
question's answer plus a few words, sometimes an abstention phrase). Both implementations must
give identical floats; the table shows the two timings side by side from the same run.

The plain implementation below is written from docs/scoring.md#locomo the straightforward way
(the shape of the official ``evaluation.py``): a fresh ``PorterStemmer.stem`` call for every
token, no caching, the normaliser re-run for every comparison. The differential tests import it.
"""

from __future__ import annotations

import json
import os
import string
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import regex  # type: ignore[import-untyped, unused-ignore]
from nltk.stem import PorterStemmer

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # running as a script: make the package importable
    sys.path.insert(0, str(REPO_ROOT))

from pytest_memeval.metrics import clear_caches, locomo_f1  # noqa: E402

__all__ = [
    "load_pairs",
    "main",
    "plain_f1",
    "plain_f1_score",
    "plain_locomo_f1",
    "plain_normalize_answer",
]

# ---------------------------------------------------------------------------------------------
# Plain reference implementation (docs/scoring.md#locomo), deliberately unoptimised.
# ---------------------------------------------------------------------------------------------

_plain_stemmer = PorterStemmer()


def plain_normalize_answer(s: str) -> str:
    """Official normaliser, step by step: commas, lower, punctuation, articles (regex), spaces."""
    s = s.replace(",", "")

    def remove_articles(text: str) -> str:
        return str(regex.sub(r"\b(a|an|the|and)\b", " ", text))

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def plain_f1_score(prediction: str, ground_truth: str) -> float:
    """Official ``f1_score``: stemmed multiset overlap; 0 when nothing overlaps."""
    prediction_tokens = [_plain_stemmer.stem(w) for w in plain_normalize_answer(prediction).split()]
    ground_truth_tokens = [
        _plain_stemmer.stem(w) for w in plain_normalize_answer(ground_truth).split()
    ]
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def plain_f1(prediction: str, ground_truth: str) -> float:
    """Official category-1 ``f1``: comma split of both sides, mean over gold parts of max F1."""
    predictions = [p.strip() for p in prediction.split(",")]
    ground_truths = [g.strip() for g in ground_truth.split(",")]
    return float(
        np.mean([max([plain_f1_score(p, gt) for p in predictions]) for gt in ground_truths])
    )


def plain_locomo_f1(prediction: str, gold: str | int | float | None, category: int) -> float:
    """Official per-category branch of ``eval_question_answering``."""
    answer = str(gold)
    if category == 3:
        answer = answer.split(";")[0].strip()
    if category in (2, 3, 4):
        return float(plain_f1_score(prediction, answer))
    if category == 1:
        return plain_f1(prediction, answer)
    if category == 5:
        lowered = prediction.lower()
        if "no information available" in lowered or "not mentioned" in lowered:
            return 1.0
        return 0.0
    raise ValueError(f"unknown category {category!r}")


# ---------------------------------------------------------------------------------------------
# Workload
# ---------------------------------------------------------------------------------------------

_EXTRA_WORDS = (
    "the",
    "and",
    "running",
    "quickly",
    "studies",
    "Paris,",
    "in 2022",
    "she said;",
    "probably",
    "generously",
)

#: Required speed-up over the plain implementation.
TARGET_RATIO = 10.0


def data_dir() -> Path:
    """``$MEMEVAL_DATA_DIR`` or ``../shared/data`` relative to the repository root."""
    env = os.environ.get("MEMEVAL_DATA_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def load_pairs(path: Path | None = None) -> list[tuple[str, str | int | None, int]]:
    """(prediction, gold, category) for every question: gold vs itself and vs a pseudo-answer."""
    file = path if path is not None else data_dir() / "locomo" / "locomo10.json"
    with open(file, encoding="utf-8") as fh:
        samples = json.load(fh)
    questions: list[tuple[str | int | None, str, int]] = []
    for sample in samples:
        for qa in sample["qa"]:
            gold = qa.get("answer")
            text = str(qa["answer"] if "answer" in qa else qa.get("adversarial_answer", ""))
            questions.append((gold, text, int(qa["category"])))
    n = len(questions)
    pairs: list[tuple[str, str | int | None, int]] = []
    for i, (gold, text, category) in enumerate(questions):
        other = questions[(i * 7 + 3) % n][1]
        words = " ".join(_EXTRA_WORDS[(i + j) % len(_EXTRA_WORDS)] for j in range(i % 4))
        pseudo = f"{other} {words}".strip()
        if category == 5 and i % 3 == 0:
            pseudo = "Not mentioned in the conversation"
        pairs.append((text, gold, category))
        pairs.append((pseudo, gold, category))
    return pairs


def _timed(fn: Callable[[], list[float]]) -> float:
    """CPU seconds of this process (not wall time: other processes on a loaded machine would
    stretch the long plain run more than the short ones and inflate the ratio)."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(repeats: int = 5, path: Path | None = None) -> dict[str, Any]:
    """Run the benchmark and return its figures (also printed as a table by ``__main__``).

    ``ours_cold_s`` clears the stem / token caches before every repeat; ``ours_warm_s`` keeps
    them (a rescoring or the second system of a comparison run).
    """
    pairs = load_pairs(path)

    def run_plain() -> list[float]:
        return [plain_locomo_f1(p, g, c) for p, g, c in pairs]

    def run_ours() -> list[float]:
        return [locomo_f1(p, g, c) for p, g, c in pairs]

    clear_caches()
    expected = run_plain()
    got = run_ours()
    mismatches = [i for i, (a, b) in enumerate(zip(expected, got, strict=True)) if a != b]

    # Interleaved, best of ``repeats``: each round times plain, ours from empty caches, then ours
    # again with the caches that run filled, so all three see the same machine load.
    plain_s = cold_s = warm_s = float("inf")
    for _ in range(repeats):
        plain_s = min(plain_s, _timed(run_plain))
        clear_caches()
        cold_s = min(cold_s, _timed(run_ours))
        warm_s = min(warm_s, _timed(run_ours))
    return {
        "questions": len(pairs) // 2,
        "pairs": len(pairs),
        "identical": not mismatches,
        "mismatches": len(mismatches),
        "plain_s": plain_s,
        "ours_cold_s": cold_s,
        "ours_warm_s": warm_s,
        "ratio_cold": plain_s / cold_s,
        "ratio_warm": plain_s / warm_s,
        "mean_f1": float(np.mean(got)),
        "target_ratio": TARGET_RATIO,
        "meets_target_cold": plain_s / cold_s >= TARGET_RATIO,
        "meets_target_warm": plain_s / warm_s >= TARGET_RATIO,
    }


def _print_table(result: dict[str, Any]) -> None:
    print(
        f"LoCoMo official F1: {result['questions']} questions, {result['pairs']} scored pairs, "
        f"identical results: {result['identical']} ({result['mismatches']} mismatches), "
        f"mean F1 {result['mean_f1']:.6f}"
    )
    print(f"{'implementation':<34}{'CPU (s)':>10}{'speed-up':>10}")
    print(f"{'plain (fresh stemming)':<34}{result['plain_s']:>10.4f}{1.0:>9.1f}x")
    print(
        f"{'pytest_memeval, cold caches':<34}{result['ours_cold_s']:>10.4f}"
        f"{result['ratio_cold']:>9.1f}x"
    )
    print(
        f"{'pytest_memeval, warm caches':<34}{result['ours_warm_s']:>10.4f}"
        f"{result['ratio_warm']:>9.1f}x"
    )
    cold = "met" if result["meets_target_cold"] else "NOT met"
    warm = "met" if result["meets_target_warm"] else "NOT met"
    print(
        f"target >= {result['target_ratio']:.0f}x: cold {cold}, warm {warm} (cold = every distinct"
        " word stemmed once by nltk; warm = caches filled by an earlier scoring pass)"
    )


if __name__ == "__main__":
    figures = main()
    _print_table(figures)
    sys.exit(0 if figures["identical"] else 1)
