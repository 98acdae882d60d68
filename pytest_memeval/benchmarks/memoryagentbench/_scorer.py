"""MemoryAgentBench's offline scorer: upstream ``utils/eval_other_utils.py`` rule by rule (our
own code), routed by the record's ``metadata.source`` as its ``post_process`` does
(docs/scoring.md#memoryagentbench); the movie table its recommendation questions need."""

from __future__ import annotations

import functools
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from ...errors import DatasetError
from ...records import Prediction, Question
from .._base import (
    decode_text,
    parse_json,
    read_bytes,
)

__all__ = [
    "EDITDISTANCE_MISSING",
    "RECSYS_METRICS",
    "RECSYS_TABLE",
    "ROUGE_EXTRA",
    "ROUGE_METRICS",
    "ROUGE_MISSING",
    "MovieTable",
    "exact_match",
    "f1_score",
    "flatten_golds",
    "movie_name",
    "movie_table",
    "normalize_answer",
    "parse_output",
    "recommended_movies",
    "recsys_recall",
    "rouge_available",
    "rouge_scores",
    "score_memoryagentbench",
    "score_source",
    "substring_exact_match",
]

_HINT = "fix the file or export the split again from the Hugging Face dataset"


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
def shared_rouge_scorer() -> _RougeScorer | None:
    """Upstream's scorer object, built once; None when rouge-score is not installed."""
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        return None
    scorer: _RougeScorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    return scorer


def rouge_available() -> bool:
    return shared_rouge_scorer() is not None


def rouge_scores(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    """ROUGE-L and ROUGE-Lsum (F-measure and recall) of ``prediction``, each the best over
    ``golds``, computed by rouge-score as upstream's ``calculate_metrics`` does; NaN (UNSCORED,
    never 0) for each when rouge-score is not installed."""
    scorer = shared_rouge_scorer()
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
