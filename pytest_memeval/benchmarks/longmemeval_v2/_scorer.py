"""LongMemEval-V2's offline scorer: upstream ``evaluation/qa_eval_metrics.py`` rule by rule (our
own code), applied as its ``score_prediction`` applies them: the spec's function on the last
``\\boxed{}`` of the reply; a boxed ``UNKNOWN`` scores 0 (docs/scoring.md#longmemeval-v2)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...records import Prediction, Question

__all__ = [
    "LLM_FUNCTIONS",
    "OFFLINE_FUNCTIONS",
    "EvalSpec",
    "extract_boxed",
    "parse_spec",
    "score_longmemeval_v2",
    "score_reply",
]


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
