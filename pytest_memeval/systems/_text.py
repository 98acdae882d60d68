"""Tiny, dependency-free text helpers shared by the ``bm25`` system and the extractive answerer.

Tokenisation is deliberately simple and deterministic: lower-case, ``\\w+`` runs (Unicode aware),
English stopwords dropped, single letters dropped (digits kept), then a light suffix-stripping
stemmer (``researching`` / ``researched`` / ``researches`` -> ``research``). Nothing is downloaded;
the stemmer cache is a pure function of its input.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["STOPWORDS", "content_tokens", "light_stem", "words"]

#: A small English stopword list (function words, auxiliaries, pronouns, question words).
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how i if in into is isn it its itself just let ll me more most my myself no nor
    not now of off on once only or other ought our ours ourselves out over own re s same she should
    shouldn so some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was wasn we were weren what when where which while
    who whom why will with won would wouldn you your yours yourself yourselves d m o y
    also yeah yes oh hey hi wow really got get gets go going im
    """.split()  # noqa: SIM905
)

_WORD_RE = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """Lower-cased ``\\w+`` runs of ``text`` (``I've`` -> ``i``, ``ve``)."""
    return _WORD_RE.findall(text.lower())


#: irregular past forms -> base form (so "took" matches "take")
_IRREGULAR: dict[str, str] = {
    past: base
    for base, forms in {
        "become": "became",
        "begin": "began begun",
        "bring": "brought",
        "build": "built",
        "buy": "bought",
        "catch": "caught",
        "choose": "chose chosen",
        "come": "came",
        "draw": "drew drawn",
        "drive": "drove driven",
        "eat": "ate eaten",
        "fall": "fell fallen",
        "feel": "felt",
        "find": "found",
        "fly": "flew flown",
        "give": "gave given",
        "go": "went gone",
        "grow": "grew grown",
        "hear": "heard",
        "hold": "held",
        "keep": "kept",
        "know": "knew known",
        "leave": "left",
        "lose": "lost",
        "make": "made",
        "meet": "met",
        "pay": "paid",
        "ride": "rode ridden",
        "run": "ran",
        "say": "said",
        "see": "saw seen",
        "sell": "sold",
        "send": "sent",
        "sing": "sang sung",
        "spend": "spent",
        "swim": "swam swum",
        "take": "took taken",
        "teach": "taught",
        "tell": "told",
        "think": "thought",
        "wear": "wore worn",
        "win": "won",
        "write": "wrote written",
        "child": "children",
        "person": "people",
    }.items()
    for past in forms.split()
}


@lru_cache(maxsize=65536)
def light_stem(word: str) -> str:
    """A light, deterministic suffix stripper (not Porter): enough to match inflections.

    Irregular forms map to their base (``took`` -> ``take``), then one suffix is stripped
    (``-ing``, ``-ed``, ``-ies``, ``-es``, ``-s``, ``-ly``; a doubled final consonant is undone),
    then a final ``e`` is dropped: ``hike`` / ``hiked`` / ``hiking`` / ``hikes`` give ``hik``.
    """
    word = _IRREGULAR.get(word, word)
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, min_stem in (
        ("ingly", 4),
        ("ings", 3),
        ("ing", 3),
        ("edly", 4),
        ("ied", 3),
        ("ies", 3),
        ("ed", 3),
        ("ly", 4),
        ("es", 4),
        ("s", 3),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= min_stem:
            stem = word[: -len(suffix)]
            if suffix in ("ied", "ies"):
                return stem + "y"
            if suffix == "s" and stem.endswith(("s", "u", "i")):
                break  # "class", "status", "analysis"
            if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
                stem = stem[:-1]  # "running" -> "run", "shopped" -> "shop"
            word = stem
            break
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    return word


def content_tokens(text: str) -> list[str]:
    """Stemmed content tokens of ``text``, in order, duplicates kept."""
    return [
        light_stem(w) for w in words(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    ]
