"""The LoCoMo audit's adversarial wrong answers (dial481/locomo-audit, ``ap-baseline/``), read for
judge calibration.

Two sets, pinned to one commit and one sha256 each, downloaded into the cache like the datasets
(or read from ``--memeval-data=DIR`` as ``DIR/locomo-audit/ap-baseline/v1/ap_eval_results.json``):
``audit-v1`` (specific-but-wrong answers) and ``audit-v2`` (vague-but-topical ones). A local file
of the same shape can be given instead of either.

File shape (``ap_eval_results.json``)::

    {"detailed_results": {"locomo_exp_user_<K>": [
        {"question_id": "locomo_<K>_qa<N>", "question": "...", "golden_answer": "...",
         "generated_answer": "...", "category": "2", ...}, ...]}, ...}

``K`` is the conversation's position in ``locomo10.json`` and ``N`` the question's position in
its ``qa`` list (both from 0). An answer is used only when the loaded question at that place has
the same question text; the others are counted and reported, never guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import DatasetError
from ...records import Question
from .._base import read_bytes
from .._download import download

__all__ = [
    "AUDIT_COMMIT",
    "AUDIT_REPO",
    "AUDIT_SETS",
    "AuditAnswer",
    "WrongAnswerSet",
    "load_audit_set",
    "load_wrong_file",
    "match_answers",
    "parse_audit",
]

AUDIT_REPO = "dial481/locomo-audit"
AUDIT_COMMIT = "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"
#: set name -> (path in the repository, sha256 of the file at AUDIT_COMMIT)
AUDIT_SETS: dict[str, tuple[str, str]] = {
    "audit-v1": (
        "ap-baseline/v1/ap_eval_results.json",
        "080338f63c229d36b2a177cf4c0720a47aedff830f8202c908c40412d76f5feb",
    ),
    "audit-v2": (
        "ap-baseline/v2/ap_eval_results.json",
        "3118fcc86f683d32e0b7294f65345ff8d612e74bd8d5da9af82627d12b82810a",
    ),
}
#: a wrong-answer file is read up to this many bytes (the audit's are about 0.5 MB)
MAX_BYTES = 64 << 20
_QID = re.compile(r"^locomo_(\d{1,9})_qa(\d{1,9})$")  # a longer number is no position
_SHAPE = (
    f"expected the shape of {AUDIT_REPO} ap-baseline/v1/ap_eval_results.json: "
    '{"detailed_results": {"locomo_exp_user_0": [{"question_id": "locomo_0_qa0", '
    '"question": "...", "generated_answer": "..."}]}}'
)


@dataclass(frozen=True)
class AuditAnswer:
    conversation_index: int  # K of locomo_<K>_qa<N>
    qa_index: int  # N
    question: str
    answer: str


@dataclass(frozen=True)
class WrongAnswerSet:
    """One file of known-wrong answers: its kind name, where it came from, its digest."""

    kind: str
    source: str  # the URL it was downloaded from, or "file"
    path: Path
    sha256: str
    expected_sha256: str | None
    answers: tuple[AuditAnswer, ...]

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "source": self.source,
            "file": str(self.path),
            "sha256": self.sha256,
            "answers": len(self.answers),
        }
        if self.expected_sha256 is not None:
            out["repository"] = AUDIT_REPO
            out["commit"] = AUDIT_COMMIT
            out["sha256_mismatch"] = self.sha256 != self.expected_sha256
        return out


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def parse_audit(data: bytes, source: str) -> tuple[AuditAnswer, ...]:
    """The answers of an ``ap_eval_results.json`` file; ``DatasetError`` naming the record and the
    field when the shape is not the audit's."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"not UTF-8 text (byte {exc.start}); {_SHAPE}", path=source) from None
    except (ValueError, RecursionError) as exc:
        raise DatasetError(f"invalid JSON ({exc}); {_SHAPE}", path=source) from None
    results = raw.get("detailed_results") if isinstance(raw, dict) else None
    if not isinstance(results, dict):
        raise DatasetError(
            f"no 'detailed_results' object; {_SHAPE}", path=source, field="detailed_results"
        )
    out: list[AuditAnswer] = []
    for group, items in results.items():
        if not isinstance(items, list):
            raise DatasetError(
                f"must be a list of answers, got {type(items).__name__}; {_SHAPE}",
                path=source,
                record=f"detailed_results[{group!r}]",
            )
        for i, item in enumerate(items):
            record = f"detailed_results[{group!r}][{i}]"
            if not isinstance(item, dict):
                raise DatasetError(f"must be an object; {_SHAPE}", path=source, record=record)
            qid = item.get("question_id")
            m = _QID.match(qid) if isinstance(qid, str) else None
            if m is None:
                raise DatasetError(
                    f"expected 'locomo_<K>_qa<N>' (K the conversation's and N the question's "
                    f"position, from 0), got {qid!r:.60}",
                    path=source,
                    record=record,
                    field="question_id",
                )
            question, answer = _text(item.get("question")), _text(item.get("generated_answer"))
            for name, value in (("question", question), ("generated_answer", answer)):
                if value is None:
                    raise DatasetError(
                        f"missing or not text; {_SHAPE}", path=source, record=record, field=name
                    )
            assert question is not None and answer is not None
            out.append(AuditAnswer(int(m.group(1)), int(m.group(2)), question, answer))
    if not out:
        raise DatasetError(f"holds no answers; {_SHAPE}", path=source)
    return tuple(out)


