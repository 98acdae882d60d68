"""MemoryAgentBench (arXiv 2507.05257, ICLR 2026): one long context injected once, then many
questions about it, in four splits (the competencies): Accurate_Retrieval, Test_Time_Learning,
Long_Range_Understanding, Conflict_Resolution.

Upstream (``HUST-AI-HYZ/MemoryAgentBench``, pinned below) loads the Hugging Face dataset
``ai-hyz/MemoryAgentBench`` (``utils/eval_data_utils.py``): each split is a list of records
``{context, questions[], answers[], metadata{source, qa_pair_ids, question_ids, ...}}``; its
``conversation_creator.py`` pairs ``questions[i]`` with ``answers[i]`` when both lists hold more
than one entry, else asks ``questions[0]`` once with the whole ``answers`` list as its golds; the
context is split into chunks (``chunk_text_into_sentences``: NLTK sentences joined up to
``chunk_size`` 4096 tokens) that the agent memorises one after another before any question.

Here each record is one conversation with one session whose turns are those chunks (``C1``,
``C2``, ...), and each question is one item; its category is the split. The offline scores are
upstream's ``utils/eval_other_utils.py`` rules, routed by ``metadata.source`` as its
``post_process`` does (docs/scoring.md#memoryagentbench).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...errors import DatasetError
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    Parsed,
    check_surrogates,
    decode_text,
    load_parts,
    named_categories,
    parse_json,
    parse_jsonl,
    read_bytes,
)
from .._download import Pins, fetch_pinned
from ._pins import FOLDER, PINS, UPSTREAM
from ._scorer import (
    EDITDISTANCE_MISSING,
    RECSYS_METRICS,
    RECSYS_TABLE,
    ROUGE_EXTRA,
    ROUGE_METRICS,
    ROUGE_MISSING,
    _edit_distance,
    _read_movie_table,
    flatten_golds,
    rouge_available,
    score_memoryagentbench,
)

if TYPE_CHECKING:
    from ...answerers import SuiteAnswerer
    from ...judges import Judge
    from ...protocols import LoadedProtocol

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "CHUNK_WORDS",
    "DEVIATIONS",
    "SPLITS",
    "MemoryAgentBench",
    "Record",
    "build",
    "chunk_context",
    "download_splits",
    "parse_records",
    "skipped_note",
    "split_file",
]

SPLITS: tuple[str, ...] = (
    "Accurate_Retrieval",
    "Test_Time_Learning",
    "Long_Range_Understanding",
    "Conflict_Resolution",
)
#: words per chunk: upstream packs sentences up to 4096 gpt-4o-mini tokens (o200k_base, whose BPE
#: file is not available offline); 3000 whitespace words is our stand-in (docs/scoring.md)
CHUNK_WORDS = 3000

CATEGORIES: Mapping[int | str, CategoryInfo] = MappingProxyType(
    named_categories(
        "memoryagentbench",
        {
            "Accurate_Retrieval": "find and use one or a few facts in a long history (AR)",
            "Test_Time_Learning": "learn a task (labels, preferences) from the history (TTL)",
            "Long_Range_Understanding": "understand or summarise the whole history (LRU)",
            "Conflict_Resolution": "answer with the latest of contradicting facts (CR)",
        },
    )
)

_HINT = "fix the file or export the split again from the Hugging Face dataset"

# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One row of a split (the fields the evaluation reads)."""

    index: int
    context: str
    questions: tuple[str, ...]
    answers: tuple[Any, ...]
    metadata: Mapping[str, Any]

    @property
    def source(self) -> str:
        return str(self.metadata.get("source", ""))

    @property
    def mismatch(self) -> str | None:
        """Why upstream skips this record (None: it does not): question and answer counts that
        differ, as ``load_references_from_huggingface`` of ``llm_based_eval/longmem_qa_evaluate.py``
        checks them for LongMemEval sources (questions, answers, ``question_ids``,
        ``question_types``: the same length) and, for the other sources, when both lists hold
        more than one entry (``conversation_creator.py`` pairs them)."""
        counts = {"questions": len(self.questions), "answers": len(self.answers)}
        if "longmemeval" in self.source:
            for name in ("question_ids", "question_types"):
                value = self.metadata.get(name)
                if isinstance(value, list):
                    counts[name] = len(value)
        elif len(self.questions) <= 1 or len(self.answers) <= 1:
            return None
        if len(set(counts.values())) == 1:
            return None
        return ", ".join(f"{n} {name}" for name, n in counts.items())


def _as_list(value: object) -> list[Any]:
    """Upstream ``_ensure_field_is_list``: a list stays, a truthy value is wrapped, else []."""
    if isinstance(value, list):
        return value
    return [value] if value else []


