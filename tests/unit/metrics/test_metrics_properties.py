"""Property and differential tests for ``pytest_memeval.metrics``.

- Hypothesis: no metric raises on any text (surrogates and control characters included), every
  value lies in [0, 1], F1 variants and exact match are symmetric, normalisation is idempotent.
- Differential: ``locomo_f1`` equals the plain reference implementation in ``perf/bench_f1.py``
  (written from docs/scoring.md without caching) on 2,000 seeded random inputs and on
  Hypothesis-generated ones.
"""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_memeval.metrics import (
    bleu1,
    evidence_recall,
    exact_match,
    keyword_recall,
    locomo_f1,
    ndcg_any_at_k,
    normalize_answer,
    ordering_score,
    recall_all_at_k,
    recall_any_at_k,
    set_f1,
    token_f1,
)

REPO = Path(__file__).resolve().parents[3]


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_f1", REPO / "perf" / "bench_f1.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _load_bench()

# Any code point, surrogates (Cs) and control characters (Cc) included.
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=60)

# Text built from pieces that exercise every normalisation rule.
PIECES = [
    "the",
    "The",
    "a",
    "an",
    "and",
    "AND",
    "Anderson",
    "running",
    "runs",
    "studies",
    "study",
    "quickly",
    "Paris",
    "paris",
    "London",
    "7",
    "May",
    "2023",
    "2022",
    "$1,000",
    "3.5",
    "U.S.A.",
    "state-of-the-art",
    "don't",
    "café",
    "Café",
    "Zoë",
    "北京",
    "上海",
    "“quoted”",
    "hiking—camping",
    "a\u0301",
    "ΣΑΣ",
    "İstanbul",
    "not mentioned",
    "No information available",
    ",",
    ", ",
    ";",
    "; ",
    ".",
    "!",
    "\n",
    "\t",
    "\u00a0",
    "  ",
]
PIECE_TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join)
MIXED_TEXT = st.one_of(PIECE_TEXT, ANY_TEXT)
GOLD = st.one_of(MIXED_TEXT, st.integers(min_value=-5, max_value=3000))

PROPS = settings(max_examples=300, deadline=None)


def _in_unit(x: float) -> bool:
    return 0.0 <= x <= 1.0


@PROPS
@given(ANY_TEXT, ANY_TEXT, st.integers(min_value=1, max_value=5))
def test_never_raises_and_in_unit_interval(pred: str, gold: str, category: int) -> None:
    assert _in_unit(locomo_f1(pred, gold, category))
    assert _in_unit(token_f1(pred, gold))
    assert _in_unit(set_f1(pred, gold))
    assert _in_unit(exact_match(pred, gold))
    assert _in_unit(bleu1(pred, gold))
    recall = keyword_recall(pred, [gold, [gold[:3], pred[-2:]]])
    assert recall is not None and _in_unit(recall)
    assert isinstance(normalize_answer(pred), str)


@PROPS
@given(MIXED_TEXT, GOLD, st.integers(min_value=1, max_value=5))
def test_mixed_inputs_in_unit_interval(pred: str, gold: str | int, category: int) -> None:
    value = locomo_f1(pred, gold, category)
    assert type(value) is float and _in_unit(value)
    assert _in_unit(set_f1(pred, gold))
    assert _in_unit(bleu1(pred, gold))


@PROPS
@given(MIXED_TEXT, MIXED_TEXT)
def test_symmetric_metrics(a: str, b: str) -> None:
    assert token_f1(a, b) == token_f1(b, a)
    assert set_f1(a, b) == set_f1(b, a)
    assert exact_match(a, b) == exact_match(b, a)


@PROPS
@given(MIXED_TEXT)
def test_normalize_answer_idempotent(text: str) -> None:
    once = normalize_answer(text)
    assert normalize_answer(once) == once


@PROPS
@given(MIXED_TEXT)
def test_self_scores(text: str) -> None:
    # a text either matches itself perfectly or normalises to nothing (then 0, never 1)
    expected = 1.0 if normalize_answer(text) else 0.0
    assert token_f1(text, text) == pytest.approx(expected)


@PROPS
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "A", "", "x"]), max_size=8),
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5, unique=True),
)
def test_ordering_score_ranges(system: list[str], reference: list[str]) -> None:
    result = ordering_score(system, reference)
    for value in (result.precision, result.recall, result.f1):
        assert _in_unit(value)
    if not math.isnan(result.tau_norm):
        assert -1e-12 <= result.tau_norm <= 1 + 1e-12
        assert result.final_score == pytest.approx(result.tau_norm * result.f1)


@PROPS
@given(
    st.lists(st.sampled_from(["s1", "s2", "s3", "s4", "answer_a", "answer_b"]), max_size=8),
    st.sets(st.sampled_from(["s1", "answer_a", "answer_b", "answer_z"]), max_size=3),
    st.integers(min_value=1, max_value=10),
)
def test_retrieval_ranges(ranked: list[str], correct: set[str], k: int) -> None:
    assert _in_unit(ndcg_any_at_k(ranked, correct, k))
    assert recall_all_at_k(ranked, correct, k) <= 1.0
    if correct:
        assert recall_any_at_k(ranked, correct, k) >= recall_all_at_k(ranked, correct, k)
    assert _in_unit(evidence_recall(ranked, sorted(correct)))


# --- differential against the plain reference implementation ---


def _random_text(rng: random.Random) -> str:
    parts = [rng.choice(PIECES) for _ in range(rng.randint(0, 10))]
    if rng.random() < 0.2:
        parts.append("".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 6))))
    separators = [" ", " ", " ", ",", ", ", ";", "-", ""]
    out = ""
    for part in parts:
        out += part + rng.choice(separators)
    return out


def test_locomo_f1_differential_seeded() -> None:
    rng = random.Random(20240611)
    checked = 0
    for _ in range(2000):
        category = rng.randint(1, 5)
        gold: str | int = rng.randint(0, 3000) if rng.random() < 0.05 else _random_text(rng)
        pred = _random_text(rng) if rng.random() < 0.8 else f"{gold} {_random_text(rng)}"
        assert locomo_f1(pred, gold, category) == BENCH.plain_locomo_f1(pred, gold, category), (
            pred,
            gold,
            category,
        )
        checked += 1
    assert checked == 2000


@PROPS
@given(MIXED_TEXT, GOLD, st.integers(min_value=1, max_value=5))
def test_locomo_f1_differential_hypothesis(pred: str, gold: str | int, category: int) -> None:
    assert locomo_f1(pred, gold, category) == BENCH.plain_locomo_f1(pred, gold, category)


@PROPS
@given(MIXED_TEXT)
def test_normalize_answer_matches_plain(text: str) -> None:
    assert normalize_answer(text) == BENCH.plain_normalize_answer(text)
