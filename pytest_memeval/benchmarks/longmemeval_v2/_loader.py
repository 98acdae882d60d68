"""LongMemEval-V2 (arXiv 2605.12493): web-agent trajectories inserted into memory, then
questions about the environment they explored, under a memory-context token budget.

Upstream (``xiaowu0162/LongMemEval-V2``, pinned below) reads three files of the Hugging Face
dataset ``xiaowu0162/longmemeval-v2`` (``data/public_data.py``): ``questions.jsonl`` (one object a
line: ``id``, ``domain`` web / enterprise, ``question_type``, ``question``, ``image`` null or a
path, ``answer`` a string, ``eval_function`` a spec such as ``norm_phrase_set_match|separators=,``),
``trajectories.jsonl`` (``id``, ``domain``, ``goal``, ``outcome``, ``start_url``, ``actions[]``,
``states[]`` of ``{state_index, step, url, action, thoughts, text, screenshot}``) and
``haystacks/lme_v2_<tier>.json`` (question id -> the trajectory ids inserted before it is asked;
tiers ``small`` and ``medium``). ``evaluation/harness.py`` inserts the haystack, queries the memory
and cuts its context to ``--memory-context-max-tokens`` (200000 by default) before the reader.

Here the questions sharing one haystack share one conversation; each trajectory is a session and
its goal and states are the turns. Each question is one item, its ``question_type`` the category.
The offline scores are upstream's ``evaluation/qa_eval_metrics.py`` rules applied as its
``score_prediction`` applies them: the spec's function on the last ``\\boxed{}`` of the reply, and
a reply whose boxed answer is ``UNKNOWN`` scores 0 (docs/scoring.md#longmemeval-v2).
"""

from __future__ import annotations

import functools
import hashlib
import stat
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ...errors import DatasetError
from ...records import Conversation, Prediction, Question, Session, Turn
from .._base import (
    CategoryInfo,
    Dataset,
    Deviation,
    LoadRequest,
    Parsed,
    check_surrogates,
    decode_text,
    load_parts,
    named_categories,
    parse_json,
    parse_json_line,
    parse_jsonl,
    read_bytes,
)
from .._download import Pins, fetch_pinned
from ._pins import FOLDER, PINS, TIERS, UPSTREAM
from ._scorer import parse_spec, score_longmemeval_v2

if TYPE_CHECKING:
    from ...answerers import SuiteAnswerer
    from ...judges import Judge
    from ...protocols import LoadedProtocol

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DEVIATIONS",
    "DOMAINS",
    "MEMORY_CONTEXT_MAX_TOKENS",
    "LongMemEvalV2",
    "build",
    "check_release_list",
    "download_tier",
    "parse_checksums",
    "parse_haystack",
    "parse_questions",
    "parse_trajectories",
    "stream_jsonl",
]

DOMAINS: tuple[str, ...] = ("web", "enterprise")
#: upstream harness ``--memory-context-max-tokens`` default (reader-processor tokens)
MEMORY_CONTEXT_MAX_TOKENS = 200_000

CATEGORIES: Mapping[int | str, CategoryInfo] = MappingProxyType(
    named_categories(
        "longmemeval-v2",
        {
            "static-environment": "recall landmarks, page layouts and affordances (static)",
            "static-environment-abs": "reject a false premise about the static environment",
            "dynamic-environment": "track how actions changed the environment (dynamic)",
            "dynamic-environment-abs": "reject a false premise about environment changes",
            "procedure": "know the steps of a recurring task (workflow)",
            "procedure-abs": "reject a false premise about a workflow",
            "errors-gotchas": "recognise the environment's recurring traps (gotchas)",
        },
    )
)

_HINT = "fix the file or download it again from the Hugging Face dataset"

# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------


def _jsonl(raw: bytes, source: str) -> list[tuple[int, object]]:
    rows = parse_jsonl(decode_text(raw, source, _HINT), source, _HINT)
    check_surrogates([row for _, row in rows], source)
    return rows


def _text(rec: Mapping[str, Any], name: str, where: str, source: str, *, empty: bool) -> str:
    value = rec.get(name)
    if not isinstance(value, str) or (not empty and not value.strip()):
        what = "a string" if empty else "a non-empty string"
        raise DatasetError(f"must be {what}; {_HINT}", path=source, record=where, field=name)
    return value