def _check_record(rec: object, i: int, source: str) -> Record:
    where = f"[{i}]"
    if not isinstance(rec, dict):
        raise DatasetError(f"a record must be an object; {_HINT}", path=source, record=where)
    context = rec.get("context")
    if not isinstance(context, str) or not context.strip():
        raise DatasetError(
            f"must be a non-empty string; {_HINT}", path=source, record=where, field="context"
        )
    meta = rec.get("metadata") or {}
    if not isinstance(meta, dict):
        raise DatasetError(
            f"must be an object; {_HINT}", path=source, record=where, field="metadata"
        )
    questions = _as_list(rec.get("questions"))
    answers = _as_list(rec.get("answers"))
    if not questions or not all(isinstance(q, str) for q in questions):
        raise DatasetError(
            f"must be a non-empty list of strings; {_HINT}",
            path=source,
            record=where,
            field="questions",
        )
    for j, answer in enumerate(answers):
        golds = answer if isinstance(answer, list) else [answer]
        if not golds or not all(isinstance(g, str) for g in golds):
            raise DatasetError(
                f"answer {j} must be a string or a non-empty list of strings; {_HINT}",
                path=source,
                record=where,
                field="answers",
            )
    if not answers:
        raise DatasetError(
            f"must hold at least one answer; {_HINT}", path=source, record=where, field="answers"
        )
    return Record(i, context, tuple(questions), tuple(answers), meta)


def _rows_from_json(raw: bytes, source: str) -> list[object]:
    fix = _HINT
    text = decode_text(raw, source, fix)
    if source.endswith(".jsonl"):
        return [row for _, row in parse_jsonl(text, source, fix)]
    top = parse_json(text, source, fix)
    if not isinstance(top, list):
        raise DatasetError(f"the top level must be a list of records; {fix}", path=source)
    return top


def _rows_from_parquet(path: str) -> list[object]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise DatasetError(
            "reading parquet needs pyarrow: pip install 'pytest-memeval[parquet]' (or export "
            "the split as .jsonl)",
            path=path,
        ) from None
    try:
        rows: list[object] = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family
        raise DatasetError(f"not a readable parquet file ({exc}); {_HINT}", path=path) from None
    return rows


def parse_records(raw: bytes, source: str) -> tuple[Record, ...]:
    """The records of one split file (``.json`` list, ``.jsonl`` or ``.parquet``); every problem is
    a DatasetError naming the file, the record (``[3]``) and the field."""
    rows = (
        _rows_from_parquet(source) if source.endswith(".parquet") else _rows_from_json(raw, source)
    )
    check_surrogates(rows, source)
    return tuple(_check_record(rec, i, source) for i, rec in enumerate(rows))


@functools.lru_cache(maxsize=1)
def _sentence_split() -> Callable[[str], list[str]]:
    """nltk's Punkt English sentence splitter with the pinned tables (built once)."""
    from ...metrics import nltk_tokenizers

    split: Callable[[str], list[str]] = nltk_tokenizers().sentences.tokenize
    return split


def chunk_context(text: str, words: int = CHUNK_WORDS) -> list[str]:
    """Punkt sentences packed in order into chunks of at most ``words`` whitespace words, joined
    with a space (a longer sentence is a chunk of its own), as upstream packs them by tokens."""
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in _sentence_split()(text):
        n = len(sentence.split())
        if current and count + n > words:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def _indexed(metadata: Mapping[str, Any], name: str, j: int) -> Any:
    """Upstream ``_get_field_value``: entry ``j`` of a list long enough, else the whole value
    (None when absent)."""
    value = metadata.get(name)
    if isinstance(value, list):
        return value[j] if j < len(value) else value
    return value


def _keypoints(metadata: Mapping[str, Any]) -> list[Any]:
    """Upstream ``load_data_from_huggingface``: ``metadata.keypoints``, else
    ``metadata['summary/short_keypoints']``, else none."""
    for name in ("keypoints", "summary/short_keypoints"):
        if name in metadata:
            value = metadata[name]
            return list(value) if isinstance(value, list) else [value]
    return []


def skipped_note(source: str, records: Sequence[Record]) -> str | None:
    """The one line that says which records of ``source`` were skipped (their question and
    answer counts differ) and why; None when none was."""
    skipped = [rec for rec in records if rec.mismatch is not None]
    if not skipped:
        return None
    which = "; ".join(f"[{rec.index}] {rec.mismatch}" for rec in skipped)
    return (
        f"memoryagentbench: skipped {len(skipped)} record(s) of {source} whose question and "
        f"answer counts differ, as upstream skips them: {which}"
    )


