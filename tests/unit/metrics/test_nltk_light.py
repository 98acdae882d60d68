"""nltk's stemmer and tokenizer imported without nltk's package ``__init__`` (metrics/_nltk.py).

The light import must (1) not import nltk's heavy dependencies, (2) leave no trace in
``sys.modules`` so that a later ``import nltk`` is the real one, and (3) run code that gives exactly
what ``import nltk``'s classes give: checked on every word and every text of the benchmark files.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nltk.stem import PorterStemmer
from nltk.tokenize import NLTKWordTokenizer

from pytest_memeval.metrics import _nltk
from pytest_memeval.metrics import _text as text

_PROBE = r"""
import json, sys
import pytest_memeval.metrics as metrics
from pytest_memeval.metrics import _nltk
from pytest_memeval.metrics import _text as text
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"nltk", "scipy", "sklearn"})
stem_before = text.stem("generously")
tokens_before = text.WORD_TOKENIZER.tokenize("they'll say \"no\" (twice).")
import nltk
from nltk.stem import PorterStemmer
from nltk.tokenize import NLTKWordTokenizer
print(json.dumps({
    "light": _nltk.loaded_lightly(),
    "heavy_after_metrics": heavy,
    "real_nltk_has_version": bool(getattr(nltk, "__version__", "")),
    "real_stemmer": PorterStemmer().stem("generously"),
    "ours_before": stem_before,
    "ours_after": text.stem("generously"),
    "real_tokens": NLTKWordTokenizer().tokenize("they'll say \"no\" (twice)."),
    "ours_tokens": tokens_before,
    "f1": metrics.locomo_f1("running late", "runs late", 4),
}))
"""


def _probe() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_light_import_skips_nltk_package_and_leaves_no_trace() -> None:
    result = _probe()
    assert result["light"] is True
    # nothing of nltk (placeholders removed), scipy or scikit-learn is left imported
    assert result["heavy_after_metrics"] == []
    # a later `import nltk` is the real package, and both agree
    assert result["real_nltk_has_version"] is True
    assert result["real_stemmer"] == result["ours_before"] == result["ours_after"] == "gener"
    assert result["real_tokens"] == result["ours_tokens"]
    assert result["f1"] == 1.0


def test_falls_back_to_the_ordinary_import_when_nltk_is_loaded() -> None:
    # this test process imported nltk (conftest), so load() returns nltk's own classes
    stemmer, tokenizer = _nltk.load()
    assert type(stemmer) is PorterStemmer
    assert type(tokenizer) is NLTKWordTokenizer


def test_falls_back_when_the_light_import_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = {k: v for k, v in sys.modules.items() if k == "nltk" or k.startswith("nltk.")}
    for name in saved:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(_nltk, "_MODULES", ("nltk.stem.porter", "nltk.tokenize.no_such_module"))
    try:
        stemmer, tokenizer = _nltk.load()
        assert stemmer.stem("generously") == "gener"
        assert tokenizer.tokenize("don't") == ["do", "n't"]
        assert sys.modules["nltk"].__version__  # the real package was imported
    finally:
        for name in [k for k in sys.modules if k == "nltk" or k.startswith("nltk.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _benchmark_texts(data_dir: Path) -> list[str]:
    texts: set[str] = set()
    for path in sorted(data_dir.rglob("*")):
        if path.suffix == ".json" and path.stat().st_size < 50_000_000:
            texts.update(_strings(json.loads(path.read_text(encoding="utf-8"))))
        elif path.suffix in {".yaml", ".yml", ".md", ".txt"}:
            texts.update(path.read_text(encoding="utf-8", errors="replace").splitlines())
    return sorted(texts)


@pytest.mark.slow
def test_light_classes_equal_nltk_over_the_benchmarks(data_dir: Path) -> None:
    """The light-import stemmer and tokenizer (loaded in a subprocess without nltk imported)
    against ``import nltk``'s, on every distinct word and every distinct text of the data files."""
    texts = _benchmark_texts(data_dir)
    words = sorted({w for t in texts for w in re.findall(r"\S+", t.lower())})
    assert len(words) > 20_000 and len(texts) > 5_000
    # answers, questions and dialogue turns (long documents would only slow the test down)
    sample_texts = [t.lower() for t in texts if len(t) < 500]
    payload = json.dumps({"words": words, "texts": sample_texts})
    script = (
        "import json, sys\n"
        "from pytest_memeval.metrics import _nltk, _text as text\n"
        "assert _nltk.loaded_lightly()\n"
        "data = json.loads(sys.stdin.read())\n"
        "print(json.dumps({'stems': [text._STEMMER.stem(w) for w in data['words']],\n"
        "    'tokens': [text.WORD_TOKENIZER.tokenize(t) for t in data['texts']]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    light = json.loads(out.stdout)
    real_stemmer, real_tokenizer = PorterStemmer(), NLTKWordTokenizer()
    stem_mismatches = [
        (w, s) for w, s in zip(words, light["stems"], strict=True) if real_stemmer.stem(w) != s
    ]
    assert stem_mismatches == []
    token_mismatches = [
        t
        for t, toks in zip(sample_texts, light["tokens"], strict=True)
        if real_tokenizer.tokenize(t) != toks
    ]
    assert token_mismatches == []
    # and the memoised public helper agrees with the class it wraps
    assert [text.stem(w) for w in words[:2000]] == light["stems"][:2000]
