"""Verification tiers (docs/board.md#verification-tiers).

* **self-reported**: the numbers are the report's own; nothing could be checked, or a check failed
  (the mismatches are listed).
* **re-scored**: the board recomputed every offline metric of every scored question from the stored
  prediction (and memories) against the gold, with the benchmark's own ``score`` function, and
  re-aggregated the report's table from its questions: everything matched.
* **re-run**: re-scored, and a run folder whose config fingerprint gives the same comparability
  key holds the same questions with the same statuses and scores (the run's raw store reproduces
  the report).

Only a complete, duplicate-free question set can be re-scored or re-run: the ids a result holds
are checked against the selection its key names (the dataset's questions for its limit, sample and
seed: :func:`run.question.check_question_set`). A result that fails the check is **incomplete**
(selected questions missing) or **invalid** (ids the selection does not name, or one id twice); one
whose set cannot be checked (the dataset not loaded here, a hand-written test's own questions) is
**unverified**. These three are shown apart, never ranked. A run stopped early, narrowed by ``-k``
/ ``-m`` / ``--deselect`` / a shard, or with more than half its questions in ERROR is *partial*
(:func:`partial_reasons`): shown apart too unless the board is asked to rank partial runs.

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

from ..benchmarks import Benchmark, LoadRequest
from ..records import STATUS_ERROR, Prediction, Question, QuestionResult
from ..report import REPORT_MEMORIES
from ..run import QuestionSetCheck, check_question_set, select_questions
from ._comparability import entry_key, same_key
from ._load import Entry, folder_provenance

__all__ = [
    "RANKED_TIERS",
    "TIERS",
    "TIER_INCOMPLETE",
    "TIER_INVALID",
    "TIER_RERUN",
    "TIER_RESCORED",
    "TIER_SELF",
    "TIER_UNVERIFIED",
    "Verification",
    "partial_reasons",
    "rescore",
    "verify_entries",
]

TIER_SELF = "self-reported"
TIER_RESCORED = "re-scored"
TIER_RERUN = "re-run"
#: the question set was checked and selected questions are missing
TIER_INCOMPLETE = "incomplete"
#: the question set holds ids the selection does not name, or an id twice
TIER_INVALID = "invalid"
#: the question set could not be checked
TIER_UNVERIFIED = "unverified"
#: the tiers ranked in a key's table (a partial run only with ``--show-partial``)
RANKED_TIERS = (TIER_RERUN, TIER_RESCORED, TIER_SELF)
#: every tier, in the order the board lists them
TIERS = (*RANKED_TIERS, TIER_INCOMPLETE, TIER_UNVERIFIED, TIER_INVALID)
#: more than this share of a result's questions in ERROR makes it partial
ERROR_SHARE = 0.5
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
    #: the held question ids against the selection (None: could not be checked)
    question_set: QuestionSetCheck | None = None
    #: why the question set is not verified (missing / invented / duplicated ids, or why it
    #: could not be checked); empty when it is complete
    set_problems: list[str] = field(default_factory=list)
    #: why the run is partial (stopped early, narrowed, mostly ERROR); empty: a full run
    partial: list[str] = field(default_factory=list)

    def ranked(self, show_partial: bool = False) -> bool:
        """Whether the result is ranked in its key's table: a verified question set (or a
        failed re-score: self-reported) of a full run; a partial run only with
        ``show_partial`` and never with invented or duplicated ids or an unchecked set."""
        if self.partial:
            return show_partial and self.tier in (*RANKED_TIERS, TIER_INCOMPLETE)
        return self.tier in RANKED_TIERS

    def to_dict(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "questions": self.questions,
            "values": self.values,
            "mismatch_count": self.mismatch_count,
            "mismatches": list(self.mismatches),
            "notes": list(self.notes),
            "folder": self.folder,
            "question_set": self.question_set.to_dict() if self.question_set else None,
            "set_problems": list(self.set_problems),
            "partial": list(self.partial),
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
    entry: Entry,
    data_dir: Path | None,
    cache: dict[tuple[str, str], list[Question] | str],
    scratch: Path | None = None,
) -> list[Question] | str:
    """The benchmark's questions in file order, or why they cannot be had (cached per benchmark
    and dataset hash). A loader's cache folder is a temporary one inside ``scratch`` (the
    board's output folder: nothing is written outside it), removed after the load."""
    datasets = entry.provenance.get("datasets")
    info = datasets.get(entry.benchmark) if isinstance(datasets, Mapping) else None
    shas = info.get("sha256") if isinstance(info, Mapping) else None
    wanted = sorted(str(v) for v in shas.values()) if isinstance(shas, Mapping) else []
    variant = info.get("variant") if isinstance(info, Mapping) else None
    slot = (entry.benchmark, " ".join(wanted))
    if slot in cache:
        return cache[slot]
    result: list[Question] | str
    try:
        bench = entry.bench
        if bench is None:
            raise LookupError(f"benchmark {entry.benchmark!r} is not installed here")
        with tempfile.TemporaryDirectory(prefix=".memeval-board-", dir=scratch) as tmp:
            # a suite shipped as package data (its packaged_files hook) needs no data folder
            if data_dir is None and not callable(getattr(bench, "packaged_files", None)):
                raise FileNotFoundError("no --data folder given (or $MEMEVAL_DATA_DIR)")
            dataset = bench.load(
                LoadRequest(data_dir, Path(tmp), variant if isinstance(variant, str) else None)
            )
        have = sorted(dataset.sha256.values())
        if wanted and have != wanted:
            result = f"the dataset file's sha256 ({' '.join(have)[:24]}…) is not the run's"
        else:
            result = list(dataset.questions)
    except Exception as exc:  # any failure only lowers the evidence: the stored gold is used
        result = f"dataset not loaded ({type(exc).__name__}: {str(exc)[:200]})"
    cache[slot] = result
    return result


