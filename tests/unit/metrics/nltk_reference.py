"""The reference for BLEU-1: the installed nltk's own ``word_tokenize`` and ``sentence_bleu``,
with the Punkt English model written out as a ``punkt_tab`` folder from the tables BLEU-1 uses
(a temporary ``nltk_data``; nothing is downloaded)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import nltk
import nltk.data
import nltk.tokenize
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from packaging.version import Version

from pytest_memeval.metrics._word_tokenize import PunktTables, load_punkt_tables

#: The installed nltk tokenises as the pinned behaviour (nltk 3.9.1; 3.9.2 has the same rules).
INSTALLED_IS_PINNED = Version("3.9.1") <= Version(nltk.__version__) <= Version("3.9.2")

#: Text where nltk releases after 3.9.2 tokenise differently from 3.9.1: a ``'`` (3.10.1), a
#: figure/en/em dash or horizontal bar (3.9.3), curly quotes or guillemets (Punkt, 3.10.2), and
#: any other non-ASCII character (3.10.4 matches with the ``regex`` engine).
VERSION_SENSITIVE = re.compile(r"['\u2012-\u2015\u2018\u2019\u201c\u201d\xab\xbb]|[^\x00-\x7f]")


def write_punkt_tab(root: Path, tables: PunktTables) -> Path:
    """``root/tokenizers/punkt_tab/english/`` in nltk_data's format; returns ``root``."""
    folder = root / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "abbrev_types.txt": sorted(tables.abbrev_types),
        "sent_starters.txt": sorted(tables.sent_starters),
        "collocations.tab": ["\t".join(c) for c in sorted(tables.collocations)],
        "ortho_context.tab": [f"{k}\t{v}" for k, v in sorted(tables.ortho_context.items())],
    }
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines), encoding="utf-8", newline="")
    return root


def _clear_punkt_cache() -> None:
    cached = getattr(nltk.tokenize, "_get_punkt_tokenizer", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()


@contextmanager
def nltk_word_tokenize(root: Path) -> Iterator[Callable[[str], list[str]]]:
    """The installed ``nltk.word_tokenize`` reading Punkt from ``root`` (and nothing else)."""
    write_punkt_tab(root, load_punkt_tables())
    saved = list(nltk.data.path)
    nltk.data.path[:] = [str(root)]
    _clear_punkt_cache()
    try:
        yield lambda text: list(nltk.tokenize.word_tokenize(text))
    finally:
        nltk.data.path[:] = saved
        _clear_punkt_cache()


def nltk_bleu1(tokenize: Callable[[str], list[str]], prediction: str, gold: str) -> float:
    """Mem0's ``bleu_score`` as upstream computes it (lower-cased, ``word_tokenize``,
    ``sentence_bleu`` weights (1, 0, 0, 0), ``method1`` smoothing; any exception -> 0)."""
    try:
        return float(
            sentence_bleu(
                [tokenize(gold.lower())],
                tokenize(prediction.lower()),
                weights=(1.0, 0.0, 0.0, 0.0),
                smoothing_function=SmoothingFunction().method1,
            )
        )
    except Exception:
        return 0.0
