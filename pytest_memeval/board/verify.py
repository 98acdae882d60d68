"""Verification tiers (docs/board.md#verification-tiers).

* **self-reported**: the numbers are the report's own; nothing could be checked, or a check failed
  (the mismatches are listed).
* **re-scored**: the board recomputed every offline metric of every scored question from the stored
  prediction (and memories) against the gold, with the benchmark's own ``score`` function, and
  re-aggregated the report's table from its questions: everything matched.
* **re-run**: re-scored, and a run folder whose config fingerprint gives the same comparability
  key holds the same questions with the same statuses and scores (the run's raw store reproduces
  the report).

Questions are read from the benchmark's dataset when it is available (``data_dir``) and its
sha256 is the one the report names, so the gold and the evidence are the dataset's, not the
report's; otherwise from the stored records (metrics that need what a report does not keep, such
as LoCoMo's evidence ids, are then listed as not re-scorable).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks.base import Benchmark, LoadRequest
from ..records import STATUS_ERROR, Prediction, Question, QuestionResult
from ..report.model import REPORT_MEMORIES
from .keys import entry_key, same_key
from .load import Entry, folder_provenance

__all__ = [
    "TIER_RERUN",
    "TIER_RESCORED",
    "TIER_SELF",
    "Verification",
    "rescore",
    "verify_entries",
]

TIER_SELF = "self-reported"
TIER_RESCORED = "re-scored"
TIER_RERUN = "re-run"
_TOLERANCE = 1e-9
_MISMATCHES_KEPT = 50


@dataclass
class Verification:
    tier: str = TIER_SELF
    #: questions re-scored / metric values compared
    questions: int = 0
    values: int = 0
    #: "question id: metric stored 0.5 != recomputed 0.25" (at most 50 kept), and their count
    mismatches: list[str] = field(default_factory=list)
    mismatch_count: int = 0
    #: why a step could not run, or what it could not check
    notes: list[str] = field(default_factory=list)
    #: the run folder that reproduced the report (re-run tier)
    folder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "questions": self.questions,
            "values": self.values,
            "mismatch_count": self.mismatch_count,
            "mismatches": list(self.mismatches),
            "notes": list(self.notes),
            "folder": self.folder,
        }

    def mismatch(self, text: str) -> None:
        self.mismatch_count += 1
        if len(self.mismatches) < _MISMATCHES_KEPT:
            self.mismatches.append(text)


def _differs(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if math.isnan(a) and math.isnan(b):
        return False
    return not abs(a - b) <= _TOLERANCE


def _dataset_questions(
    entry: Entry, data_dir: Path | None, cache: dict[tuple[str, str], dict[str, Question] | str]
) -> dict[str, Question] | str:
    """The benchmark's questions by id, or why they cannot be had (cached per benchmark and
    dataset hash)."""
    datasets = entry.provenance.get("datasets")
    info = datasets.get(entry.benchmark) if isinstance(datasets, Mapping) else None
    shas = info.get("sha256") if isinstance(info, Mapping) else None
    wanted = sorted(str(v) for v in shas.values()) if isinstance(shas, Mapping) else []
    variant = info.get("variant") if isinstance(info, Mapping) else None
    slot = (entry.benchmark, " ".join(wanted))
    if slot in cache:
        return cache[slot]
    result: dict[str, Question] | str
    try:
        bench = entry.bench
        if bench is None:
            raise LookupError(f"benchmark {entry.benchmark!r} is not installed here")
        with tempfile.TemporaryDirectory(prefix="memeval-board-") as tmp:
            if data_dir is None and entry.benchmark != "demo":
                raise FileNotFoundError("no --data folder given (or $MEMEVAL_DATA_DIR)")
            dataset = bench.load(LoadRequest(data_dir, Path(tmp), variant))
        have = sorted(dataset.sha256.values())
        if wanted and have != wanted:
            result = f"the dataset file's sha256 ({' '.join(have)[:24]}…) is not the run's"
        else:
            result = {q.id: q for q in dataset.questions}
    except Exception as exc:  # any failure only lowers the evidence: the stored gold is used
        result = f"dataset not loaded ({type(exc).__name__}: {str(exc)[:200]})"
    cache[slot] = result
    return result


def _stored_question(r: QuestionResult) -> Question:
    return Question(
        id=r.question_id,
        conversation_id=r.conversation_id,
        category=r.category,
        question=r.question,
        gold=r.gold,
        category_id=r.category_id,
        cluster=r.cluster,
    )


def rescore(
    entry: Entry,
    bench: Benchmark,
    questions: Mapping[str, Question] | None,
    out: Verification,
    memo: dict[tuple[Any, ...], dict[str, float]] | None = None,
) -> None:
    """Recompute every offline metric of the entry's scored questions into ``out``: each one the
    scorer gives, and each of the benchmark's offline metrics the record holds."""
    offline = set(bench.metrics)
    skipped: dict[str, int] = {}
    for r in entry.results:
        if r.status == STATUS_ERROR or r.prediction is None:
            continue
        question = questions.get(r.question_id) if questions is not None else None
        from_dataset = question is not None
        if question is None:
            question = _stored_question(r)
        returned = r.details.get("memories_returned")
        truncated = (
            entry.kind == "report"
            and isinstance(returned, int)
            and returned > len(r.memories)
            and len(r.memories) >= REPORT_MEMORIES
        )
        prediction = Prediction(str(r.prediction), tuple(r.memories))
        # runs of one board share questions and often answers: score each distinct one once
        slot = (
            entry.benchmark, r.question_id, repr(question.gold), question.category_id,
            question.evidence, prediction.text, tuple(m.source_ids for m in prediction.memories),
        )  # fmt: skip
        fresh = memo.get(slot) if memo is not None else None
        if fresh is None:
            try:
                fresh = bench.score(question, prediction)
            except Exception as exc:  # a question the scorer cannot read is a finding
                out.mismatch(f"{r.question_id}: the scorer failed ({type(exc).__name__}: {exc})")
                continue
            if memo is not None:
                memo[slot] = fresh
        out.questions += 1
        for metric in sorted(set(fresh) | (offline & set(r.scores))):
            if metric == "evidence_recall" and (truncated or not from_dataset):
                skipped[metric] = skipped.get(metric, 0) + 1
                continue
            stored, again = r.scores.get(metric), fresh.get(metric)
            out.values += 1
            if _differs(stored, again):
                out.mismatch(
                    f"{r.question_id}: {metric} stored {_num(stored)}, recomputed {_num(again)}"
                )
    for metric, count in skipped.items():
        out.notes.append(
            f"{metric} not re-scored on {count} question(s): it needs the dataset's evidence "
            "ids or memories the report does not keep"
        )