def parse_questions(raw: bytes, source: str) -> list[Question]:
    """The questions of ``questions.jsonl`` in file order; every problem is a DatasetError naming
    the file, the record (its id or line) and the field."""
    questions: list[Question] = []
    seen: set[str] = set()
    for n, rec in _jsonl(raw, source):
        where = f"line {n}"
        if not isinstance(rec, dict):
            raise DatasetError(f"a record must be an object; {_HINT}", path=source, record=where)
        qid = _text(rec, "id", where, source, empty=False)
        where = qid
        if qid in seen:
            raise DatasetError(f"duplicate question id; {_HINT}", path=source, record=where)
        seen.add(qid)
        qtype = _text(rec, "question_type", where, source, empty=False)
        if qtype not in CATEGORIES:
            raise DatasetError(
                f"unknown question type {qtype!r} (expected one of {', '.join(map(str, CATEGORIES))})",
                path=source,
                record=where,
                field="question_type",
            )
        domain = _text(rec, "domain", where, source, empty=False)
        if domain not in DOMAINS:
            raise DatasetError(
                f"must be web or enterprise, not {domain!r}",
                path=source,
                record=where,
                field="domain",
            )
        text = _text(rec, "question", where, source, empty=False)
        answer = _text(rec, "answer", where, source, empty=True)
        spec_text = _text(rec, "eval_function", where, source, empty=False)
        try:
            spec = parse_spec(spec_text)
        except ValueError as exc:
            raise DatasetError(
                f"{exc}; {_HINT}", path=source, record=where, field="eval_function"
            ) from None
        if spec.name == "llm_abstention_checker" and "-abs" not in qtype:
            raise DatasetError(
                "llm_abstention_checker needs an -abs question_type (as upstream's harness "
                f"requires); {_HINT}",
                path=source,
                record=where,
                field="eval_function",
            )
        image = rec.get("image")
        if image is not None and not (isinstance(image, str) and image.strip()):
            raise DatasetError(
                f"must be null or a path; {_HINT}", path=source, record=where, field="image"
            )
        questions.append(
            Question(
                id=qid,
                conversation_id="",  # set from the haystack
                category=qtype,
                question=text,
                gold=answer,
                category_id=qtype,
                abstention="-abs" in qtype,
                index=len(questions) + 1,
                meta={
                    "domain": domain,
                    "eval_function": spec_text,
                    "eval_spec": spec,
                    "question_type": qtype,
                    "image": image,
                },
            )
        )
    return questions


def _state_text(state: Mapping[str, Any]) -> str:
    lines = [f"URL: {state.get('url') or ''}"]
    for label, key in (("Thoughts", "thoughts"), ("Action", "action")):
        if state.get(key):
            lines.append(f"{label}: {state[key]}")
    lines.append(str(state.get("text") or ""))
    return "\n".join(lines).strip()


def parse_trajectories(
    rows: Iterable[tuple[int, object]], source: str, wanted: Container[str] | None = None
) -> dict[str, Session]:
    """Each trajectory of ``trajectories.jsonl`` (``rows``: line number and record) as a session:
    a first turn with its goal, start URL and outcome, then one turn per state (URL, thoughts,
    action, page text). Only the ids in ``wanted`` (all when None) are kept; every record is
    checked."""
    out: dict[str, Session] = {}
    seen: set[str] = set()
    for n, rec in rows:
        where = f"line {n}"
        if not isinstance(rec, dict):
            raise DatasetError(f"a record must be an object; {_HINT}", path=source, record=where)
        tid = _text(rec, "id", where, source, empty=False)
        where = tid
        if tid in seen:
            raise DatasetError(f"duplicate trajectory id; {_HINT}", path=source, record=where)
        seen.add(tid)
        goal = _text(rec, "goal", where, source, empty=True)
        states = rec.get("states")
        if not isinstance(states, list) or not all(isinstance(s, dict) for s in states):
            raise DatasetError(
                f"must be a list of objects; {_HINT}", path=source, record=where, field="states"
            )
        if wanted is not None and tid not in wanted:
            continue
        head = f"Goal: {goal}\nStart URL: {rec.get('start_url') or ''}"
        if rec.get("outcome"):
            head += f"\nOutcome: {rec['outcome']}"
        turns = [Turn(f"{tid}:goal", "user", head)]
        turns += [
            Turn(f"{tid}:{s.get('state_index', i)}", "agent", _state_text(s))
            for i, s in enumerate(states)
        ]
        out[tid] = Session(
            id=tid, date=None, turns=tuple(turns), meta={"domain": rec.get("domain")}
        )
    return out


