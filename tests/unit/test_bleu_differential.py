"""Our BLEU-1 arithmetic against nltk's own sentence_bleu, exactly (==), on random text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import NLTKWordTokenizer
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from pytest_memeval.metrics import bleu1
from pytest_memeval.metrics.lexical import bleu1_tokens

_TOK = NLTKWordTokenizer()
_WORDS = st.sampled_from(
    [
        "the",
        "cat",
        "sat",
        "on",
        "mat",
        "Paris",
        "7",
        "May",
        "2023",
        ",",
        ".",
        "don't",
        "a",
        "dog",
        "“x”",
        "!",
        "?",
        "(b)",
        "e.g.",
    ]
)


def _nltk(hyp: str, ref: str) -> float:
    try:
        return float(
            sentence_bleu(
                [_TOK.tokenize(ref.lower())],
                _TOK.tokenize(hyp.lower()),
                weights=(1.0, 0.0, 0.0, 0.0),
                smoothing_function=SmoothingFunction().method1,
            )
        )
    except Exception:
        return 0.0


@settings(max_examples=600, deadline=None)
@given(st.lists(_WORDS, max_size=12), st.lists(_WORDS, min_size=1, max_size=12))
def test_bleu1_equals_nltk_exactly(hyp_words: list[str], ref_words: list[str]) -> None:
    hyp, ref = " ".join(hyp_words), " ".join(ref_words)
    if not hyp.strip():
        return  # falsy input is 0 by the A-Mem rule before nltk is reached
    assert bleu1(hyp, ref) == _nltk(hyp, ref)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_bleu1_equals_nltk_on_any_text(hyp: str, ref: str) -> None:
    if not hyp.strip() or not ref.strip():
        return
    assert bleu1(hyp, ref) == _nltk(hyp.strip(), ref.strip())


def test_bleu1_tokens_edge_cases() -> None:
    assert bleu1_tokens([], ["a"]) == 0.0
    assert bleu1_tokens(["a"], []) == 0.0
    assert bleu1_tokens(["a", "a", "a"], ["a"]) == 1 / 3