def build(split: str, records: Sequence[Record]) -> tuple[list[Conversation], list[Question]]:
    """Conversations (one per record, chunks as turns) and questions (one per question); a
    record whose counts differ (``Record.mismatch``) is skipped, as upstream skips it."""
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for rec in records:
        if rec.mismatch is not None:
            continue
        conv_id = f"{split}-{rec.index}"
        turns = tuple(
            Turn(f"C{n + 1}", "user", chunk) for n, chunk in enumerate(chunk_context(rec.context))
        )
        conversations.append(
            Conversation(
                id=conv_id,
                sessions=(Session(id="S1", date=None, turns=turns),),
                speakers=("user",),
                meta={"source": rec.source, "split": split},
            )
        )
        if len(rec.questions) > 1 and len(rec.answers) > 1:
            pairs = [(q, a) for q, a in zip(rec.questions, rec.answers, strict=True)]
        else:
            pairs = [(rec.questions[0], list(rec.answers))]
        judged = "longmemeval" in rec.source
        for j, (text, answer) in enumerate(pairs):
            per_question = {
                name: _indexed(rec.metadata, name, j)
                for name in ("qa_pair_ids", "question_ids", "question_types", "question_dates")
            }
            # the LongMemEval judge's "Correct Answer": upstream's longmem_qa_evaluate.py pairs
            # questions[i] with answers[i] whatever the counts (one question: answers[0])
            reference = {"reference_answer": rec.answers[j]} if judged else {}
            questions.append(
                Question(
                    id=f"{conv_id}-q{j + 1}",
                    conversation_id=conv_id,
                    category=split,
                    question=text,
                    gold=answer if isinstance(answer, str) else str(flatten_golds(answer)[0]),
                    category_id=split,
                    index=j + 1,
                    meta={
                        "source": rec.source,
                        "answers": answer,  # as upstream passes it: a string or a list
                        "qa_pair_id": per_question["qa_pair_ids"],
                        # read by the LLM judge of --memeval-protocol=memoryagentbench
                        "question_id": per_question["question_ids"],
                        "question_type": per_question["question_types"],
                        # the ∞Bench-Sum judge's key points (summarization_evaluate.py)
                        "keypoints": _keypoints(rec.metadata),
                        **reference,
                    },
                    question_date_raw=str(per_question["question_dates"] or ""),
                )
            )
    return conversations, questions


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------


def split_file(folder: Path, split: str) -> Path | None:
    """The file of ``split`` below ``folder``: ``<split>.jsonl`` / ``.json`` / ``.parquet``, or the
    Hugging Face layout ``data/<split>-*.parquet`` (one shard)."""
    for name in (f"{split}.jsonl", f"{split}.json", f"{split}.parquet"):
        if (folder / name).is_file():
            return folder / name
    shards = sorted((folder / "data").glob(f"{split}-*.parquet"))
    if len(shards) > 1:
        raise DatasetError(
            f"{len(shards)} parquet shards for {split}; merge them into {split}.parquet",
            path=str(folder / "data"),
        )
    return shards[0] if shards else None


@functools.lru_cache(maxsize=8)
def _build(paths: tuple[str, ...], split: str, key: tuple[tuple[int, int], ...]) -> Parsed:
    del key  # cache key only (mtime and size)
    (path,) = paths
    raw = read_bytes(path, _HINT)
    records = parse_records(raw, path)
    conversations, questions = build(split, records)
    note = skipped_note(path, records)
    return Parsed(
        tuple(conversations),
        tuple(questions),
        (hashlib.sha256(raw).hexdigest(),),
        notes=(note,) if note else (),
    )


def _attach_movie_table(
    questions: list[Question],
    folder: Path,
    data_dir: Path,
    files: list[Path],
    sha: dict[str, str],
) -> list[Question]:
    """Recommendation questions get the path of ``DIR/memoryagentbench/entity2id.json`` (read
    by the scorer, on every worker), recorded with its sha256 beside the split files; without
    the file they stay unscored (``unscored_reason``)."""
    path = folder / RECSYS_TABLE
    recsys = [q for q in questions if "recsys" in str(q.meta.get("source", ""))]
    if not recsys or not path.is_file():
        return questions
    table = str(path.resolve())
    _read_movie_table(table)  # a bad table is a load error, not a scoring one
    files.append(path)
    sha[str(path.relative_to(data_dir))] = hashlib.sha256(read_bytes(table, _HINT)).hexdigest()
    wanted = {q.id for q in recsys}
    return [
        replace(q, meta={**q.meta, "movie_table": table}) if q.id in wanted else q
        for q in questions
    ]


