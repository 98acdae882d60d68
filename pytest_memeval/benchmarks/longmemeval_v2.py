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
import json
import re
import stat
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import DatasetError
from ..records import Conversation, Prediction, Question, Session, Turn
from .base import (
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
from .download import PinnedFile, Pins, fetch_pinned

__all__ = [
    "BENCHMARK",
    "CATEGORIES",
    "DEVIATIONS",
    "HF_DATASET",
    "LLM_FUNCTIONS",
    "MEMORY_CONTEXT_MAX_TOKENS",
    "OFFLINE_FUNCTIONS",
    "TIERS",
    "UPSTREAM_COMMIT",
    "UPSTREAM_SCORER_SHA256",
    "EvalSpec",
    "LongMemEvalV2",
    "extract_boxed",
    "parse_spec",
    "score_reply",
]

#: the upstream repository commit whose loader and scorer this module follows
UPSTREAM_COMMIT = "be15ea6e995462f3391c1a610892df3f67dfa7bd"
#: sha256 of ``evaluation/qa_eval_metrics.py`` at that commit (the scorer the tests compare with)
UPSTREAM_SCORER_SHA256 = "f8ba659e237c4282a07a92538090ea500ce8483820b390b1d19af187c01417ac"
#: sha256 of the loader files read at that commit
UPSTREAM_LOADER_SHA256: Mapping[str, str] = MappingProxyType(
    {
        "data/public_data.py": "d2b868bfb0b6f8b66489c9445389eb6d0f26975f940a9c2365be154e63649c89",
        "evaluation/harness.py": "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1",
    }
)
HF_DATASET = "xiaowu0162/longmemeval-v2"
FOLDER = "longmemeval-v2"
TIERS: tuple[str, ...] = ("small", "medium")


def _file(path: str, sha256: str, size: int | None) -> PinnedFile:
    return PinnedFile.below(FOLDER, path, sha256, size)


#: the release: the Hugging Face dataset at a revision; its files and the release's own
#: ``checksums.sha256`` (pinned too: every downloaded file is also checked against its line)
PINS = Pins(
    host="huggingface",
    repo=HF_DATASET,
    revision="f152293e235517d504809563c833d7190b8c713b",
    files={
        "questions": _file(
            "questions.jsonl",
            "0a3ae5ebea938c24d7800e1e0b0828e08ae1646f939a53853b2b8cdc08e292b7",
            286_186,
        ),
        "trajectories": _file(
            "trajectories.jsonl",
            "363cec9a8e87aa8d9101ce4e600aadbf7031d674056ebe4f969e8424abc5f3c6",
            1_195_604_539,
        ),
        "small": _file(
            "haystacks/lme_v2_small.json",
            "9b5301defb23a088a5f06e45ff8d5f35e569d78305a66d492046a9fff9b46593",
            822_632,
        ),
        "medium": _file(
            "haystacks/lme_v2_medium.json",
            "4756d5126347f0d18f045bb6c47b08cb3b23e9db24386cc48a9b2879e7969b59",
            None,
        ),
        "checksums": _file(
            "checksums.sha256",
            "b17a18daa52873f915808502217c3c5fab39d20638544f986401155c9e8d67a6",
            None,
        ),
    },
)
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
# scoring: upstream evaluation/qa_eval_metrics.py, rule by rule (our own code)
# ---------------------------------------------------------------------------------------------

#: upstream's functions scored without a model, and those that need its LLM judge
OFFLINE_FUNCTIONS: tuple[str, ...] = (
    "norm_phrase_set_match",
    "norm_phrase_set_match_ordered",
    "mc_choice_match",
    "mc_choice_set_match",
)
LLM_FUNCTIONS: tuple[str, ...] = ("llm_abstention_checker", "llm_gotchas_checker")
_PHRASE_OPTIONS = frozenset({"lower", "normalize_hyphen", "strip_punct"})
_OPTIONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "norm_phrase_set_match": _PHRASE_OPTIONS | {"separators", "require_non_empty"},
        "norm_phrase_set_match_ordered": _PHRASE_OPTIONS | {"separators", "require_non_empty"},
        # the multiple-choice functions swallow unknown options (upstream ``**_``)
        "mc_choice_match": frozenset({"strip_chars", "require_non_empty"}),
        "mc_choice_set_match": frozenset({"require_non_empty"}),
        # the LLM checks: the options the harness does not override (its eval_config sets the
        # evaluator model, reasoning effort, token limit and timeout)
        **dict.fromkeys(
            LLM_FUNCTIONS,
            frozenset({"require_non_empty", "evaluator_temperature", "evaluator_top_p"}),
        ),
    }
)
_SWALLOWS = frozenset({"mc_choice_match", "mc_choice_set_match", *LLM_FUNCTIONS})
_SEPARATOR_SPLIT = re.compile(r"[,;]")
_NOT_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")
_BOXED_LOWER = re.compile(r"\\boxed\{([^}]*)\}")
_CHOICE_WORD = re.compile(r"\b(choice|option)\b", re.IGNORECASE)
_CAPS = re.compile(r"[A-Z]+")
_FILLERS = frozenset(
    [
        "AND",
        "ANSWER",
        "ANSWERS",
        "CHOICE",
        "CHOICES",
        "FINAL",
        "LETTER",
        "LETTERS",
        "OPTION",
        "OPTIONS",
    ]
)


