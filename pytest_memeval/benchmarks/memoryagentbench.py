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
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from ..errors import DatasetError
from ..records import Conversation, Prediction, Question, Session, Turn
from .base import (
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
from .download import PinnedFile, Pins, fetch_pinned

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "CHUNK_WORDS",
    "DEVIATIONS",
    "HF_DATASET",
    "RECSYS_METRICS",
    "RECSYS_TABLE",
    "ROUGE_EXTRA",
    "ROUGE_METRICS",
    "SPLITS",
    "UPSTREAM_COMMIT",
    "UPSTREAM_SCORER_SHA256",
    "MemoryAgentBench",
    "MovieTable",
    "Record",
    "chunk_context",
    "exact_match",
    "f1_score",
    "movie_name",
    "movie_table",
    "normalize_answer",
    "parse_output",
    "parse_records",
    "query_dataset",
    "recommended_movies",
    "recsys_recall",
    "rouge_available",
    "rouge_scores",
    "score_memoryagentbench",
    "score_source",
    "skipped_note",
    "substring_exact_match",
]

#: the upstream repository commit whose loader and scorer this module follows
UPSTREAM_COMMIT = "455306dcabc3842526eb83cd4e225e5d486c5c5d"
#: sha256 of ``utils/eval_other_utils.py`` at that commit (the scorer the tests compare against)
UPSTREAM_SCORER_SHA256 = "d77976be409298970614d477a9d8003850caddb0510e56a7e821a037d98493a2"
#: sha256 of the loader files read at that commit (``utils/eval_data_utils.py``,
#: ``conversation_creator.py``)
UPSTREAM_LOADER_SHA256: Mapping[str, str] = MappingProxyType(
    {
        "utils/eval_data_utils.py": "f5d564996d63a07454999e94ab01087d4d07939f69936045c700fd57d338cb68",
        "conversation_creator.py": "9a527e88c9791b37d378b59adac50d9308aac49e714f1d8ddaf3e14bb3f3bec5",
    }
)
HF_DATASET = "ai-hyz/MemoryAgentBench"
FOLDER = "memoryagentbench"
SPLITS: tuple[str, ...] = (
    "Accurate_Retrieval",
    "Test_Time_Learning",
    "Long_Range_Understanding",
    "Conflict_Resolution",
)


def _shard(path: str, sha256: str, size: int | None) -> PinnedFile:
    return PinnedFile.below(FOLDER, path, sha256, size)


