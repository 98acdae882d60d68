"""Benchmark registry: built-ins by name, plus the entry-point group ``pytest_memeval.benchmarks``."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ..errors import MSG_UNKNOWN_BENCHMARK, MemevalError
from ._base import Benchmark, CategoryInfo, Dataset, LoadRequest

if TYPE_CHECKING:
    from ._base import Deviation, check_unique_ids, file_sha256, parse_json, read_data
    from ._download import check_local_copies, download
    from ._errata import (
        ERRATA_SOURCES,
        LOCOMO_AUDIT,
        Errata,
        ErrataSource,
        load_errata,
        parse_audit_entries,
    )


__all__ = [
    "BUILTIN_BENCHMARKS",
    "ENTRY_POINT_GROUP",
    "ERRATA_SOURCES",
    "LOCOMO_AUDIT",
    "SUITE_ANSWER_PROMPTS",
    "SUITE_CALIBRATION",
    "SUITE_DEFAULT_PROTOCOLS",
    "SUITE_PUBLISHED",
    "Benchmark",
    "CategoryInfo",
    "Dataset",
    "Deviation",
    "Errata",
    "ErrataSource",
    "LoadRequest",
    "SuiteAnswerPrompt",
    "SuiteCalibration",
    "available_benchmarks",
    "check_local_copies",
    "check_unique_ids",
    "download",
    "file_sha256",
    "get_benchmark",
    "load_errata",
    "parse_audit_entries",
    "parse_json",
    "read_data",
]

ENTRY_POINT_GROUP = "pytest_memeval.benchmarks"

#: name -> "module:attribute" of a Benchmark object (imported lazily)
BUILTIN_BENCHMARKS: dict[str, str] = {
    "demo": "pytest_memeval.benchmarks.locomo._demo:BENCHMARK",
    "locomo": "pytest_memeval.benchmarks.locomo:BENCHMARK",
    "locomo-plus": "pytest_memeval.benchmarks.locomo_plus:BENCHMARK",
    "longmemeval": "pytest_memeval.benchmarks.longmemeval:BENCHMARK",
    "beam": "pytest_memeval.benchmarks.beam:BENCHMARK",
    "usermem": "pytest_memeval.benchmarks.usermem:BENCHMARK",
    "memoryagentbench": "pytest_memeval.benchmarks.memoryagentbench:BENCHMARK",
    "longmemeval-v2": "pytest_memeval.benchmarks.longmemeval_v2:BENCHMARK",
    "halumem": "pytest_memeval.benchmarks.halumem:BENCHMARK",
}


@dataclass(frozen=True)
class SuiteAnswerPrompt:
    """The plugin's own answer prompt of a suite (not an upstream one): a file in the suite's
    home, ``pytest_memeval/<folder>/<file>``, shipped as package data, and whether the whole
    reply is the prediction (long-form answers, ordered lists) rather than the text after the
    answer marker."""

    folder: str
    file: str = "answer_prompt.txt"
    whole_reply: bool = False


#: suite -> its own answer prompt, for the suites that have one (the others get
#: ``templates/answer.txt``); read as data, without importing the suite
SUITE_ANSWER_PROMPTS: dict[str, SuiteAnswerPrompt] = {
    "longmemeval": SuiteAnswerPrompt("benchmarks/longmemeval"),
    "beam": SuiteAnswerPrompt("benchmarks/beam", whole_reply=True),
}


@dataclass(frozen=True)
class SuiteCalibration:
    """Which wrong-answer sets of judge calibration (``--memeval-calibration-wrong``) fit a
    suite, besides the perturbations every suite gets."""

    #: the LoCoMo audit's wrong answers (``locomo-audit``; keyed by LoCoMo's question ids), and
    #: a default source when the run has the suite
    audit: bool = False
    #: a wrong-answer file in the audit's shape (its ids follow LoCoMo's file layout)
    files: bool = False


#: suite -> the wrong-answer sets judge calibration can use on it (suites not named here: the
#: perturbations only); read as data, without importing the suite
SUITE_CALIBRATION: dict[str, SuiteCalibration] = {
    "locomo": SuiteCalibration(audit=True, files=True),
    "demo": SuiteCalibration(files=True),  # LoCoMo's file layout, not LoCoMo's questions
}

#: suite -> the protocol its items are judged under when ``--memeval-judge`` is given without
#: ``--memeval-protocol`` or ``--memeval-judge-style``: only that protocol's judge reads them
#: (LoCoMo-Plus has no reference answers, docs/scoring.md#locomo-plus; LongMemEval-V2's
#: abstention and gotcha questions have only upstream's LLM check as a verdict,
#: docs/scoring.md#longmemeval-v2-judge). In order of precedence: the first suite of the run
#: found here decides. Read as data, without importing the suite.
SUITE_DEFAULT_PROTOCOLS: dict[str, str] = {
    "locomo-plus": "locomo-plus",
    "longmemeval-v2": "longmemeval-v2",
}


#: suite -> the module of its home holding its published figures (``BASELINES``, each an
#: ``analysis.baselines.Baseline``, and ``DEFAULTS``, the names shown when
#: ``--memeval-published-baselines`` is not given), for the suites that have any; read as data
#: (``analysis.baselines`` imports them at first use, in this order)
SUITE_PUBLISHED: dict[str, str] = {
    "locomo": "pytest_memeval.benchmarks.locomo._published",
    "longmemeval": "pytest_memeval.benchmarks.longmemeval._published",
    "beam": "pytest_memeval.benchmarks.beam._published",
    "longmemeval-v2": "pytest_memeval.benchmarks.longmemeval_v2._published",
}


def _entry_point_benchmarks() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_benchmarks() -> list[str]:
    names = dict.fromkeys(BUILTIN_BENCHMARKS)
    names.update(dict.fromkeys(_entry_point_benchmarks()))
    return sorted(names)


def _coerce(obj: object, name: str) -> Benchmark:
    if not isinstance(obj, Benchmark) and callable(obj):
        obj = obj()
    if not isinstance(obj, Benchmark):
        raise MemevalError(
            f"benchmark {name!r} does not provide the Benchmark protocol: {obj!r:.80}"
        )
    return obj


def get_benchmark(name: str) -> Benchmark:
    """Resolve a benchmark by name: entry points first (so a package can replace a built-in)."""
    eps = _entry_point_benchmarks()
    if name in eps:
        return _coerce(eps[name].load(), name)  # type: ignore[attr-defined]
    target = BUILTIN_BENCHMARKS.get(name)
    if target is None:
        raise MemevalError(
            MSG_UNKNOWN_BENCHMARK.format(name=name, available=", ".join(available_benchmarks()))
        )
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return _coerce(getattr(module, attr), name)


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "ERRATA_SOURCES": "._errata",
    "LOCOMO_AUDIT": "._errata",
    "Deviation": "._base",
    "Errata": "._errata",
    "ErrataSource": "._errata",
    "check_local_copies": "._download",
    "check_unique_ids": "._base",
    "download": "._download",
    "file_sha256": "._base",
    "load_errata": "._errata",
    "parse_audit_entries": "._errata",
    "parse_json": "._base",
    "read_data": "._base",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