def stream_jsonl(path: Path, digest: Any) -> Iterator[tuple[int, object]]:
    """The records of a large JSONL file read line by line (the trajectories file holds the
    page text of every state), each line fed to ``digest`` (a hashlib object) as read."""
    source = str(path)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise DatasetError(f"not a regular file; {_HINT}", path=source)
        handle = path.open("rb")
    except OSError as exc:
        raise DatasetError(f"cannot read the file: {exc.strerror or exc}", path=source) from None
    with handle:
        for n, line in enumerate(handle, 1):
            digest.update(line)
            try:
                text = line.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DatasetError(
                    f"line {n} is not valid UTF-8 at byte {exc.start}; {_HINT}", path=source
                ) from None
            if not text.strip():
                continue
            rec = parse_json_line(text, n, source, _HINT)
            check_surrogates(rec, source, record=f"line {n}")
            yield n, rec


def parse_haystack(raw: bytes, source: str) -> dict[str, tuple[str, ...]]:
    top = parse_json(decode_text(raw, source, _HINT), source, _HINT)
    if not isinstance(top, dict):
        raise DatasetError(f"the top level must be an object; {_HINT}", path=source)
    out: dict[str, tuple[str, ...]] = {}
    for qid, ids in top.items():
        if not isinstance(ids, list) or not all(isinstance(t, str) and t for t in ids):
            raise DatasetError(
                f"must be a list of trajectory ids; {_HINT}", path=source, record=str(qid)
            )
        out[qid] = tuple(ids)
    return out


def build(
    tier: str,
    questions: Sequence[Question],
    sessions: Mapping[str, Session],
    haystack: Mapping[str, tuple[str, ...]],
    haystack_path: str,
) -> tuple[list[Conversation], list[Question]]:
    """One conversation per distinct haystack (its trajectories as sessions, in haystack order);
    each question points at the conversation of its haystack."""
    conversations: dict[tuple[str, ...], Conversation] = {}
    out: list[Question] = []
    for q in questions:
        ids = haystack.get(q.id)
        if ids is None:
            raise DatasetError(
                f"no haystack entry for question {q.id!r}; {_HINT}", path=haystack_path
            )
        conv = conversations.get(ids)
        if conv is None:
            missing = [t for t in ids if t not in sessions]
            if missing:
                raise DatasetError(
                    f"unknown trajectory id {missing[0]!r} (not in trajectories.jsonl); {_HINT}",
                    path=haystack_path,
                    record=q.id,
                )
            digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:10]
            conv = Conversation(
                id=f"{tier}-{digest}",
                sessions=tuple(sessions[t] for t in ids),
                speakers=("user", "agent"),
                meta={"tier": tier, "trajectories": len(ids)},
            )
            conversations[ids] = conv
        out.append(
            Question(
                id=q.id,
                conversation_id=conv.id,
                category=q.category,
                question=q.question,
                gold=q.gold,
                category_id=q.category_id,
                abstention=q.abstention,
                index=q.index,
                meta={**q.meta, "tier": tier},
            )
        )
    return list(conversations.values()), out


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------


def _paths(folder: Path, tier: str) -> tuple[Path, Path, Path]:
    return (
        folder / "questions.jsonl",
        folder / "trajectories.jsonl",
        folder / "haystacks" / f"lme_v2_{tier}.json",
    )


@functools.lru_cache(maxsize=4)
def _build(paths: tuple[str, ...], tier: str, key: tuple[tuple[int, int], ...]) -> Parsed:
    del key  # cache key only (mtimes and sizes)
    qpath, tpath, hpath = map(Path, paths)
    qraw, hraw = read_bytes(qpath, _HINT), read_bytes(hpath, _HINT)
    questions = parse_questions(qraw, str(qpath))
    haystack = parse_haystack(hraw, str(hpath))
    wanted = {t for q in questions for t in haystack.get(q.id, ())}
    tdigest = hashlib.sha256()
    sessions = parse_trajectories(stream_jsonl(tpath, tdigest), str(tpath), wanted)
    conversations, built = build(tier, questions, sessions, haystack, str(hpath))
    sha = (hashlib.sha256(qraw).hexdigest(), tdigest.hexdigest(), hashlib.sha256(hraw).hexdigest())
    return Parsed(tuple(conversations), tuple(built), sha)