def download_splits(request: LoadRequest, splits: Sequence[str], pins: Pins = PINS) -> Path:
    """Fetch the pinned parquet shard of each split into the cache (Hugging Face's layout,
    ``data/<Split>-00000-of-00001.parquet``), with Test_Time_Learning the movie table its
    recommendation questions are scored with, and return the cache's data folder."""
    root = Path(request.cache_dir) / "data"
    for split in splits:
        fetch_pinned(
            pins, split, root, what=f"the MemoryAgentBench {split} split", progress=request.progress
        )
    if "Test_Time_Learning" in splits and "entity2id" in pins.files:  # its recsys questions
        what = "the MemoryAgentBench movie table"
        fetch_pinned(pins, "entity2id", root, what=what, progress=request.progress)
    return root


@dataclass(frozen=True, eq=False)
class MemoryAgentBench:
    """The four splits of MemoryAgentBench, read from ``DIR/memoryagentbench`` or downloaded."""

    name: str = "memoryagentbench"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = (
        "mab_score",
        "substring_exact_match",
        "exact_match",
        "f1",
        "eventqa_recall",
        "ruler_recall",
        *RECSYS_METRICS,
        *ROUGE_METRICS,
    )
    #: why a question may have no pass metric offline (shown beside the UNSCORED count)
    unscored_reason: str = (
        f"a recommendation (recsys) question is scored against upstream's movie table: put "
        f"entity2id.json in DIR/{FOLDER}/ (and pip install 'pytest-memeval[{ROUGE_EXTRA}]' for "
        "editdistance)"
    )
    pass_metric: str = "mab_score"
    default_threshold: float = 1.0
    cluster_unit: str = "conversation"
    #: the release a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: Pins = PINS

    def load(self, request: LoadRequest) -> Dataset:
        wanted = (request.variant,) if request.variant else SPLITS
        for split in wanted:
            if split not in SPLITS:
                raise DatasetError(
                    f"unknown split {split!r}; MemoryAgentBench has {', '.join(SPLITS)}"
                )
        source = "data_dir"
        if request.data_dir is None:
            request = replace(request, data_dir=download_splits(request, wanted, self.pins))
            source = f"huggingface:{self.pins.repo}@{self.pins.revision}"
        assert request.data_dir is not None
        folder = Path(request.data_dir) / FOLDER
        dataset = load_parts(
            request,
            self.name,
            [
                (split, (split_file(folder, split) or folder / f"{split}.jsonl",))
                for split in wanted
            ],
            _build,
            f"no split file found. --memeval-data=DIR expects DIR/{FOLDER}/<Split>.jsonl "
            f"(or .json, .parquet, or data/<Split>-*.parquet as on Hugging Face) for the "
            f"splits {', '.join(wanted)}",
            {
                "source": source,
                "upstream": UPSTREAM.label,
                "chunking": f"Punkt sentences packed to {CHUNK_WORDS} words",
            },
        )
        dataset.questions = _attach_movie_table(
            dataset.questions, folder, request.data_dir, dataset.files, dataset.sha256
        )
        return dataset

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_memoryagentbench(question, prediction)

    def unscored_metrics(self) -> Mapping[str, str]:
        """The metrics this installation leaves UNSCORED, with the extra to install: ROUGE
        without rouge-score, the recommendation recalls without editdistance."""
        out = {} if rouge_available() else dict.fromkeys(ROUGE_METRICS, ROUGE_MISSING)
        if _edit_distance() is None:
            out.update(dict.fromkeys(RECSYS_METRICS, EDITDISTANCE_MISSING))
        return out

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=memoryagentbench`` (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)

    def official_answerer(self, protocol: LoadedProtocol) -> SuiteAnswerer | None:
        """The answer request of ``--memeval-protocol=memoryagentbench`` (:mod:`._answer`)."""
        from ._answer import official_answerer

        return official_answerer(protocol)


BENCHMARK = MemoryAgentBench()

#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "skipped-records",
        "LongMemEval sources with mismatched question/answer/id/type counts are skipped; "
        "conversation_creator.py zips other mismatched lists, dropping the extra entries",
        "every record whose counts differ is skipped and named once in a run note and in "
        "provenance.datasets.memoryagentbench.notes (no question paired with the wrong answer)",
        "memoryagentbench-records",
    ),
    Deviation(
        "chunking",
        "contexts are packed into chunks of at most 4096 gpt-4o-mini tokens",
        "the same Punkt sentences packed into chunks of at most 3000 whitespace words (o200k_base "
        "is not available offline): boundaries differ, text and order do not",
        "memoryagentbench-records",
    ),
)