def _read(path: Path, what: str) -> bytes:
    return read_bytes(path, f"expected {what}", limit=MAX_BYTES)


def load_wrong_file(path: Path, kind: str) -> WrongAnswerSet:
    """A local file of the audit's shape, as wrong-answer set ``kind``."""
    data = _read(path, "a wrong-answer file")
    digest = hashlib.sha256(data).hexdigest()
    return WrongAnswerSet(kind, "file", path, digest, None, parse_audit(data, str(path)))


#: where the pinned files are downloaded from (``<base>/<repo>/<commit>/<path>``)
RAW_BASE = "https://raw.githubusercontent.com"


def load_audit_set(
    name: str,
    data_dir: Path | None,
    cache_dir: Path,
    *,
    timeout: float = 30.0,
    base_url: str = RAW_BASE,
    sha256: str | None = None,
) -> WrongAnswerSet:
    """Audit set ``name`` (``audit-v1`` / ``audit-v2``): from ``data_dir`` when it holds the
    file, else downloaded at the pinned commit into ``cache_dir`` (sha256-checked).
    ``base_url`` and ``sha256`` replace the host and the pin (tests only)."""
    repo_path, pinned = AUDIT_SETS[name]
    sha256 = sha256 or pinned
    local = data_dir / "locomo-audit" / repo_path if data_dir is not None else None
    if local is not None and local.is_file():
        path, source = local, "data_dir"
    else:
        url = f"{base_url}/{AUDIT_REPO}/{AUDIT_COMMIT}/{repo_path}"
        path = cache_dir / "data" / "locomo-audit" / repo_path
        download(
            url,
            path,
            sha256,
            timeout=timeout,
            what=f"the LoCoMo audit's {name} answers",
            layout=f"DIR/locomo-audit/{repo_path}",
        )
        source = url
    data = _read(path, "the LoCoMo audit's ap_eval_results.json")
    digest = hashlib.sha256(data).hexdigest()
    return WrongAnswerSet(name, source, path, digest, sha256, parse_audit(data, str(path)))


def match_answers(
    answers: Sequence[AuditAnswer], questions: Sequence[Question]
) -> tuple[dict[str, str], int]:
    """question id -> wrong answer for every audit answer whose place (conversation ``K`` in the
    order the conversations come in ``questions``, question index ``N + 1``) holds a question
    with the same text; and the number of answers that matched no question."""
    conversations: list[str] = []
    by_place: dict[tuple[str, int], Question] = {}
    for question in questions:
        if question.conversation_id not in conversations:
            conversations.append(question.conversation_id)
        by_place[(question.conversation_id, question.index)] = question
    matched: dict[str, str] = {}
    missed = 0
    for a in answers:
        q: Question | None = None
        if a.conversation_index < len(conversations):
            q = by_place.get((conversations[a.conversation_index], a.qa_index + 1))
        if q is None or q.question.strip() != a.question.strip():
            missed += 1
            continue
        matched[q.id] = a.answer
    return matched, missed
