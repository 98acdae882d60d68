"""The benchmark protocol: raw files -> Conversation / Question records, plus per-benchmark rules."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._files import MAX_DATA_BYTES, FileTooLarge, NotAFile, read_bounded
from ..errors import DatasetError, terminal_safe
from ..records import Conversation, Prediction, Question
from ._categories import shared_category

__all__ = [
    "ESCAPED_SURROGATE",
    "Benchmark",
    "CategoryInfo",
    "Dataset",
    "Deviation",
    "LoadRequest",
    "Parsed",
    "check_surrogates",
    "check_unique_ids",
    "decode_text",
    "file_sha256",
    "find_lone_surrogate",
    "json_value_error",
    "load_parts",
    "named_categories",
    "parse_json",
    "parse_json_line",
    "parse_jsonl",
    "read_bytes",
    "read_data",
]

#: a JSON escape of a UTF-16 surrogate (``\\ud83d``): only then can a parsed string hold a lone one
ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def json_value_error(exc: ValueError) -> str:
    """A ``json.loads`` ValueError that is not a syntax error (an integer literal over Python's
    digit limit, ...) in a few words for a DatasetError message."""
    text = str(exc)
    if "digits" in text:
        return "a number literal has too many digits"
    return " ".join(text.split())[:200]


def read_bytes(
    path: str | Path, fix: str, *, limit: int = MAX_DATA_BYTES, missing: str | None = None
) -> bytes:
    """The bytes of a data file, read through :func:`~pytest_memeval._files.read_bounded`; every
    way that fails is one DatasetError naming ``path`` and ending in ``fix``: not a regular file,
    over ``limit`` bytes, not found (``missing`` replaces the whole sentence then, e.g. where to
    get the file), unreadable."""
    source = str(path)
    try:
        return read_bounded(source, limit)
    except (NotAFile, FileTooLarge) as exc:
        raise DatasetError(f"{exc}; {fix}") from None
    except FileNotFoundError:
        raise DatasetError(missing or f"file not found; {fix}", path=source) from None
    except OSError as exc:
        raise DatasetError(
            f"cannot read the file: {exc.strerror or exc}; {fix}", path=source
        ) from None


def decode_text(raw: bytes, source: str, fix: str) -> str:
    """UTF-8 text (a BOM dropped), or a DatasetError with the byte offset, ending in ``fix``."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(
            f"not valid UTF-8 at byte {exc.start} ({exc.reason}); {fix}", path=source
        ) from None


def read_data(
    path: str | Path, fix: str, *, limit: int = MAX_DATA_BYTES, missing: str | None = None
) -> tuple[bytes, str]:
    """:func:`read_bytes` then :func:`decode_text`: the file's bytes (to hash) and its text."""
    raw = read_bytes(path, fix, limit=limit, missing=missing)
    return raw, decode_text(raw, str(path), fix)