@dataclass(frozen=True)
class EvalSpec:
    """A parsed ``eval_function`` spec: the function name and its options."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs_judge(self) -> bool:
        return self.name in LLM_FUNCTIONS


def _option_value(key: str, value: str) -> Any:
    """One ``key=value`` option as upstream ``_parse_eval_value`` reads it."""
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if key in ("separators", "separator"):
        if not value:
            return []
        text = value.strip()
        if text[:1] == "[" and text[-1:] == "]":
            return json.loads(text)
        return [ch for ch in value if not ch.isspace()]
    try:
        return float(value) if "." in value else int(value)
    except ValueError:
        return value


def parse_spec(spec: str) -> EvalSpec:
    """``name|key=value|...`` as upstream ``parse_eval_function_spec`` reads it; ValueError names
    what is wrong (an unknown function, a malformed or repeated option, an option the function
    does not take, an option of the wrong type)."""
    name, *rest = (part.strip() for part in spec.split("|"))
    if name not in _OPTIONS and name not in LLM_FUNCTIONS:
        raise ValueError(f"unknown eval function {name!r}")
    options: dict[str, Any] = {}
    for part in rest:
        if not part:
            continue
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"invalid option {part!r}")
        if key in options:
            raise ValueError(f"duplicate option {key!r}")
        try:
            options[key] = _option_value(key, value.strip())
        except ValueError:
            raise ValueError(f"option {key!r}: {value.strip()!r} is not a JSON list") from None
    if name in _SWALLOWS:
        options = {k: v for k, v in options.items() if k in _OPTIONS.get(name, ())}
    else:
        unknown = sorted(set(options) - _OPTIONS[name])
        if unknown:
            raise ValueError(f"{name} takes no option {unknown[0]!r}")
    seps = options.get("separators", [])
    if not isinstance(seps, list) or not all(isinstance(s, str) and s for s in seps):
        raise ValueError("separators must be a list of non-empty strings")
    if not isinstance(options.get("strip_chars", ""), str):
        raise ValueError("strip_chars must be a string")
    return EvalSpec(name, MappingProxyType(options))


def _normalise(text: str, opts: Mapping[str, Any]) -> str:
    if opts.get("lower", True):
        text = text.lower()
    if opts.get("normalize_hyphen", True):
        text = text.replace("-", " ").replace("_", " ")
    text = _SEPARATOR_SPLIT.sub(" ", text)
    if opts.get("strip_punct", True):
        text = _NOT_WORD.sub("", text)
    return _SPACES.sub(" ", text).strip()


def _phrases(answer: str, opts: Mapping[str, Any]) -> list[str]:
    seps: list[str] = opts.get("separators", [",", ";"])
    parts = re.split("|".join(map(re.escape, seps)), answer) if seps else [answer]
    return [p for p in (_normalise(part, opts) for part in parts) if p]


def _word(phrase: str) -> re.Pattern[str]:
    return re.compile(r"\b" + re.escape(phrase) + r"\b")


def _phrase_match(prediction: str, answer: str, opts: Mapping[str, Any], ordered: bool) -> bool:
    pred = _normalise(prediction, opts)
    phrases = _phrases(answer, opts)
    if opts.get("require_non_empty", True) and not (pred and phrases):
        return False
    if not ordered:
        return all(_word(p).search(pred) for p in set(phrases))
    rest = pred
    for p in phrases:
        m = _word(p).search(rest)
        if m is None:
            return False
        rest = rest[m.end() :]
    return True


def _choice_match(prediction: str, answer: str, opts: Mapping[str, Any]) -> bool:
    boxed = _BOXED_LOWER.search(prediction.lower())
    text = _CHOICE_WORD.sub("", boxed[1] if boxed else prediction)
    for ch in opts.get("strip_chars", "."):
        text = text.replace(ch, "")
    got, want = text.strip().upper(), answer.strip().upper()
    if opts.get("require_non_empty", True) and not (got and want):
        return False
    return got == want


def _letters(text: str) -> list[str]:
    return [ch for run in _CAPS.findall(text.upper()) if run not in _FILLERS for ch in run]


def _choice_set_match(prediction: str, answer: str, opts: Mapping[str, Any]) -> bool:
    got, want = _letters(prediction), _letters(answer)
    if opts.get("require_non_empty", True) and not (got and want):
        return False
    return set(got) == set(want)


_MATCHERS: Mapping[str, Callable[[str, str, Mapping[str, Any]], bool]] = MappingProxyType(
    {
        "norm_phrase_set_match": lambda p, a, o: _phrase_match(p, a, o, ordered=False),
        "norm_phrase_set_match_ordered": lambda p, a, o: _phrase_match(p, a, o, ordered=True),
        "mc_choice_match": _choice_match,
        "mc_choice_set_match": _choice_set_match,
    }
)


def extract_boxed(text: str) -> str:
    """The content of the last ``\\boxed{...}`` (nested braces balanced; an unclosed one runs to
    the end), stripped; the stripped reply when there is none or it is blank."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return text.strip()
    depth, out = 1, []
    for ch in text[start + len("\\boxed{") :]:
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            break
        out.append(ch)
    inner = "".join(out).strip()
    return inner or text.strip()


