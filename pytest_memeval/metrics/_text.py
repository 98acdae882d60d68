"""Text normalisation and tokenisation shared by the lexical metrics.

Everything here is a pure function of its input. The only module-level state is a set of
precompiled patterns / translation tables and ``functools.lru_cache`` caches of pure functions
(stemming and per-string tokenisation), which is what makes scoring fast: stemming dominates the
cost of LoCoMo's official F1 and the same words and answers recur across questions.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import lru_cache

import regex  # type: ignore[import-untyped, unused-ignore]

from . import _nltk

__all__ = [
    "clear_caches",
    "normalize_answer",
    "simple_tokenize",
    "stem",
    "stemmed_tokens",
]

#: ``str.translate`` table deleting every character of ``string.punctuation`` (ASCII only;
#: curly quotes, dashes and other non-ASCII punctuation are kept, as upstream does).
_DELETE_PUNCT = str.maketrans("", "", string.punctuation)

#: LoCoMo removes these whole words after punctuation has been deleted. The third-party ``regex``
#: module is used on purpose: it differs from ``re`` on decomposed Unicode
#: (docs/scoring.md#locomo-normaliser).
_ARTICLES = regex.compile(r"\b(a|an|the|and)\b")

#: Characters A-Mem's ``simple_tokenize`` replaces with a space.
_SIMPLE_SEPARATORS = str.maketrans({".": " ", ",": " ", "!": " ", "?": " "})

# nltk's own PorterStemmer and NLTKWordTokenizer, imported without nltk's heavy package
# ``__init__`` (see ``_nltk``). The stemmer in its default NLTK_EXTENSIONS mode holds only constant
# tables after construction, so ``stem`` is a pure function of the word and safe to memoise; the
# tokenizer has class-level pattern tables only.
_STEMMER, WORD_TOKENIZER = _nltk.load()
# The bound method itself is memoised (no wrapper function: a cache miss costs one nltk call and
# a hit costs one C-level lookup).
_cached_stem = lru_cache(maxsize=1 << 17)(_STEMMER.stem)

_ARTICLE_WORDS = frozenset({"a", "an", "the", "and"})


def stem(word: str) -> str:
    """NLTK ``PorterStemmer().stem(word)`` (default mode, lower-cases), memoised."""
    return str(_cached_stem(word))


def normalize_answer(s: str) -> str:
    """LoCoMo's official answer normaliser, steps in the official order
    (docs/scoring.md#locomo-normaliser).

    1. delete ASCII commas; 2. lower-case; 3. delete ``string.punctuation``; 4. replace the whole
    words ``a``, ``an``, ``the``, ``and`` with a space (``regex`` module); 5. collapse whitespace.
    """
    return " ".join(_normalized_words(s))


def _normalized_words(s: str) -> list[str]:
    # Commas are deleted *before* lower-casing, as upstream does: lower-casing is context
    # sensitive (Greek final sigma), so deleting them afterwards could change the result.
    text = s.replace(",", "").lower().translate(_DELETE_PUNCT)
    if text.isascii():
        # Fast path, same result: in ASCII text whose tokens are all letters/digits, the regex
        # word boundaries are exactly the whitespace token boundaries.
        tokens = text.split()
        # every token is alphanumeric iff their concatenation is (an empty one is not)
        if not tokens or "".join(tokens).isalnum():
            return [t for t in tokens if t not in _ARTICLE_WORDS]
    words: list[str] = _ARTICLES.sub(" ", text).split()
    return words


@lru_cache(maxsize=1 << 16)
def _stemmed_counts(text: str) -> tuple[Counter[str], int]:
    """Multiset of stemmed normalised tokens of ``text`` and the token count (memoised).

    The returned Counter is shared by the cache: callers must never mutate it.
    """
    tokens = list(map(_cached_stem, _normalized_words(text)))
    return Counter(tokens), len(tokens)


def stemmed_tokens(text: str) -> list[str]:
    """The tokens LoCoMo's ``f1_score`` compares: ``normalize_answer(text).split()``, stemmed."""
    return [stem(w) for w in _normalized_words(text)]


def simple_tokenize(text: object) -> list[str]:
    """A-Mem's ``simple_tokenize``: ``str()``, lower-case, ``. , ! ?`` -> space, then split."""
    return str(text).lower().translate(_SIMPLE_SEPARATORS).split()


def clear_caches() -> None:
    """Empty the memoisation caches (used by benchmarks to time cold runs)."""
    _cached_stem.cache_clear()
    _stemmed_counts.cache_clear()
