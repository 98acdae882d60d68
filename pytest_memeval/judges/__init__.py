"""LLM judges: the judge protocol, the five styles, the registry and judge agreement.

Styles (rules in docs/scoring.md#judges): ``mem0`` (binary), ``graded`` (0-100 x N runs),
``longmemeval`` (five rule sets, strict yes/no), ``beam-nugget`` (rubric items) and ``usermem``
(reward in [0, 1]). Every prompt is our own text in ``pytest_memeval/templates/`` and can be
replaced by a user file; each judge exposes the sha256 of the templates it uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ..errors import JudgeError
from ._agreement import cohen_kappa
from ._base import Judge, JudgeResult, PromptTemplate, load_template, template_sha256
from ._beam import BeamNuggetJudge
from ._graded import GradedJudge
from ._longmemeval import LongMemEvalJudge
from ._mem0 import Mem0Judge
from ._usermem import UserMemJudge

if TYPE_CHECKING:
    from ._base import extract_json_mem0, gold_text, parallel_map
    from ._beam import (
        JSON_REPAIR_UPSTREAM,
        json_repair_version,
        parse_json_response,
        read_beam_reply,
    )
    from ._longmemeval import QUESTION_TYPE_RULES, strict_yes_no
    from ._mem0 import is_locomo_adversarial


__all__ = [
    "DEFAULT_STYLE",
    "JSON_REPAIR_UPSTREAM",
    "JUDGE_ALIAS",
    "QUESTION_TYPE_RULES",
    "STYLES",
    "STYLE_METRICS",
    "BeamNuggetJudge",
    "GradedJudge",
    "Judge",
    "JudgeResult",
    "LongMemEvalJudge",
    "Mem0Judge",
    "PromptTemplate",
    "UserMemJudge",
    "cohen_kappa",
    "default_style",
    "extract_json_mem0",
    "get_judge",
    "gold_text",
    "is_locomo_adversarial",
    "json_repair_version",
    "load_template",
    "parallel_map",
    "parse_json_response",
    "read_beam_reply",
    "resolve_judge_alias",
    "strict_yes_no",
    "template_sha256",
]

#: benchmark -> the judge style used when --memeval-judge-style is not given
DEFAULT_STYLE: dict[str, str] = {
    "locomo": "mem0",
    "demo": "mem0",
    "longmemeval": "longmemeval",
    "beam": "beam-nugget",
    "usermem": "usermem",
}

STYLES: tuple[str, ...] = ("mem0", "graded", "longmemeval", "beam-nugget", "usermem")

#: style -> the headline metric key its judge writes (read off the judge classes themselves, so
#: the judge stays the one source of its name; docs/scoring.md#metric-names)
STYLE_METRICS: dict[str, str] = {
    cls.name: cls.metric
    for cls in (Mem0Judge, GradedJudge, LongMemEvalJudge, BeamNuggetJudge, UserMemJudge)
}


#: what a user may write for "the first judge's headline metric" of a benchmark, wherever a metric
#: is named (``--memeval-fail-under``, ``--memeval-metrics``, ``--memeval-max-drop``); ``judge@LABEL``
#: names the headline of the judge LABEL (docs/scoring.md#metric-names)
JUDGE_ALIAS = "judge"


def resolve_judge_alias(metric: str, headline: str | None) -> str | None:
    """``metric`` with the alias resolved against ``headline`` (the first judge's headline metric
    on the benchmark: ``judge_mem0``, ``nugget``, ...): ``judge`` -> ``headline``,
    ``judge@LABEL`` -> ``headline@LABEL``; any other name is returned unchanged. None when
    ``metric`` is the alias and there is no judge (``headline`` None)."""
    if metric == JUDGE_ALIAS:
        return headline
    if metric.startswith(JUDGE_ALIAS + "@"):
        return None if headline is None else headline + metric[len(JUDGE_ALIAS) :]
    return metric


def default_style(benchmark: str) -> str:
    """The default judge style of a benchmark (``graded`` for benchmarks without one)."""
    return DEFAULT_STYLE.get(benchmark, "graded")


def _graded(template_path: str | None, runs: int) -> Judge:
    if runs < 1:
        raise JudgeError(f"--memeval-judge-runs must be at least 1, got {runs}")
    return GradedJudge.from_path(template_path, runs=runs)


#: style -> its judge built from (template path or None, runs); ``runs`` is read by ``graded`` only
_BUILDERS: dict[str, Callable[[str | None, int], Judge]] = {
    "mem0": lambda path, _: Mem0Judge.from_path(path),
    "graded": _graded,
    "longmemeval": lambda path, _: LongMemEvalJudge.from_path(path),
    "beam-nugget": lambda path, _: BeamNuggetJudge.from_path(path),
    "usermem": lambda path, _: UserMemJudge.from_path(path),
}


def get_judge(style: str, *, template_path: str | None = None, runs: int = 10) -> Judge:
    """Build the judge of ``style``. ``template_path`` replaces the built-in prompt (for
    ``longmemeval``: one file for all five rule sets, or a folder holding any of
    ``longmemeval_{standard,temporal,knowledge_update,preference,abstention}.txt``).
    ``runs`` is used by ``graded`` only. Raises JudgeError for an unknown style, a bad template
    or ``runs < 1``."""
    build = _BUILDERS.get(style)
    if build is None:
        raise JudgeError(f"unknown judge style {style!r}; available: {', '.join(STYLES)}")
    return build(template_path, runs)


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "JSON_REPAIR_UPSTREAM": "._beam",
    "QUESTION_TYPE_RULES": "._longmemeval",
    "extract_json_mem0": "._base",
    "gold_text": "._base",
    "is_locomo_adversarial": "._mem0",
    "json_repair_version": "._beam",
    "parallel_map": "._base",
    "parse_json_response": "._beam",
    "read_beam_reply": "._beam",
    "strict_yes_no": "._longmemeval",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
