"""Gold-answer errata overlays (``--memeval-errata=NAME|PATH``): which questions' gold answers
are known to be wrong, read from a pinned download or a local file, never edited in place.

Known sources (``ERRATA_SOURCES``):

- ``locomo-audit``: the public LoCoMo audit (github.com/dial481/locomo-audit,
  ``audit/errors_conv_<i>.json``), downloaded at a pinned commit, each file sha256-checked like the
  datasets. Each entry is an object with ``question_id`` (``locomo_<i>_qa<j>``: conversation ``i``
  in file order, ``j`` the 0-based position in its ``qa`` list), ``question``, ``category``,
  ``error_type``, ``golden_answer``, ``correct_answer``, ``cited_evidence``,
  ``correct_evidence`` and ``reasoning``. ``WRONG_CITATION`` entries have a correct gold answer
  (only the cited evidence is wrong): they are kept and shown, but they do not make the gold
  unsound. Every other type is score-corrupting. The audit covers categories 1-4.

A local ``PATH`` is a JSON file holding such a list, or a folder with ``errors_conv_<i>.json``
files (or an ``audit/`` folder of them, as in a checkout of the audit). Each entry is matched to
the loaded LoCoMo file by position and checked against the question's text and category, so an
overlay for another version of the data file stops the run instead of marking wrong questions.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import DatasetError
from ..records import Question
from ._base import parse_json, read_data
from ._download import download

__all__ = [
    "ERRATA_SOURCES",
    "LOCOMO_AUDIT",
    "Errata",
    "ErrataSource",
    "Erratum",
    "load_errata",
    "parse_audit_entries",
]

#: error types whose gold answer is still right (only the evidence citation is wrong)
NON_SCORING_TYPES = frozenset({"WRONG_CITATION"})
#: errata files larger than this are refused (the audit's files are 10-40 kB)
MAX_ERRATA_BYTES = 16 * 1024 * 1024
_AUDIT_ID = re.compile(r"locomo_(\d{1,9})_qa(\d{1,9})")  # a longer number is no position
_CONV_FILE = re.compile(r"errors_conv_(\d+)\.json")
_FIX = "pass the audit's own files (--memeval-errata=locomo-audit) or fix the file"


@dataclass(frozen=True)
class Erratum:
    """One audited question (``question_id`` is this plugin's id, e.g. ``conv-26-q2``)."""

    question_id: str
    source_id: str
    category_id: int
    error_type: str
    score_corrupting: bool
    correct_answer: str | None = None
    correct_evidence: tuple[str, ...] = ()
    reasoning: str = ""

    def to_dict(self, source: str) -> dict[str, Any]:
        return {
            "source": source,
            "source_id": self.source_id,
            "error_type": self.error_type,
            "score_corrupting": self.score_corrupting,
            "correct_answer": self.correct_answer,
            "correct_evidence": list(self.correct_evidence),
            "reasoning": self.reasoning,
        }


@dataclass(frozen=True)
class ErrataSource:
    """A known errata overlay, pinned: files below ``base_url`` (at ``commit``) with sha256."""

    name: str
    benchmark: str
    repository: str
    commit: str
    base_url: str
    files: tuple[tuple[str, str], ...]  # (path in the repository, sha256)
    audited_categories: frozenset[int]
    timeout: float = 30.0

    def url(self, path: str) -> str:
        return f"{self.base_url.rstrip('/')}/{self.commit}/{path}"


@dataclass(frozen=True)
class Errata:
    """The overlay of one run: question id -> erratum, for one benchmark."""

    name: str
    benchmark: str
    entries: Mapping[str, Erratum]
    audited_categories: frozenset[int]
    provenance: dict[str, Any] = field(default_factory=dict)

    def get(self, question_id: str) -> Erratum | None:
        return self.entries.get(question_id)

    def sound(self, question_id: str) -> bool:
        """The gold answer is sound: no score-corrupting erratum names the question."""
        e = self.entries.get(question_id)
        return e is None or not e.score_corrupting

    def audited(self, category_id: object) -> bool:
        return category_id in self.audited_categories


LOCOMO_AUDIT = ErrataSource(
    name="locomo-audit",
    benchmark="locomo",
    repository="https://github.com/dial481/locomo-audit",
    commit="9493fb4b4af4256ed17a18e8fd0b3cfdeec29539",
    base_url="https://raw.githubusercontent.com/dial481/locomo-audit",
    files=(
        (
            "audit/errors_conv_0.json",
            "63c778c8432b058d791417ec37bf8ac30b0bb83b1272afacb5a162b84fe5e3c4",
        ),
        (
            "audit/errors_conv_1.json",
            "a2db16644318c3c144544f4cb373028e416bbf20c6f07f46606cf66f45de4e6c",
        ),
        (
            "audit/errors_conv_2.json",
            "93c2aa8ee7d3bfb59ae1cca283d176a794d76d3751c69264ddc1f63ceb2b4b3a",
        ),
        (
            "audit/errors_conv_3.json",
            "c1d0162e534bf68dba6aff3ca3e73ba8179cab7a400d098b8be89048c7b58585",
        ),
        (
            "audit/errors_conv_4.json",
            "42520f95b654c85b564da6cd26f40cefb981de574066f7b92bdebbc780fa1376",
        ),
        (
            "audit/errors_conv_5.json",
            "af8c675a3e216ddb94e07c417fb37c45fc46740dfa8ce586fc8c527f7a3b9ee7",
        ),
        (
            "audit/errors_conv_6.json",
            "acb6d0d02f938180b3d1a7a45f80d432ece69d13b197371cb71ddbddb83a26ea",
        ),
        (
            "audit/errors_conv_7.json",
            "bbe2268a3254dcc9d3741a84748fadf8e169d21d837810e92dc63cdf8db562cb",
        ),
        (
            "audit/errors_conv_8.json",
            "c15ace8ef1a7cbf3fe63d3b7ff9c2851885f5e00abc1c184971ebb11128aedb2",
        ),
        (
            "audit/errors_conv_9.json",
            "2c2b8791d024e11ca6015a109f160b7177379b3b42ac8c9adb990546fc89c4ff",
        ),
    ),
    audited_categories=frozenset({1, 2, 3, 4}),
)

ERRATA_SOURCES: Mapping[str, ErrataSource] = MappingProxyType({LOCOMO_AUDIT.name: LOCOMO_AUDIT})


def read_run_json(path: Path) -> tuple[Any, str]:
    data, text = read_data(path, _FIX, limit=MAX_ERRATA_BYTES)
    return parse_json(text, str(path), _FIX), hashlib.sha256(data).hexdigest()


def _text(value: object) -> str:
    return " ".join(str(value).split())


def parse_audit_entries(
    raw: object,
    source: str,
    questions: Sequence[Question],
    conversation_ids: Sequence[str],
) -> list[Erratum]:
    """Audit-shaped entries -> errata keyed by this plugin's question ids (see the module
    docstring). ``conversation_ids`` is the data file's conversation order."""
    if not isinstance(raw, list):
        raise DatasetError(
            f"expected a JSON list of audit entries, got {type(raw).__name__}; {_FIX}", path=source
        )
    by_position = {(q.conversation_id, q.index): q for q in questions}
    out: list[Erratum] = []
    for n, entry in enumerate(raw):
        record = f"entry [{n}]"
        if not isinstance(entry, dict):
            raise DatasetError(
                f"an entry must be an object, got {type(entry).__name__}; {_FIX}",
                path=source,
                record=record,
            )
        sid = entry.get("question_id")
        m = _AUDIT_ID.fullmatch(sid) if isinstance(sid, str) else None
        if m is None:
            raise DatasetError(
                f"question_id must look like 'locomo_0_qa1', got {sid!r:.60}; {_FIX}",
                path=source,
                record=record,
                field="question_id",
            )
        record = f"entry [{n}] {sid}"
        for key, kind in (("error_type", str), ("question", str), ("category", int)):
            value = entry.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise DatasetError(
                    f"missing or not a {kind.__name__}: {value!r:.60}; {_FIX}",
                    path=source,
                    record=record,
                    field=key,
                )
        conv_index, qa_index = int(m.group(1)), int(m.group(2))
        if conv_index >= len(conversation_ids):
            raise DatasetError(
                f"names conversation {conv_index}, but the LoCoMo file has "
                f"{len(conversation_ids)}; the overlay is for another data file",
                path=source,
                record=record,
                field="question_id",
            )
        conv = conversation_ids[conv_index]
        question = by_position.get((conv, qa_index + 1))
        if question is None or _text(question.question) != _text(entry["question"]):
            found = "no question" if question is None else f"{question.question!r:.80}"
            raise DatasetError(
                f"does not match the loaded LoCoMo file: position qa[{qa_index}] of {conv} holds "
                f"{found}, the erratum is about {entry['question']!r:.80}. The overlay is for "
                "another version of locomo10.json; use the official file (sha256 79fa87e9…) or "
                "an overlay made for yours",
                path=source,
                record=record,
                field="question",
            )
        if question.category_id != entry["category"]:
            raise DatasetError(
                f"category {entry['category']} but {question.id} is category "
                f"{question.category_id}; the overlay is for another data file",
                path=source,
                record=record,
                field="category",
            )
        evidence = entry.get("correct_evidence") or ()
        if not isinstance(evidence, list | tuple) or not all(isinstance(e, str) for e in evidence):
            raise DatasetError(
                f"correct_evidence must be a list of dia ids, got {evidence!r:.60}; {_FIX}",
                path=source,
                record=record,
                field="correct_evidence",
            )
        error_type = str(entry["error_type"])
        corrupting = entry.get("score_corrupting")
        answer = entry.get("correct_answer")
        out.append(
            Erratum(
                question_id=question.id,
                source_id=str(sid),
                category_id=int(entry["category"]),
                error_type=error_type,
                score_corrupting=(
                    corrupting
                    if isinstance(corrupting, bool)
                    else error_type not in NON_SCORING_TYPES
                ),
                correct_answer=None if answer is None else str(answer),
                correct_evidence=tuple(evidence),
                reasoning=str(entry.get("reasoning") or ""),
            )
        )
    return out


def _local_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        for folder in (path, path / "audit"):
            found = [p for p in folder.glob("errors_conv_*.json") if _CONV_FILE.fullmatch(p.name)]
            if found:
                return sorted(found, key=lambda p: int(_CONV_FILE.fullmatch(p.name).group(1)))  # type: ignore[union-attr]
        raise DatasetError(
            "no errors_conv_<i>.json files in this folder (nor in its audit/ folder); pass the "
            "audit's audit/ folder, one JSON file, or --memeval-errata=locomo-audit",
            path=str(path),
        )
    raise DatasetError(
        f"--memeval-errata={path}: not a known errata name ({', '.join(ERRATA_SOURCES)}) and no "
        "such file or folder",
        path=str(path),
    )


def load_errata(
    spec: str,
    cache_dir: Path,
    questions: Sequence[Question],
    conversation_ids: Sequence[str],
    *,
    sources: Mapping[str, ErrataSource] = ERRATA_SOURCES,
) -> Errata:
    """Resolve ``--memeval-errata=spec``: a known name (downloaded into
    ``<cache>/data/errata/<name>/<commit>/``, sha256-checked) or a local file or folder.
    ``questions`` / ``conversation_ids`` are the loaded LoCoMo file's, in file order."""
    known = sources.get(spec)
    files: list[tuple[Path, str]] = []  # (file, name in provenance)
    provenance: dict[str, Any]
    if known is not None:
        folder = Path(cache_dir) / "data" / "errata" / known.name / known.commit
        for rel, sha in known.files:
            dest = folder / rel
            download(
                known.url(rel),
                dest,
                sha,
                timeout=known.timeout,
                what=f"the {known.name} errata file {rel}",
                layout=f"a local copy: --memeval-errata=DIR with DIR/{rel}",
            )
            files.append((dest, rel))
        provenance = {
            "name": known.name,
            "source": known.repository,
            "commit": known.commit,
            "url": known.url(""),
        }
        benchmark, audited = known.benchmark, known.audited_categories
    else:
        local = Path(spec).expanduser()
        files = [(p, str(p)) for p in _local_files(local)]
        provenance = {"name": spec, "source": "local", "path": str(local)}
        benchmark, audited = LOCOMO_AUDIT.benchmark, LOCOMO_AUDIT.audited_categories
    entries: dict[str, Erratum] = {}
    digests: dict[str, str] = {}
    for path, name in files:
        raw, digest = read_run_json(path)
        digests[name] = digest
        for erratum in parse_audit_entries(raw, str(path), questions, conversation_ids):
            if erratum.question_id in entries:
                raise DatasetError(
                    f"{erratum.question_id} ({erratum.source_id}) is listed twice; keep one entry",
                    path=str(path),
                )
            entries[erratum.question_id] = erratum
    if known is None:
        pinned = {sha for _, sha in LOCOMO_AUDIT.files}
        if set(digests.values()) == pinned:
            provenance["same_as"] = f"{LOCOMO_AUDIT.name} at {LOCOMO_AUDIT.commit}"
    provenance.update(
        {
            "benchmark": benchmark,
            "files": digests,
            "entries": len(entries),
            "score_corrupting": sum(1 for e in entries.values() if e.score_corrupting),
            "audited_categories": sorted(audited),
            "rule": "gold unsound = a score-corrupting erratum (every type but WRONG_CITATION); "
            "ceiling = share of a category's questions with sound gold",
        }
    )
    return Errata(
        name=str(provenance["name"]),
        benchmark=benchmark,
        entries=MappingProxyType(entries),
        audited_categories=audited,
        provenance=provenance,
    )