def parse_checksums(text: str, source: str) -> dict[str, str]:
    """``path -> sha256`` of a ``sha256sum`` listing (``HEX  path`` or ``HEX *path`` a line;
    blank and ``#`` lines skipped, a leading ``./`` dropped)."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        digest, _, path = line.strip().partition(" ")
        path = path.strip().lstrip("*").removeprefix("./")
        if len(digest) != 64 or not path or any(c not in "0123456789abcdefABCDEF" for c in digest):
            raise DatasetError(
                f"line {n} is not 'SHA256  PATH'; delete the file and download it again",
                path=source,
            )
        out[path] = digest.lower()
    return out


def check_release_list(
    listed: Mapping[str, str], keys: Sequence[str], source: str, pins: Pins = PINS
) -> None:
    """Each pinned file in ``keys`` must appear in the release's ``checksums.sha256`` with its
    pinned sha256 (a listing path may carry a folder prefix)."""
    for key in keys:
        pin = pins.files[key]
        found = [d for p, d in listed.items() if p == pin.path or p.endswith("/" + pin.path)]
        if pin.sha256 not in found:
            raise DatasetError(
                f"the release's checksums.sha256 lists {pin.path} with "
                f"{', '.join(found) or 'no sha256'}, not the pinned {pin.sha256}; the pins of "
                f"{pins.label} disagree with the release: pass a copy you trust with "
                f"--memeval-data=DIR (expects DIR/{pin.local})",
                path=source,
            )


def download_tier(request: LoadRequest, tier: str, pins: Pins = PINS) -> Path:
    """Fetch the release's checksums.sha256, then questions, trajectories and the tier's
    haystack, each checked against its pin and the release's own listing; return the cache's
    data folder."""
    root = Path(request.cache_dir) / "data"
    say = request.progress
    listing = fetch_pinned(
        pins, "checksums", root, what="the LongMemEval-V2 checksums.sha256", progress=say
    )
    keys = ("questions", "trajectories", tier)
    check_release_list(
        parse_checksums(decode_text(read_bytes(listing, _HINT), str(listing), _HINT), str(listing)),
        keys,
        str(listing),
        pins,
    )
    for key in keys:
        fetch_pinned(pins, key, root, what=f"the LongMemEval-V2 {key} file", progress=say)
    return root


@dataclass(frozen=True, eq=False)
class LongMemEvalV2:
    """LongMemEval-V2 at one tier (``--memeval-variant``: small, the default, or medium), read
    from ``DIR/longmemeval-v2`` or downloaded."""

    name: str = "longmemeval-v2"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = ("lme2_score", "lme2_unknown")
    pass_metric: str = "lme2_score"
    default_threshold: float = 1.0
    cluster_unit: str = "conversation"
    #: the release a local copy is checked against (the plugin's --memeval-accept-unpinned)
    pins: Pins = PINS

    def load(self, request: LoadRequest) -> Dataset:
        tier = request.variant or "small"
        if tier not in TIERS:
            raise DatasetError(f"unknown tier {tier!r}; LongMemEval-V2 has {', '.join(TIERS)}")
        source = "data_dir"
        if request.data_dir is None:
            request = replace(request, data_dir=download_tier(request, tier, self.pins))
            source = f"huggingface:{self.pins.repo}@{self.pins.revision}"
        assert request.data_dir is not None
        return load_parts(
            request,
            self.name,
            [(tier, _paths(Path(request.data_dir) / FOLDER, tier))],
            _build,
            f"missing: --memeval-data=DIR expects DIR/{FOLDER}/questions.jsonl, "
            f"trajectories.jsonl and haystacks/lme_v2_{tier}.json (upstream's layout)",
            {
                "source": source,
                "upstream": UPSTREAM.label,
                "tier": tier,
                "memory_context_max_tokens": MEMORY_CONTEXT_MAX_TOKENS,
            },
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_longmemeval_v2(question, prediction)

    def official_judge(self, protocol: LoadedProtocol) -> Judge | None:
        """The judge of ``--memeval-protocol=longmemeval-v2`` and its corrected variant
        (:mod:`._judge`)."""
        from ._judge import official_judge

        return official_judge(protocol)

    def official_answerer(self, protocol: LoadedProtocol) -> SuiteAnswerer | None:
        """The reader request of those protocols (:mod:`._answer`)."""
        from ._answer import official_answerer

        return official_answerer(protocol)


BENCHMARK = LongMemEvalV2()


#: known differences from upstream and what the plugin does (the protocol card lists them)
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "boxed-backspace",
        "harness.py writes '\\boxed{}' in a non-raw string: the reader system prompt holds a "
        "backspace (U+0008) then 'oxed{}'",
        "protocol longmemeval-v2 sends upstream's bytes, backspace included; the labelled variant "
        "longmemeval-v2-corrected sends '\\boxed{}' (its published figures are then reference)",
        "longmemeval-v2-answer-request",
    ),
    Deviation(
        "unknown-without-request",
        "an UNKNOWN boxed answer is sent to the judge and the verdict discarded",
        "scored 0 without a request (the same score, no cost)",
        "longmemeval-v2-scores",
    ),
    Deviation(
        "judge-raises",
        "a judge reply without a label raises (the harness aborts)",
        "counted as 0 with a warning naming the item",
        "longmemeval-v2-judge",
    ),
)