def _selected_ids(entry: Entry, questions: Sequence[Question]) -> list[str] | str:
    """The question ids the entry's key selects (limit, sample, seed as its provenance records
    them, the plugin's own ``select_questions``), or why they cannot be named."""
    if entry.flow:
        return f"a hand-written test ({entry.flow}) chooses its own questions"
    p = entry.provenance
    limit, sample, seed = p.get("limit"), p.get("sample"), p.get("seed", 0)
    for name, value in (("limit", limit), ("sample", sample), ("seed", seed)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return f"provenance {name} {value!r} is not a whole number"
    assert limit is None or isinstance(limit, int)
    assert sample is None or isinstance(sample, int)
    chosen = select_questions(list(questions), limit=limit, sample=sample, seed=int(seed or 0))
    return [q.id for q in chosen]


def partial_reasons(
    provenance: Mapping[str, Any], benchmark: str, statuses: Sequence[str]
) -> list[str]:
    """Why a run is partial, from its provenance (``session``: exit status, stop reason, -k, -m,
    --deselect, shard; ``datasets``: questions run against selected) and its questions'
    statuses (more than :data:`ERROR_SHARE` in ERROR); empty for a full run."""
    out: list[str] = []
    session = provenance.get("session")
    if isinstance(session, Mapping):
        status = session.get("exit_status")
        if session.get("stopped"):
            out.append(f"stopped early ({session['stopped']})")
        elif isinstance(status, int) and status not in (0, 1):
            name = session.get("exit_name") or "?"
            out.append(f"the session ended with exit status {status} ({name})")
        for flag, name in (("-k", "keyword"), ("-m", "markexpr")):
            if session.get(name):
                out.append(f"questions selected by {flag} {session[name]!r}")
        deselect = session.get("deselect")
        if isinstance(deselect, list) and deselect:
            out.append(f"{len(deselect)} item(s) deselected by --deselect")
        if session.get("shard"):
            out.append(f"one shard ({session['shard']}) of the selection")
    datasets = provenance.get("datasets")
    info = datasets.get(benchmark) if isinstance(datasets, Mapping) else None
    if isinstance(info, Mapping):
        ran, selected = info.get("questions_run"), info.get("questions_selected")
        if isinstance(ran, int) and isinstance(selected, int) and ran < selected:
            out.append(f"{ran} of the {selected} selected questions ran")
    errors = sum(s == STATUS_ERROR for s in statuses)
    if statuses and errors > ERROR_SHARE * len(statuses):
        out.append(f"{errors} of its {len(statuses)} questions are ERROR (more than half)")
    return out


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


def _check_set(
    entry: Entry, found: list[Question] | str, v: Verification
) -> dict[str, Question] | None:
    """The question-set check into ``v``; the dataset's questions by id for re-scoring (None:
    the dataset is not loaded here, the stored gold is used)."""
    if isinstance(found, str):
        v.notes.append(f"gold from the stored records: {found}")
        v.set_problems.append(f"question set not verified: {found}")
        return None
    by_id = {q.id: q for q in found}
    expected = _selected_ids(entry, found)
    if isinstance(expected, str):
        v.set_problems.append(f"question set not verified: {expected}")
        return by_id
    v.question_set = check_question_set(expected, [r.question_id for r in entry.results])
    v.set_problems.extend(v.question_set.problems())
    return by_id


def _set_tier(v: Verification) -> str | None:
    """The tier the question set imposes (None: the set is complete)."""
    check = v.question_set
    if check is None:
        return TIER_UNVERIFIED if v.set_problems else None
    if check.invented or check.duplicated:
        return TIER_INVALID
    return TIER_INCOMPLETE if check.missing else None


def verify_entries(
    entries: Sequence[Entry], data_dir: Path | None, scratch: Path | None = None
) -> dict[str, Verification]:
    """Each entry's tier, by ``Entry.ident`` (``scratch``: where a loader may write, see
    :func:`_dataset_questions`)."""
    cache: dict[tuple[str, str], list[Question] | str] = {}
    memo: dict[tuple[Any, ...], dict[str, float]] = {}
    out: dict[str, Verification] = {}
    for entry in entries:
        v = Verification()
        v.partial = partial_reasons(
            entry.provenance, entry.benchmark, [r.status for r in entry.results]
        )
        bench = entry.bench
        if bench is None:
            v.notes.append(f"not re-scored: benchmark {entry.benchmark!r} is not installed here")
            v.set_problems.append(
                f"question set not verified: benchmark {entry.benchmark!r} is not installed here"
            )
            v.tier = TIER_UNVERIFIED
            out[entry.ident] = v
            continue
        questions = _check_set(entry, _dataset_questions(entry, data_dir, cache, scratch), v)
        rescore(entry, bench, questions, v, memo)
        _check_tables(entry, v)
        set_tier = _set_tier(v)
        if set_tier is not None:
            v.tier = set_tier  # only a complete, duplicate-free set is re-scored or re-run
        elif v.mismatch_count == 0 and v.questions > 0:
            v.tier = TIER_RESCORED
            if _reproduces(entry, v):
                v.tier = TIER_RERUN
        out[entry.ident] = v
    return out
