"""Check a published per-question result file against our scorers (``memeval-check-published``).

Memory-system papers publish the files their evaluation scripts wrote. Two shapes are read:

- **Mem0's** ``evaluation/evals.py`` output (``evaluation_metrics.json``): an object mapping a
  conversation key to a list of ``{"question", "answer", "response", "category", "bleu_score",
  "f1_score", "llm_score"}``. ``bleu_score`` is recomputed with :func:`~..metrics.lexical.bleu1`
  and ``f1_score`` with :func:`~..metrics.lexical.set_f1`, both from ``(response, answer)``, as
  ``evals.py`` calls them; ``llm_score`` needs the judge and is only aggregated.
- **LoCoMo's** ``task_eval`` output (``*_scores.json``): one sample ``{"qa": [...]}`` or a list of
  them, each question holding ``<key>_prediction`` and ``<key>_f1`` for one or more model keys;
  ``<key>_f1`` is recomputed with :func:`~..metrics.lexical.locomo_f1` (category rules included).

Equality is exact (the stored JSON floats round-trip). The aggregate lines follow Mem0's
``generate_scores.py``: per-category means over the questions, rounded to 4 places.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import parse_json, read_data
from ..errors import MemevalError
from ..metrics import bleu1, locomo_f1, set_f1

__all__ = [
    "Mismatch",
    "PublishedCheck",
    "StoredMetric",
    "check_locomo_scores",
    "check_mem0_metrics",
    "check_published",
    "main",
]

_FIX = "pass a Mem0 evaluation_metrics.json or a LoCoMo *_scores.json file"


@dataclass(frozen=True)
class Mismatch:
    record: str  # where in the file: "conversation 3, item 12" / "sample 0, qa 7"
    question: str
    stored: float
    ours: float


@dataclass
class StoredMetric:
    """One stored per-question metric, compared with (or, ``recomputed`` False, only averaged
    from) the file."""

    name: str  # the file's key: bleu_score, f1_score, gpt-4-turbo_f1, llm_score
    ours: str  # the metric it is compared with: bleu1, set_f1, f1 (official LoCoMo), "-"
    recomputed: bool = True
    compared: int = 0
    equal: int = 0
    max_abs_diff: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)
    by_category: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, record: str, question: str, category: str, stored: float, ours: float) -> None:
        self.by_category[category].append(stored)
        if not self.recomputed:
            return
        self.compared += 1
        if stored == ours:
            self.equal += 1
            return
        self.max_abs_diff = max(self.max_abs_diff, abs(stored - ours))
        self.mismatches.append(Mismatch(record, question, stored, ours))

    def means(self) -> dict[str, tuple[float, int]]:
        """category -> (mean of the stored values rounded to 4 places, count), plus ``overall``."""
        out = {
            cat: (round(math.fsum(v) / len(v), 4), len(v))
            for cat, v in sorted(self.by_category.items())
        }
        every = [x for v in self.by_category.values() for x in v]
        if every:
            out["overall"] = (round(math.fsum(every) / len(every), 4), len(every))
        return out


@dataclass
class PublishedCheck:
    path: str
    format: str  # "mem0" | "locomo"
    questions: int
    metrics: list[StoredMetric]
    skipped: list[str] = field(default_factory=list)  # records not compared, with why

    @property
    def ok(self) -> bool:
        return all(m.equal == m.compared for m in self.metrics if m.recomputed)

    def lines(self, *, show: int = 10) -> list[str]:
        out = [f"{self.path}: {self.format} result file, {self.questions} questions"]
        for m in self.metrics:
            if m.recomputed:
                verdict = (
                    "all equal" if m.equal == m.compared else f"max |diff| {m.max_abs_diff:.6g}"
                )
                out.append(f"  {m.name} vs our {m.ours}: {m.equal}/{m.compared} equal ({verdict})")
                for x in m.mismatches[:show]:
                    out.append(
                        f"    {x.record}: stored {x.stored!r}, ours {x.ours!r} ({x.question[:60]!r})"
                    )
                if len(m.mismatches) > show:
                    out.append(f"    ... {len(m.mismatches) - show} more")
            else:
                out.append(f"  {m.name}: stored only (needs the judge; not recomputed)")
            means = ", ".join(f"{c} {v:.4f} (n={n})" for c, (v, n) in m.means().items())
            out.append(f"    stored means: {means}")
        for why in self.skipped[:show]:
            out.append(f"  skipped {why}")
        if len(self.skipped) > show:
            out.append(f"  ... {len(self.skipped) - show} more skipped")
        return out


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def check_mem0_metrics(data: Mapping[str, Any], path: str) -> PublishedCheck:
    """Mem0 ``evals.py`` output: recompute ``bleu_score`` and ``f1_score`` per question."""
    bleu = StoredMetric("bleu_score", "bleu1")
    f1 = StoredMetric("f1_score", "set_f1")
    judge = StoredMetric("llm_score", "-", recomputed=False)
    check = PublishedCheck(path, "mem0", 0, [bleu, f1, judge])
    for conv, items in data.items():
        if not isinstance(items, list):
            check.skipped.append(f"conversation {conv}: not a list of questions")
            continue
        for i, item in enumerate(items):
            where = f"conversation {conv}, item {i}"
            if not isinstance(item, dict):
                check.skipped.append(f"{where}: not an object")
                continue
            # evals.py: gt_answer = str(item["answer"]), pred_answer = str(item["response"])
            gold, pred = str(item.get("answer")), str(item.get("response"))
            question, category = str(item.get("question", "")), str(item.get("category"))
            check.questions += 1
            for metric, fn in ((bleu, bleu1), (f1, set_f1)):
                stored = _number(item.get(metric.name))
                if stored is None:
                    check.skipped.append(f"{where}: no number under {metric.name!r}")
                    continue
                metric.add(where, question, category, stored, fn(pred, gold))
            score = _number(item.get("llm_score"))
            if score is not None:
                judge.add(where, question, category, score, score)
    return check


def _samples(data: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    samples = data if isinstance(data, list) else [data]
    for i, sample in enumerate(samples):
        if isinstance(sample, dict) and isinstance(sample.get("qa"), list):
            yield i, sample


def check_locomo_scores(data: object, path: str) -> PublishedCheck:
    """LoCoMo ``task_eval`` output: recompute every ``<key>_f1`` that has a ``<key>_prediction``."""
    metrics: dict[str, StoredMetric] = {}
    check = PublishedCheck(path, "locomo", 0, [])
    for s, sample in _samples(data):
        for q, qa in enumerate(sample["qa"]):
            where = f"sample {s}, qa {q}"
            if not isinstance(qa, dict):
                check.skipped.append(f"{where}: not an object")
                continue
            check.questions += 1
            category = qa.get("category")
            for key in sorted(k for k in qa if isinstance(k, str) and k.endswith("_prediction")):
                model = key.removesuffix("_prediction")
                stored = _number(qa.get(f"{model}_f1"))
                prediction = qa[key]
                if stored is None:
                    continue
                if not isinstance(prediction, str) or category not in (1, 2, 3, 4, 5):
                    check.skipped.append(f"{where}: {key} is not text or category {category!r}")
                    continue
                gold = qa.get("answer")
                if gold is None and category != 5:
                    check.skipped.append(f"{where}: no answer for category {category}")
                    continue
                metric = metrics.setdefault(model, StoredMetric(f"{model}_f1", "f1 (official)"))
                ours = locomo_f1(prediction, gold, category)
                metric.add(where, str(qa.get("question", "")), str(category), stored, ours)
    check.metrics = [metrics[k] for k in sorted(metrics)]
    return check


def check_published(path: str | Path) -> PublishedCheck:
    """Read ``path`` and check it in the shape it has (Mem0 or LoCoMo); raises MemevalError
    (a DatasetError naming the file) for a file of neither shape."""
    source = str(path)
    _, text = read_data(path, _FIX)
    data = parse_json(text, source, _FIX)
    if (
        isinstance(data, dict)
        and data
        and "qa" not in data
        and all(isinstance(v, list) for v in data.values())
    ):
        return check_mem0_metrics(data, source)
    if any(True for _ in _samples(data)):
        return check_locomo_scores(data, source)
    raise MemevalError(f"{source}: neither Mem0's evals.py output nor LoCoMo's; {_FIX}")


def main(argv: Sequence[str] | None = None, *, out: Callable[[str], object] = print) -> int:
    """``memeval-check-published FILE...``: 0 when every recomputed value equals the stored one,
    1 when one differs, 2 when a file cannot be read."""
    parser = argparse.ArgumentParser(
        prog="memeval-check-published",
        description="Recompute the per-question scores stored in published result files "
        "(Mem0 evaluation_metrics.json, LoCoMo *_scores.json) and compare them exactly.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--show", type=int, default=10, help="mismatches listed per metric")
    args = parser.parse_args(argv)
    status = 0
    for name in args.files:
        try:
            check = check_published(name)
        except MemevalError as exc:
            out(f"memeval-check-published: {exc}")
            status = 2
            continue
        for line in check.lines(show=args.show):
            out(line)
        if not check.ok and status == 0:
            status = 1
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