#: the release: the Hugging Face dataset at a revision, one parquet shard per split and the
#: recommendation split's movie table (``entity2id.json`` at the root, fetched with
#: Test_Time_Learning; its size is left open: only one public source records it)
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="7ea066982b140a19337e17e60d45d4076e042faf",
    files={
        "Accurate_Retrieval": _shard(
            "data/Accurate_Retrieval-00000-of-00001.parquet",
            "56c3cd80fb6731a3e53cd1a6be3148f54df60ff2d290ee50e28f8acebf9655c1",
            20_024_386,
        ),
        "Test_Time_Learning": _shard(
            "data/Test_Time_Learning-00000-of-00001.parquet",
            "5338753be48f925d03318eed66117286e3489025fabe050a547bd086cd7d79c0",
            3_947_476,
        ),
        "Long_Range_Understanding": _shard(
            "data/Long_Range_Understanding-00000-of-00001.parquet",
            "5ab175461954db67770d4a4cb69e569b513ebb96aceb9ee79b57f67488bcd539",
            49_342_452,
        ),
        "Conflict_Resolution": _shard(
            "data/Conflict_Resolution-00000-of-00001.parquet",
            "24d5c3f09ce0ce15625cb9f8a98f44f0d864ca6c94d7b4ad04eb697ca3a5ff45",
            1_491_588,
        ),
        "entity2id": _shard(
            "entity2id.json",
            "63353aca481bc9558b502f91cb98f6fa26438796fdd7e0bc06b5a1532126e8b5",
            None,
        ),
    },
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
# scoring: upstream utils/eval_other_utils.py, rule by rule (our own code)
# ---------------------------------------------------------------------------------------------

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    """Lower-case, drop ASCII punctuation, articles as whole words become spaces, collapse
    whitespace (in that order, as upstream ``normalize_answer``)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of the normalised texts; 0 when either side is yes / no / noanswer and they
    differ, or when no token is shared."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(ref_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return 1.0 if normalize_answer(prediction) == normalize_answer(gold) else 0.0


def substring_exact_match(prediction: str, gold: str) -> float:
    return 1.0 if normalize_answer(gold) in normalize_answer(prediction) else 0.0


_ANSWER_LINE = re.compile(r"(?:Answer:)(.*)(?:\n|$)", re.IGNORECASE)
_FIRST_LINE = re.compile(r"(?:^)(.*)(?:\n|$)")
_ANSWER_PREFIX = re.compile(r"^Answer:", re.IGNORECASE)


def parse_output(output: str) -> str:
    """The answer in a reply: the rest of the first line after ``Answer:`` (any case), else the
    first line; stripped, one more leading ``Answer:`` removed (upstream ``parse_output``)."""
    for pattern in (_ANSWER_LINE, _FIRST_LINE):
        m = pattern.search(output)
        if m:
            return _ANSWER_PREFIX.sub("", m[1].strip()).strip()
    return ""  # unreachable: the first-line pattern matches every string


def flatten_golds(answers: Sequence[Any]) -> list[str]:
    """The golds a question is scored against: upstream flattens one level when the first
    entry is a list."""
    if answers and isinstance(answers[0], list):
        return [g for sub in answers for g in sub]
    return list(answers)


def _best(metric: Callable[[str, str], float], prediction: str, golds: Sequence[str]) -> float:
    return max(metric(prediction, g) for g in golds)


#: the ROUGE metrics upstream's ``calculate_metrics`` adds (``RougeScorer(['rougeL', 'rougeLsum'],
#: use_stemmer=True)``; per type the F-measure and the recall, each the best over the golds)
ROUGE_TYPES: tuple[str, ...] = ("rougeL", "rougeLsum")
ROUGE_METRICS: tuple[str, ...] = tuple(
    f"{kind}_{part}" for kind in ROUGE_TYPES for part in ("f1", "recall")
)
#: the extra that installs rouge-score, the library upstream's scorer calls
ROUGE_EXTRA = "memoryagentbench"
ROUGE_MISSING = (
    f"rouge-score is not installed: pip install 'pytest-memeval[{ROUGE_EXTRA}]' (the ROUGE "
    "library upstream's scorer calls)"
)


class _RougeScore(Protocol):
    fmeasure: float
    recall: float


class _RougeScorer(Protocol):
    def score(self, target: str, prediction: str) -> Mapping[str, _RougeScore]: ...


@functools.lru_cache(maxsize=1)
def _rouge_scorer() -> _RougeScorer | None:
    """Upstream's scorer object, built once; None when rouge-score is not installed."""
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        return None
    scorer: _RougeScorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    return scorer


def rouge_available() -> bool:
    return _rouge_scorer() is not None