def parse_json(text: str, path: str, fix: str) -> object:
    """``json.loads(text)`` with every way it fails as one DatasetError naming ``path`` and
    ending in ``fix`` (what to do, e.g. "fetch the file again"): a syntax error with its line and
    column (and whether the file looks truncated), nesting too deep, a number literal too long."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = " (at the end of the file)" if exc.pos >= len(text.rstrip()) else ""
        raise DatasetError(
            f"invalid or truncated JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            f"{where}; {fix}",
            path=path,
        ) from None
    except RecursionError:
        raise DatasetError(
            f"invalid JSON: arrays or objects nested too deeply; {fix}", path=path
        ) from None
    except ValueError as exc:  # e.g. an integer literal over Python's digit limit
        raise DatasetError(f"invalid JSON ({json_value_error(exc)}); {fix}", path=path) from None


def parse_json_line(line: str, n: int, path: str, fix: str) -> object:
    """Line ``n`` of a JSON Lines file, with every way it fails (nesting too deep included) as one
    DatasetError naming ``path`` and the line and ending in ``fix``."""
    try:
        return json.loads(line)
    except RecursionError:
        raise DatasetError(
            f"line {n} is not valid JSON (arrays or objects nested too deeply); {fix}", path=path
        ) from None
    except ValueError as exc:
        raise DatasetError(
            f"line {n} is not valid JSON ({str(exc)[:120]}); {fix}", path=path
        ) from None


def parse_jsonl(text: str, path: str, fix: str) -> list[tuple[int, object]]:
    """``(line number, value)`` of every non-blank line of a JSON Lines text
    (:func:`parse_json_line` on each)."""
    return [
        (n, parse_json_line(line, n, path, fix))
        for n, line in enumerate(text.splitlines(), 1)
        if line.strip()
    ]


def find_lone_surrogate(value: object) -> tuple[str, str] | None:
    """``(record, field)`` of the first string (or key) in parsed JSON/YAML holding a lone UTF-16
    surrogate (``"\\ud800"``: valid JSON syntax, but not text; it cannot be written as UTF-8), e.g.
    ``("[0].qa[3]", "question")``; None when there is none. Iterative (no recursion limit)."""
    stack: list[tuple[str, str, object]] = [("", "", value)]
    seen: set[int] = set()  # YAML aliases share containers: visit each once ("billion laughs")
    while stack:
        record, name, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return record, name
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            where = f"{record}.{name}" if record and name else record or name
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return where, key
                stack.append((where, str(key), child))
        elif isinstance(item, list):
            where = f"{record}.{name}" if record and name else record or name
            stack.extend((f"{where}[{i}]", "", child) for i, child in enumerate(item))
    return None


def check_surrogates(
    value: object,
    source: str,
    *,
    record: str | None = None,
    hint: str = "fix the string or re-download the file",
) -> None:
    """Raise DatasetError naming the record and field of a lone surrogate in ``value``;
    ``record`` (e.g. ``#3``) prefixes the path found inside ``value``."""
    found = find_lone_surrogate(value)
    if found is not None:
        inner, name = found
        sep = "" if not record or not inner or inner.startswith("[") else "."
        where = f"{record or ''}{sep}{inner}"
        raise DatasetError(
            f"holds a lone UTF-16 surrogate escape (e.g. \\ud800), which is not text; {hint}",
            path=source,
            record=where or None,
            field=name or None,
        )


@dataclass(frozen=True)
class Deviation:
    """One known difference between upstream's code or data and a faithful reading of it, and
    what the plugin does about it (a benchmark module's ``DEVIATIONS``; the protocol card
    ``report/cards.py`` lists them; docs/scoring.md has the full text under ``anchor``)."""

    key: str  # a short stable id, e.g. ``category-5``
    upstream: str  # what upstream does
    plugin: str  # what the plugin does about it
    anchor: str  # the docs/scoring.md section (its #anchor) that explains it


@dataclass(frozen=True)
class CategoryInfo:
    """One category of a benchmark: its own id, the name used for markers and tables, the shared
    cross-benchmark category it maps onto, and a one-line description."""

    id: int | str
    name: str
    shared: str
    description: str = ""
    in_overall: bool = True  # LoCoMo: category 5 is outside `overall` (Mem0 protocol)


def named_categories(
    benchmark: str, descriptions: Mapping[str, str]
) -> dict[int | str, CategoryInfo]:
    """Categories whose id is their name (LongMemEval types, BEAM abilities, user-memory layers),
    each mapped onto its shared category, in ``descriptions`` order."""
    return {
        name: CategoryInfo(
            id=name, name=name, shared=shared_category(benchmark, name), description=desc
        )
        for name, desc in descriptions.items()
    }


@dataclass(frozen=True)
class LoadRequest:
    """Where to find the benchmark's files. ``data_dir`` is the folder holding one sub-folder per
    benchmark (``DIR/locomo/locomo10.json``, ``DIR/usermem/...``); when it is None the
    benchmark downloads its pinned files into ``cache_dir``."""

    data_dir: Path | None
    cache_dir: Path
    variant: str | None = None
    #: called with a line while a download runs (bytes, rate, ETA) and when it is saved
    progress: Callable[[str], None] | None = field(default=None, compare=False, repr=False)


@dataclass
class Dataset:
    """A loaded benchmark. Conversations may be loaded lazily (LongMemEval-S/M) through
    ``conversation_loader``; ``questions`` are always in memory, in file order."""

    benchmark: str
    questions: list[Question]
    files: list[Path]
    sha256: dict[str, str]
    variant: str | None = None
    conversations: dict[str, Conversation] = field(default_factory=dict)
    conversation_loader: Callable[[str], Conversation] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    #: the conversation the loader produced last: the items of one conversation run together, one
    #: system after another, so each lazily loaded conversation is parsed once, not once per system
    _last: tuple[str, Conversation] | None = field(default=None, repr=False, compare=False)

    def conversation(self, conversation_id: str) -> Conversation:
        conv = self.conversations.get(conversation_id)
        if conv is not None:
            return conv
        if self.conversation_loader is None:
            raise KeyError(conversation_id)
        if self._last is not None and self._last[0] == conversation_id:
            return self._last[1]
        conv = self.conversation_loader(conversation_id)
        self._last = (conversation_id, conv)
        return conv

    def conversation_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for q in self.questions:
            seen.setdefault(q.conversation_id, None)
        return list(seen)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)