def _num(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


def _check_tables(entry: Entry, out: Verification) -> None:
    """The report's stated table against the one recomputed from its own questions."""
    if entry.reported is None:
        return
    rows = ["overall", "overall_all", *[row.key for row in entry.computed.categories]]
    for row in rows:
        computed = entry.computed.row(row)
        if computed is None:
            continue
        for metric in entry.metrics:
            stated = entry.value(row, metric)
            mine = computed.metrics.get(metric)
            if stated is None and mine is None:
                continue
            out.values += 1
            if _differs(stated, mine):
                out.mismatch(
                    f"table {row}: {metric} stated {_num(stated)}, from the questions {_num(mine)}"
                )


def _reproduces(entry: Entry, out: Verification) -> bool:
    folder = entry.folder
    if folder is None or entry.kind != "report":
        return False
    mine = [r for r in folder.results if r.run_key == (entry.benchmark, entry.system, entry.flow)]
    if not mine:
        out.notes.append(f"run folder {folder.run_id} holds no result of {entry.label}")
        return False
    twin = Entry(
        str(folder.path),
        "run folder",
        folder.run_id,
        entry.benchmark,
        entry.system,
        entry.flow,
        folder_provenance(folder),
        entry.extra,
        None,
        [],
        mine,
        entry.computed,  # the key reads the results and provenance, never the tables
    )
    if not same_key(entry_key(twin), entry_key(entry)):
        out.notes.append(
            f"run folder {folder.run_id}: its config fingerprint gives another comparability key"
        )
        return False
    stored = {r.question_id: r for r in mine}
    bad = 0
    for r in entry.results:
        other = stored.get(r.question_id)
        if (
            other is None
            or other.status != r.status
            or any(
                _differs(r.scores.get(m), other.scores.get(m))
                for m in set(r.scores) | set(other.scores)
            )
        ):
            bad += 1
    if bad or len(stored) != len(entry.results):
        out.notes.append(
            f"run folder {folder.run_id}: {bad} question(s) differ from the report, "
            f"{len(stored)} stored against {len(entry.results)} reported"
        )
        return False
    out.folder = str(folder.path)
    return True


def verify_entries(entries: Sequence[Entry], data_dir: Path | None) -> dict[str, Verification]:
    """Each entry's tier, by ``Entry.ident``."""
    cache: dict[tuple[str, str], dict[str, Question] | str] = {}
    memo: dict[tuple[Any, ...], dict[str, float]] = {}
    out: dict[str, Verification] = {}
    for entry in entries:
        v = Verification()
        bench = entry.bench
        if bench is None:
            v.notes.append(f"not re-scored: benchmark {entry.benchmark!r} is not installed here")
            out[entry.ident] = v
            continue
        found = _dataset_questions(entry, data_dir, cache)
        if isinstance(found, str):
            v.notes.append(f"gold from the stored records: {found}")
        rescore(entry, bench, None if isinstance(found, str) else found, v, memo)
        _check_tables(entry, v)
        if v.mismatch_count == 0 and v.questions > 0:
            v.tier = TIER_RESCORED
            if _reproduces(entry, v):
                v.tier = TIER_RERUN
        out[entry.ident] = v
    return out
