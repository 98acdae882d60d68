"""Hypothesis properties for the metrics that tests/unit/metrics/test_metrics_properties.py does not cover:
tokenisers and the stemmer, rubric (nugget) aggregation, ordering on arbitrary text, keyword and
evidence recall on arbitrary ids, and the retrieval helpers. Any code point, surrogates included."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_memeval.metrics import (
    case_insensitive_equal,
    dcg,
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    evidence_recall,
    keyword_recall,
    ndcg_any_at_k,
    nugget_score,
    official_nugget_score,
    ordering_score,
    recall_all_at_k,
    recall_any_at_k,
    response_lines,
    round3,
    simple_tokenize,
    stem,
    stemmed_tokens,
)

ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=40)
IDS = st.lists(st.sampled_from(["s1", "s2", "s3", "answer_1", "answer_2", "x_1", ""]), max_size=8)
PROPS = settings(max_examples=200, deadline=None)


def _unit(x: float) -> bool:
    return 0.0 <= x <= 1.0


@PROPS
@given(ANY_TEXT)
def test_tokenisers_never_raise(text: str) -> None:
    tokens = simple_tokenize(text)
    assert all(isinstance(t, str) and t for t in tokens)
    assert all(isinstance(t, str) for t in stemmed_tokens(text))
    assert isinstance(stem(text), str)
    assert "\n".join(response_lines(text)) == text  # split on newlines only, lossless


@PROPS
@given(ANY_TEXT, ANY_TEXT)
def test_case_insensitive_equal_is_symmetric(a: str, b: str) -> None:
    assert case_insensitive_equal(a, b) == case_insensitive_equal(b, a)
    assert case_insensitive_equal(a, a)


@PROPS
@given(st.lists(ANY_TEXT, max_size=6), st.lists(ANY_TEXT, min_size=1, max_size=6))
def test_ordering_on_any_text(system: list[str], reference: list[str]) -> None:
    result = ordering_score(system, reference)
    assert _unit(result.precision) and _unit(result.recall) and _unit(result.f1)
    if not math.isnan(result.tau_norm):
        assert -1e-12 <= result.tau_norm <= 1 + 1e-12
        assert -1e-12 <= result.final_score <= 1 + 1e-12


@PROPS
@given(
    st.lists(
        st.one_of(
            st.sampled_from([0, 1, 0.5, 1.0, 0.0, "1", "0", "0.5", "1.0"]),
            st.floats(allow_nan=True, allow_infinity=True),
            ANY_TEXT,
        ),
        max_size=6,
    )
)
def test_nugget_score_in_unit_or_value_error(scores: list[float | int | str]) -> None:
    try:
        result = nugget_score(scores)
    except ValueError:
        return  # empty rubric, a non-number or a value outside [0, 1]: a clear ValueError
    assert _unit(result.mean) and result.count == len(scores)
    assert result.official is None or _unit(result.official)
    if result.official is not None:
        assert result.official == official_nugget_score(scores)


@PROPS
@given(ANY_TEXT, st.lists(st.one_of(ANY_TEXT, st.lists(ANY_TEXT, max_size=3)), max_size=5))
def test_keyword_recall_any_facts(answer: str, facts: list[str | list[str]]) -> None:
    value = keyword_recall(answer, facts)
    if not facts:
        assert value is None  # no facts: skipped, never scored 0
    else:
        assert value is not None and _unit(value)


@PROPS
@given(st.lists(ANY_TEXT, max_size=6), st.lists(ANY_TEXT, max_size=6))
def test_evidence_recall_any_ids(retrieved: list[str], evidence: list[str]) -> None:
    assert _unit(evidence_recall(retrieved, evidence))
    assert _unit(evidence_recall(None, evidence))


@PROPS
@given(
    IDS,
    st.sets(st.sampled_from(["s1", "answer_1", "answer_2", "zz"]), max_size=3),
    st.integers(min_value=1, max_value=10),
)
def test_recall_and_ndcg_in_unit_interval(ranked: list[str], correct: set[str], k: int) -> None:
    any_k, all_k = recall_any_at_k(ranked, correct, k), recall_all_at_k(ranked, correct, k)
    assert _unit(any_k) and _unit(all_k)
    assert _unit(ndcg_any_at_k(ranked, correct, k))


@PROPS
@given(st.lists(st.floats(min_value=0, max_value=1), max_size=8), st.integers(0, 10))
def test_dcg_non_negative(relevances: list[float], k: int) -> None:
    value = dcg(relevances, k)
    assert value >= 0.0 and math.isfinite(value)


@PROPS
@given(
    st.lists(
        st.sampled_from(["s1_1", "s1_2", "answer_a_1", "answer_a_2", "s2_1"]),
        min_size=1,
        max_size=5,
        unique=True,
    ),
    st.sets(st.sampled_from(["s1", "answer_a", "answer_a_1"]), max_size=2),
    st.integers(min_value=1, max_value=6),
    st.randoms(use_true_random=False),
)
def test_evaluate_retrieval_ranges(
    corpus: list[str], correct: set[str], k: int, rnd: object
) -> None:
    order = list(range(len(corpus)))
    rnd.shuffle(order)  # type: ignore[attr-defined]
    for fn in (evaluate_retrieval, evaluate_retrieval_turn2session):
        result = fn(order, correct, corpus, k)
        assert set(result) == {"recall_any", "recall_all", "ndcg_any"}
        assert all(_unit(v) for v in result.values()), (fn.__name__, result)


@PROPS
@given(st.floats(min_value=-1e6, max_value=1e6))
def test_round3(x: float) -> None:
    assert round3(x) == pytest.approx(x, abs=0.0005 + 1e-9)