def check_unique_ids(dataset: Dataset) -> None:
    """Every question id of ``dataset`` once: a repeated id is a DatasetError naming the files and
    the record (two items would share one result: collected twice, counted once). Each loader
    refuses its own duplicates with the record's place in the file; this holds for every
    benchmark, an entry point's too (the plugin calls it after ``load``)."""
    seen: dict[str, int] = {}
    for n, question in enumerate(dataset.questions):
        first = seen.setdefault(question.id, n)
        if first != n:
            qid = terminal_safe(question.id, 80)
            raise DatasetError(
                f"duplicate question id {qid!r} (questions #{first + 1} and #{n + 1}); every "
                "question id must be unique: fix the file or remove the repeated record",
                path=", ".join(str(f) for f in dataset.files) or dataset.benchmark,
                record=qid,
            )


@dataclass(frozen=True)
class Parsed:
    """One part of a suite (a split, a variant, a tier) as its cached parser returns it:
    ``sha256`` holds one hex digest per file of the part, in the order the files were given."""

    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    sha256: tuple[str, ...]
    #: one line each about what the part left out (records upstream skips), said once in the
    #: run: gathered into ``Dataset.meta["notes"]``, shown as the benchmark's run notes
    notes: tuple[str, ...] = ()


#: a suite's cached parser: (resolved file paths, part key, (mtime_ns, size) per file) -> Parsed;
#: the stats are its cache key only, so an edited file is parsed again
PartParser = Callable[[tuple[str, ...], str, tuple[tuple[int, int], ...]], Parsed]


def file_stats(paths: Sequence[Path]) -> tuple[tuple[int, int], ...]:
    """Each file's (mtime in ns, size): the cache key of a parsed file (a file replaced or edited
    is parsed again). An unreadable file is a DatasetError naming it."""
    stats: list[tuple[int, int]] = []
    for path in paths:
        try:
            st = path.resolve().stat()
        except OSError as exc:
            raise DatasetError(
                f"cannot read the file: {exc.strerror or exc}", path=str(path)
            ) from None
        stats.append((st.st_mtime_ns, st.st_size))
    return tuple(stats)


def load_parts(
    request: LoadRequest,
    benchmark: str,
    parts: Sequence[tuple[str, Sequence[Path]]],
    parse: PartParser,
    missing: str,
    meta: Mapping[str, Any],
) -> Dataset:
    """The Dataset of the ``parts`` found below ``request.data_dir``: each part is ``(key,
    files)``; a part with a file that is not there is passed over, the others are parsed
    through ``parse`` (cached on each file's mtime and size) and gathered in order (questions,
    conversations, files, sha256 keyed by the path below the data folder). When no part is
    there: DatasetError ``missing``, naming the first file looked for."""
    assert request.data_dir is not None
    questions: list[Question] = []
    conversations: dict[str, Conversation] = {}
    files: list[Path] = []
    sha: dict[str, str] = {}
    absent: Path | None = None
    notes: list[str] = []
    for key, paths in parts:
        gone = next((p for p in paths if not p.is_file()), None)
        if gone is not None:
            absent = absent or gone
            continue
        built = parse(tuple(str(p.resolve()) for p in paths), key, file_stats(paths))
        for conv in built.conversations:
            if conv.id in conversations:
                raise DatasetError(
                    f"duplicate conversation id {terminal_safe(conv.id, 80)!r} (also in an "
                    "earlier file of the suite); every conversation id must be unique",
                    path=str(paths[0]),
                    record=terminal_safe(conv.id, 80),
                )
            conversations[conv.id] = conv
        questions.extend(built.questions)
        notes.extend(built.notes)
        files.extend(paths)
        sha.update(
            (str(p.relative_to(request.data_dir)), digest)
            for p, digest in zip(paths, built.sha256, strict=True)
        )
    if not files:
        raise DatasetError(missing, path=str(absent) if absent else None)
    return Dataset(
        benchmark=benchmark,
        questions=questions,
        files=files,
        sha256=sha,
        variant=request.variant,
        conversations=conversations,
        meta={**meta, "notes": notes} if notes else dict(meta),
    )


