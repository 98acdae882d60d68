"""Our BLEU-1 against nltk's own ``word_tokenize`` + ``sentence_bleu`` (with the same Punkt
model), exactly (==), on random text; and our BLEU-1 arithmetic against ``sentence_bleu``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from nltk_reference import INSTALLED_IS_PINNED, VERSION_SENSITIVE, nltk_bleu1, nltk_word_tokenize

from pytest_memeval.metrics import bleu1
from pytest_memeval.metrics._lexical import bleu1_tokens
from pytest_memeval.metrics._word_tokenize import word_tokenize

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
        "Mr.",
        "gear.",
        "\n",
        "Gatorade:",
        "U.S.",
        "3.5",
        "...",
    ]
)

_REF: dict[str, Callable[[str], list[str]]] = {}


@pytest.fixture(scope="module", autouse=True)
def _reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with nltk_word_tokenize(tmp_path_factory.mktemp("nltk_data")) as tokenize:
        _REF["word_tokenize"] = tokenize
        yield
    _REF.clear()


def _comparable(*texts: str) -> bool:
    """Whether the installed nltk tokenises these as nltk 3.9.1 does (always, on 3.9.1-3.9.2)."""
    return INSTALLED_IS_PINNED or not any(VERSION_SENSITIVE.search(t) for t in texts)


@settings(max_examples=600, deadline=None)
@given(st.lists(_WORDS, max_size=14), st.lists(_WORDS, min_size=1, max_size=14))
def test_bleu1_equals_nltk_word_tokenize_exactly(
    hyp_words: list[str], ref_words: list[str]
) -> None:
    hyp, ref = " ".join(hyp_words), " ".join(ref_words)
    assume(hyp.strip() and ref.strip())  # a falsy side is 0 by the A-Mem rule, before nltk
    assume(_comparable(hyp, ref))
    tokenize = _REF["word_tokenize"]
    assert word_tokenize(hyp.strip().lower()) == tokenize(hyp.strip().lower())
    assert bleu1(hyp, ref) == nltk_bleu1(tokenize, hyp.strip(), ref.strip())


#: any text on nltk 3.9.1-3.9.2; elsewhere ASCII without ``'`` (see VERSION_SENSITIVE)
_TEXT = (
    st.text(max_size=40)
    if INSTALLED_IS_PINNED
    else st.text(st.characters(max_codepoint=0x7F, exclude_characters="'"), max_size=40)
)


@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT)
def test_bleu1_equals_nltk_on_any_text(hyp: str, ref: str) -> None:
    assume(hyp.strip() and ref.strip())
    assert bleu1(hyp, ref) == nltk_bleu1(_REF["word_tokenize"], hyp.strip(), ref.strip())


def test_bleu1_tokens_edge_cases() -> None:
    assert bleu1_tokens([], ["a"]) == 0.0
    assert bleu1_tokens(["a"], []) == 0.0
    assert bleu1_tokens(["a", "a", "a"], ["a"]) == 1 / 3


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=12), st.lists(_WORDS, min_size=1, max_size=12))
def test_bleu1_tokens_equals_sentence_bleu(hyp: list[str], ref: list[str]) -> None:
    expected = float(
        sentence_bleu(
            [ref],
            hyp,
            weights=(1.0, 0.0, 0.0, 0.0),
            smoothing_function=SmoothingFunction().method1,
        )
    )
    assert bleu1_tokens(hyp, ref) == expected


def test_reference_reads_only_the_written_model(tmp_path: Path) -> None:
    """The reference really is nltk's word_tokenize with our tables: Punkt splits "gear." off."""
    assert _REF["word_tokenize"]("gear.  \ngatorade: x.") == [
        "gear",
        ".",
        "gatorade",
        ":",
        "x",
        ".",
    ]