def rouge_scores(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    """ROUGE-L and ROUGE-Lsum (F-measure and recall) of ``prediction``, each the best over
    ``golds``, computed by rouge-score as upstream's ``calculate_metrics`` does; NaN (UNSCORED,
    never 0) for each when rouge-score is not installed."""
    scorer = _rouge_scorer()
    if scorer is None:
        return dict.fromkeys(ROUGE_METRICS, math.nan)
    per_gold = [scorer.score(target=gold, prediction=prediction) for gold in golds]
    out: dict[str, float] = {}
    for kind in ROUGE_TYPES:
        out[f"{kind}_f1"] = max(float(s[kind].fmeasure) for s in per_gold)
        out[f"{kind}_recall"] = max(float(s[kind].recall) for s in per_gold)
    return out


def _lexical(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    """Upstream ``calculate_metrics``: the lexical scores, then ROUGE."""
    return {
        "exact_match": _best(exact_match, prediction, golds),
        "f1": _best(f1_score, prediction, golds),
        "substring_exact_match": _best(substring_exact_match, prediction, golds),
        **rouge_scores(prediction, golds),
    }


def _raw_or_parsed(output: str, golds: Sequence[str]) -> dict[str, float]:
    raw = _lexical(output, golds)
    parsed = _lexical(parse_output(output), golds)
    return {k: _max(v, parsed[k]) for k, v in raw.items()}


def _max(a: float, b: float) -> float:
    """``max`` that keeps NaN (an UNSCORED metric stays UNSCORED)."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def _all_found(output: str, elements: Sequence[str]) -> float:
    low = output.lower()
    return sum(1 for e in elements if e.lower() in low) / len(elements)


def _elements(answer: str | Sequence[Any]) -> list[str]:
    """What upstream's recall loops iterate: the gold list (a bare string: its characters)."""
    return [str(e) for e in answer]


# ---------------------------------------------------------------------------------------------
# recommendation (recsys): upstream _process_recsys_dataset and its helpers, rule by rule
# ---------------------------------------------------------------------------------------------

#: upstream reads ``./processed_data/Recsys_Redial/entity2id.json`` (movie name -> id), which is
#: not a field of the dataset: ``DIR/memoryagentbench/entity2id.json`` here
RECSYS_TABLE = "entity2id.json"
RECSYS_METRICS: tuple[str, ...] = ("recsys_recall@1", "recsys_recall@5", "recsys_recall@10")
EDITDISTANCE_MISSING = (
    f"editdistance is not installed: pip install 'pytest-memeval[{ROUGE_EXTRA}]' (the edit "
    "distance library upstream's recommendation scorer calls)"
)
_PARENS = re.compile(r"\([^()]*\)")
_NUMBERING = re.compile(r"^(?:\d+[\.\)、]?\s*[\-\—\–]?\s*)?")
_SPACES = re.compile(r"\s+")


def _clean_item(text: str) -> str:
    """Upstream ``clean_text_elements``: drop ``(...)`` groups, a leading number ``1.`` / ``2)``
    with an optional dash, collapse whitespace."""
    text = _PARENS.sub("", text)
    text = _NUMBERING.sub("", text)
    return _SPACES.sub(" ", text).strip()


def movie_name(entity: str) -> str:
    """Upstream ``extract_movie_name``: the last ``/`` part, ``_ - >`` as spaces, ``(...)``
    dropped, whitespace collapsed."""
    name = entity.split("/")[-1].replace("_", " ").replace("-", " ").replace(">", " ")
    return _SPACES.sub(" ", _PARENS.sub("", name)).strip()


@dataclass(frozen=True)
class MovieTable:
    """``entity2id.json`` as upstream uses it: id -> cleaned name (a later entity with the same
    id wins, as in upstream's dict comprehension), and the distinct names in table order."""

    names: Mapping[int, str]
    candidates: tuple[str, ...]
    lowered: tuple[str, ...]


def movie_table(entity2id: Mapping[str, Any]) -> MovieTable:
    names = {entity_id: movie_name(name) for name, entity_id in entity2id.items()}
    candidates = tuple(dict.fromkeys(names.values()))
    return MovieTable(MappingProxyType(names), candidates, tuple(c.lower() for c in candidates))


@functools.lru_cache(maxsize=2)
def _read_movie_table(path: str) -> MovieTable:
    raw = read_bytes(path, "export entity2id.json from upstream's Recsys_Redial data")
    data = parse_json(decode_text(raw, path, _HINT), path, _HINT)
    if not isinstance(data, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in data.values()
    ):
        raise DatasetError("must be an object of movie name -> integer id", path=path)
    return movie_table(data)


def _edit_distance() -> Callable[[str, str], int] | None:
    try:
        import editdistance  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    distance: Callable[[str, str], int] = editdistance.eval
    return distance


def recommended_movies(
    output: str, table: MovieTable, distance: Callable[[str, str], int]
) -> list[str]:
    """Upstream ``extract_recommendation_list`` with the table: the text after the first ``1.``
    (no ``1.``: the whole text, commas as line breaks), one item per line, cleaned, each mapped to
    the nearest movie name by edit distance of the lower-cased names (empty lines too, as
    upstream). Ties go to the first name in table order (upstream: ``list(set(...))`` order,
    which depends on Python's string hash seed)."""
    parts = output.split("1.", 1)
    text = parts[1] if len(parts) == 2 else output.replace(",", "\n")
    movies = []
    for line in text.split("\n"):
        item = _clean_item(line.strip()).lower()
        distances = [distance(item, c) for c in table.lowered]
        best = min(range(len(distances)), key=distances.__getitem__)
        movies.append(table.candidates[best])
    return movies


def recsys_recall(
    output: str,
    answer: str | Sequence[Any],
    table: MovieTable | None,
    distance: Callable[[str, str], int] | None = None,
) -> dict[str, float]:
    """Recall@1/5/10 of the gold movie ids (the answer's entries, each an id string; a bare
    string is iterated by character, as upstream does) among the recommended movies, compared by
    name; NaN for each when editdistance is missing, {} (UNSCORED) without a table or with an id
    the table lacks (upstream raises there)."""
    if table is None or not table.candidates:
        return {}
    try:
        ids = [int(str(e).strip()) for e in answer]
    except ValueError:
        return {}
    if not ids or any(i not in table.names for i in ids):
        return {}
    distance = distance or _edit_distance()
    if distance is None:
        return dict.fromkeys(RECSYS_METRICS, math.nan)
    predicted = recommended_movies(output, table, distance)
    gold = [table.names[i] for i in ids]
    return {
        f"recsys_recall@{k}": sum(m in predicted[:k] for m in gold) / len(gold) for k in (1, 5, 10)
    }


def score_source(
    source: str,
    output: str,
    answer: str | Sequence[Any],
    table: MovieTable | None = None,
    distance: Callable[[str, str], int] | None = None,
) -> dict[str, float]:
    """Upstream's metrics for one reply, chosen by the record's ``metadata.source`` as its
    ``post_process`` routes them (ROUGE is NaN, UNSCORED, without rouge-score). ``answer`` is the
    gold list of the question. Recommendation (``recsys``) needs upstream's movie ``table``
    (``entity2id.json``; {} without it); ``distance`` replaces editdistance (tests)."""
    golds = [answer] if isinstance(answer, str) else flatten_golds(answer)
    if not golds:
        return {}  # upstream: max() of nothing raises
    if "icl" in source:
        return _lexical(parse_output(output), golds)
    if "eventqa" in source:
        scores = _lexical(parse_output(output), golds)
        if _elements(answer):  # upstream divides by len(answer)
            scores["eventqa_recall"] = 1.0 if _all_found(output, _elements(answer)) == 1 else 0.0
        return scores
    if "infbench" in source or "longmemeval" in source:
        if "choice_eng" in source:
            scores = _raw_or_parsed(output, golds)
            hit = str(answer[1]).lower() in output.lower() if len(answer) > 1 else False
            scores["substring_exact_match"] = 1.0 if hit else 0.0
            if hit:
                scores["exact_match"] = 1.0
            return scores
        return _raw_or_parsed(output, golds)
    if "ruler" in source or "mermory_merging" in source:  # sic: upstream's spelling
        if "ruler_niah" in source:
            elements = _elements(answer)
            return {"ruler_recall": _all_found(output, elements)} if elements else {}
        return _raw_or_parsed(output, golds)
    if "recsys" in source:
        return recsys_recall(output, answer, table, distance)
    return _raw_or_parsed(output, golds)


#: the per-question headline (our pass metric): the paper's "accuracy" per dataset as upstream's
#: README maps it (``exact_match`` for ICL and DetectiveQA, Recall@5 for recsys,
#: ``substring_exact_match`` otherwise), ``ruler_recall`` for needle-in-a-haystack (its only
#: metric)
def _headline(source: str, scores: Mapping[str, float]) -> float | None:
    if "ruler_recall" in scores:
        return scores["ruler_recall"]
    if "icl" in source or "detective" in source:
        return scores.get("exact_match")
    if "recsys" in source:
        return scores.get("recsys_recall@5")
    return scores.get("substring_exact_match")


def score_memoryagentbench(question: Question, prediction: Prediction) -> dict[str, float]:
    source = str(question.meta.get("source", ""))
    answers = question.meta.get("answers", [])
    table_path = question.meta.get("movie_table")
    table = _read_movie_table(str(table_path)) if table_path else None
    scores = score_source(source, prediction.text, answers, table)
    headline = _headline(source, scores)
    if headline is not None:
        scores["mab_score"] = headline
    return scores


# ---------------------------------------------------------------------------------------------
# the answer request (upstream utils/templates.py, rules only: the text is read at run time)
# ---------------------------------------------------------------------------------------------

#: upstream ``DATASET_MAPPING``: (substrings that must all be in the source) -> its template set,
#: tried in this order (``normalize_dataset_name``)
QUERY_DATASETS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ruler_", "qa"), "ruler_qa"),
    (("icl_",), "in_context_learning"),
    (("infbench_", "sum"), "infbench_sum"),
    (("eventqa_",), "eventqa"),
    (("recsys_", "redial"), "recsys_redial"),
    (("longmemeval_",), "longmemeval"),
    (("factconsolidation_",), "factconsolidation"),
    (("detective_", "qa"), "detective_qa"),
)
#: ``generation_max_length`` of upstream's dataset configs (configs/data_conf/*.yaml: the same
#: value for every config of a template set): the answer's ``max_tokens``
GENERATION_MAX_LENGTH: Mapping[str, int] = MappingProxyType(
    {
        "ruler_qa": 50,
        "longmemeval": 50,
        "eventqa": 40,
        "in_context_learning": 20,
        "recsys_redial": 300,
        "infbench_sum": 1200,
        "detective_qa": 2000,
        "factconsolidation": 10,
    }
)


def query_dataset(source: str) -> str | None:
    """The template set upstream's ``get_template`` picks for ``source`` (None: upstream has
    none and raises, e.g. ``ruler_niah_*``)."""
    for patterns, name in QUERY_DATASETS:
        if all(p in source for p in patterns):
            return name
    return None


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
    from ..metrics.word_tokenize import _tokenizers

    split: Callable[[str], list[str]] = _tokenizers().sentences.tokenize
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
                "upstream": f"HUST-AI-HYZ/MemoryAgentBench@{UPSTREAM_COMMIT}",
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