@runtime_checkable
class Benchmark(Protocol):
    """What a benchmark module provides. Registered under ``name`` in the registry or through the
    entry-point group ``pytest_memeval.benchmarks`` (the entry point's object is a Benchmark, or a
    zero-argument callable returning one)."""

    name: str
    #: categories keyed by their id, in display order
    categories: Mapping[int | str, CategoryInfo]
    #: metric keys the offline scorer produces, in display order
    metrics: Sequence[str]
    #: the metric whose value decides CORRECT / WRONG without a judge
    pass_metric: str
    # Optional attributes, read with getattr by the plugin:
    #   round3_metrics: tuple[str, ...]  metrics rounded to 3 decimals per question before averaging
    #   default_threshold: float         pass threshold when --memeval-pass-threshold is not given
    #   cluster_unit: str                what questions are clustered in ("conversation" when
    #                                    absent): bootstrap intervals and the regression gate
    #                                    treat each cluster (Question.cluster) as one unit
    #   unscored_reason: str             why a question may have no pass metric offline
    #   unscored_metrics() -> Mapping[str, str]
    #                                    metric -> why this installation leaves it UNSCORED (NaN)
    #                                    (an optional library missing); shown as a run note
    #   preload() -> None                read and check now, in the main thread before any worker
    #                                    thread, what the offline scorer reads lazily (LoCoMo:
    #                                    BLEU-1's Punkt model); a RuntimeError with its fix stops
    #                                    the run
    #   tokenizer_provenance() -> dict[str, Any]
    #                                    how the offline scorer tokenises (provenance
    #                                    ``bleu1_tokenizer``; LoCoMo's BLEU-1)
    #   packaged_files() -> dict[str, tuple[str, bytes]]
    #                                    the suite's files shipped as package data (the demo):
    #                                    name -> (path in the source tree, bytes); such a suite
    #                                    needs no data folder (board re-scoring) and its protocol
    #                                    card pins those files
    # Optional hooks of a suite's home (benchmarks/<name>/), called for the official protocols that
    # list the suite (ProtocolProfile.benchmarks) through LoadedProtocol.suite_hooks, so that no
    # core module branches on the suite's name (tests/project/test_layout.py):
    #   official_judge(protocol: LoadedProtocol) -> Judge | None
    #                                    the protocol's judge, built from its loaded prompts
    #   official_answerer(protocol: LoadedProtocol) -> SuiteAnswerer | None
    #                                    the suite's own answer request under the protocol
    #                                    (answerers.llm.SuiteAnswerer: request(question, memories))
    #   official_provenance(protocol: LoadedProtocol) -> dict[str, Any]
    #                                    what the suite adds to the protocol's provenance
    #   official_warnings(protocol: LoadedProtocol) -> list[str]
    #                                    configure-time warnings (an installed package that reads
    #                                    replies otherwise than the upstream release)
    #   official_summary(protocol: LoadedProtocol, run: RunSummary,
    #                    results: Sequence[QuestionResult], judge_metric: str | None) -> None
    #                                    sets the run's official figures (RunSummary.official,
    #                                    .halumem) when ``protocol`` is the suite's own; called by
    #                                    run/_session.py for a run of a suite the protocol lists

    def load(self, request: LoadRequest) -> Dataset:
        """Read (or download, then read) the files. Raises DatasetError naming file, record, field."""
        ...

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        """Offline metrics for one prediction (pure; no LLM)."""
        ...
