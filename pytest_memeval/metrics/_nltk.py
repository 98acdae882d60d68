"""nltk's ``PorterStemmer`` and ``NLTKWordTokenizer``, without nltk's package ``__init__``.

The official scorers stem with ``nltk.stem.PorterStemmer`` and tokenise with nltk's word
tokenizer, so we run exactly that code. But ``import nltk`` executes ``nltk/__init__.py``, which
imports most of nltk and, through it, scipy.stats and scikit-learn when they are installed: about
a second of start-up, more than all the scoring of a full LoCoMo run (issue 6).

The two classes live in small modules (``nltk/stem/porter.py``, ``nltk/tokenize/destructive.py``)
whose own imports are a handful of nltk helper modules. :func:`load` imports those modules with
light placeholders standing in for the parent packages ``nltk``, ``nltk.stem`` and
``nltk.tokenize``, then removes every ``nltk`` entry it added to ``sys.modules``, so a later
``import nltk`` anywhere imports the real nltk from scratch. The placeholders exist for the few
milliseconds of that import only; another thread importing nltk at that very moment would see
them, which is why the plugin imports the metrics in the main thread at the end of collection,
before any judge or answerer thread exists. The code that runs is nltk's own, byte for byte (tests
compare its output with ``import nltk``'s classes over the benchmarks' vocabulary).

When nltk is already imported, its classes are used as they are. When the light import fails
(a future nltk reorganising its modules), the ordinary import is used: slower, same result.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Protocol

__all__ = ["Stemmer", "WordTokenizer", "load", "load_punkt", "loaded_lightly"]


class Stemmer(Protocol):
    def stem(self, word: str) -> str: ...


class WordTokenizer(Protocol):
    def tokenize(self, text: str) -> list[str]: ...


#: The parent packages the two modules sit in, replaced by placeholders during the light import.
_PACKAGES = ("nltk", "nltk.stem", "nltk.tokenize")
_MODULES = ("nltk.stem.porter", "nltk.tokenize.destructive")
_PUNKT_MODULES = ("nltk.tokenize.punkt", "nltk.tokenize.destructive")

_lock = threading.Lock()
_light = False


def loaded_lightly() -> bool:
    """Whether :func:`load` managed without importing nltk's package ``__init__``."""
    return _light


def load() -> tuple[Stemmer, WordTokenizer]:
    """A ``PorterStemmer()`` (default ``NLTK_EXTENSIONS`` mode) and an ``NLTKWordTokenizer()``."""
    global _light
    with _lock:
        if "nltk" not in sys.modules:
            try:
                porter, destructive = _import_without_package_init()
            except Exception:
                pass  # fall back to the ordinary import below
            else:
                _light = True
                return porter.PorterStemmer(), destructive.NLTKWordTokenizer()
    from nltk.stem.porter import PorterStemmer
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return PorterStemmer(), NLTKWordTokenizer()


def load_punkt() -> tuple[types.ModuleType, types.ModuleType]:
    """nltk's ``nltk.tokenize.punkt`` and ``nltk.tokenize.destructive`` modules (for BLEU-1's
    ``word_tokenize``; see ``word_tokenize.py``), imported the same light way when nltk is not
    imported yet."""
    with _lock:
        if "nltk" not in sys.modules:
            try:
                return _import_without_package_init(_PUNKT_MODULES)
            except Exception:
                pass  # fall back to the ordinary import below
    import nltk.tokenize.destructive
    import nltk.tokenize.punkt

    return nltk.tokenize.punkt, nltk.tokenize.destructive


def _import_without_package_init(
    modules: tuple[str, str] | None = None,
) -> tuple[types.ModuleType, types.ModuleType]:
    modules = modules or _MODULES
    spec = importlib.util.find_spec("nltk")  # locates the package; does not execute it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed")
    root = next(iter(spec.submodule_search_locations))
    before = set(sys.modules)
    try:
        for name in _PACKAGES:
            placeholder = types.ModuleType(name)
            placeholder.__path__ = [os.path.join(root, *name.split(".")[1:])]
            sys.modules[name] = placeholder
        first, second = (importlib.import_module(m) for m in modules)
    finally:
        for name in set(sys.modules) - before:
            if name == "nltk" or name.startswith("nltk."):
                del sys.modules[name]
    return first, second