def score_reply(spec: EvalSpec, reply: str, answer: str) -> dict[str, float]:
    """Upstream's verdict on one reply: ``lme2_unknown`` (the boxed answer is UNKNOWN) and, for the
    offline functions or an UNKNOWN reply (upstream forces 0 whatever the judge says),
    ``lme2_score``. The LLM checks of a non-UNKNOWN reply need the judge: no score here."""
    parsed = extract_boxed(reply)
    unknown = parsed.strip().lower() == "unknown"
    scores = {"lme2_unknown": 1.0 if unknown else 0.0}
    if unknown:
        scores["lme2_score"] = 0.0
    elif not spec.needs_judge:
        scores["lme2_score"] = 1.0 if _MATCHERS[spec.name](parsed, answer, spec.options) else 0.0
    return scores


def score_longmemeval_v2(question: Question, prediction: Prediction) -> dict[str, float]:
    spec = question.meta["eval_spec"]
    assert isinstance(spec, EvalSpec)
    return score_reply(spec, prediction.text, str(question.gold))


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
                "upstream": f"xiaowu0162/LongMemEval-V2@{UPSTREAM_COMMIT}",
                "tier": tier,
                "memory_context_max_tokens": MEMORY_CONTEXT_MAX_TOKENS,
            },
        )

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_longmemeval_v2(question, prediction)


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
