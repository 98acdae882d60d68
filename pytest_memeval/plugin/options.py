"""Command-line options, declared once (``OPTIONS``), read once into the grouped
``run.settings.Settings`` (pytest glue).

Every option is also settable in the ini file as ``memeval_<name>``; precedence is
command line > environment (where one is documented) > ini > default. Validation errors are
``pytest.UsageError`` naming the option, where the bad value came from, and the fix.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MemevalError

if TYPE_CHECKING:
    from ..run.shards import Shard

from ..run.settings import (
    CheckSettings,
    LLMSettings,
    ReportSettings,
    RunSettings,
    Selection,
    Settings,
)

__all__ = ["OPTIONS", "addoptions", "read_settings"]


@dataclass(frozen=True)
class _Opt:
    name: str  # without the leading "--"; ini name is name with "-" -> "_"
    help: str
    default: str | None = None
    flag: bool = False
    metavar: str | None = None
    multiple: bool = False
    const: str | None = None  # the option's value may be omitted: then it is `const`

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


OPTIONS: tuple[_Opt, ...] = (
    _Opt(
        "memeval",
        "benchmark(s) to run: demo, locomo, locomo-plus, longmemeval, beam, usermem, "
        "memoryagentbench, longmemeval-v2, halumem (comma "
        "list; locomo,locomo-plus is LoCoMo-Plus's unified set)",
        metavar="BENCH[,BENCH]",
    ),
    _Opt(
        "memsys",
        "memory system(s) under test: conftest fixture, entry point, built-in "
        "(full-context, bm25, embedding, no-memory, oracle), replay:PATH, or package.module:factory "
        "(comma list)",
        metavar="SYS[,SYS]",
    ),
    _Opt(
        "memeval-data",
        "folder with one sub-folder per benchmark (DIR/locomo/locomo10.json); "
        "default $MEMEVAL_DATA_DIR, else download to the cache",
        metavar="DIR",
    ),
    _Opt(
        "memeval-variant",
        "benchmark variant (LongMemEval oracle|s|m, BEAM 100K|500K|1M|10M)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-limit",
        "run only the first N questions of each conversation (file order)",
        metavar="N",
    ),
    _Opt(
        "memeval-sample",
        "run N questions per category, stratified, reproducible with --memeval-seed",
        metavar="N",
    ),
    _Opt("memeval-seed", "seed for --memeval-sample (default 0)", default="0", metavar="S"),
    _Opt(
        "memeval-metrics",
        "metrics to compute and show (default: the benchmark's offline metrics); judge = the "
        "first judge's metric on each benchmark (judge_mem0, nugget, ...)",
        metavar="M[,M]",
    ),
    _Opt(
        "memeval-answerer",
        "answerer: extractive (offline, default) or PROVIDER:MODEL",
        default="extractive",
        metavar="NAME",
    ),
    _Opt(
        "memeval-top-k",
        "memories retrieved per question; a comma list runs one variant per k (default 10)",
        default="10",
        metavar="K[,K]",
    ),
    _Opt(
        "memeval-pass-threshold",
        "score at or above which an answer is CORRECT when no judge "
        "runs (default 0.5; usermem 0.6)",
        metavar="X",
    ),
    _Opt(
        "memeval-cache-dir",
        "cache folder for downloads and LLM calls (default <rootdir>/.memeval-cache)",
        metavar="DIR",
    ),
    _Opt("memeval-json", "write the JSON report to PATH", metavar="PATH"),
    _Opt(
        "memeval-timeout",
        "seconds a memory-system call (ingest, search, answer) may take "
        "before its item errors (default: no limit)",
        metavar="S",
    ),
    _Opt(
        "memeval-resume",
        "continue an earlier run (default: the latest under the cache "
        "folder): questions already stored are skipped, their results reused",
        metavar="RUN",
        const="latest",
    ),
    _Opt(
        "memeval-keep-runs",
        "run folders to keep under <cache>/runs: at the end of a run the oldest beyond N are "
        "deleted, never the one resumed or re-judged (default 20; 0 keeps all)",
        default="20",
        metavar="N",
    ),
    _Opt("memeval-strict", "report WRONG answers as test failures", flag=True),
    _Opt(
        "memeval-show-wrong",
        "how many WRONG answers to detail in the terminal summary (default 5; all with -v)",
        default="5",
        metavar="N",
    ),
    _Opt(
        "memeval-judge",
        "LLM judge(s) PROVIDER:MODEL (openai, anthropic, openai-compatible), "
        "comma list; the first one decides CORRECT/WRONG",
        metavar="P:M[,P:M]",
    ),
    _Opt(
        "memeval-judge-style",
        "judge style: mem0, graded, longmemeval, beam-nugget, usermem (default per benchmark)",
        metavar="STYLE",
    ),
    _Opt("memeval-judge-runs", "runs of the graded judge (default 10)", default="10", metavar="N"),
    _Opt(
        "memeval-judge-prompt",
        "judge prompt template file (or folder for longmemeval)",
        metavar="PATH",
    ),
    _Opt(
        "memeval-answer-prompt", "answer prompt template file for an LLM answerer", metavar="PATH"
    ),
    # ---- judge calibration (pytest_memeval/run/calibration.py) ----
    _Opt(
        "memeval-judge-calibration",
        "calibrate the --memeval-judge on the gold answers and on known-wrong answers, per "
        "category: 'before' runs the calibration first and then the system as usual (the "
        "default when no value is given); 'only' runs the calibration instead of the system "
        "(no question of the benchmark runs). Gate with judge_false_accept / judge_true_accept",
        metavar="before|only",
        const="before",
    ),
    _Opt(
        "memeval-calibration-wrong",
        "known-wrong answers for the judge calibration (comma list): perturb (built-in "
        "wrong-entity, wrong-date and negation answers made from the gold), locomo-audit "
        "(dial481/locomo-audit ap-baseline v1 and v2, downloaded at a pinned commit), "
        "locomo-audit-v1, locomo-audit-v2, or PATH of a JSON file of that shape; default "
        "perturb, plus locomo-audit for --memeval=locomo",
        metavar="SOURCE[,SOURCE]",
    ),
    _Opt(
        "memeval-protocol",
        "official protocol: mem0, longmemeval, beam, locomo, locomo-plus, memoryagentbench, halumem "
        "(upstream prompts, "
        "request parameters, parsing and aggregation, read from the pinned upstream source; "
        "locomo-plus is the default when --memeval=locomo-plus runs with a judge)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-protocol-source",
        "local checkout of the protocol's upstream repository (same relative paths) instead "
        "of downloading the pinned files",
        metavar="DIR",
    ),
    _Opt(
        "memeval-base-url",
        "base URL for openai-compatible endpoints (vLLM, Ollama, ...)",
        metavar="URL",
    ),
    _Opt(
        "memeval-api-key-env",
        "environment variable holding the openai-compatible key (default OPENROUTER_API_KEY)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-llm-concurrency",
        "LLM calls in flight per process, answerer and judges "
        "together (default 8; -n N multiplies it)",
        default="8",
        metavar="N",
    ),
    _Opt("memeval-llm-timeout", "seconds per LLM request (default 60)", default="60", metavar="S"),
    _Opt(
        "memeval-llm-rpm",
        "requests a minute per provider and key, shared by every process of the machine "
        "(xdist workers included; default: no limit)",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-tpm",
        "tokens a minute (input + max reply) per provider and key, shared like "
        "--memeval-llm-rpm (default: no limit)",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-backoff",
        "first retry delay in seconds, doubled per retry with jitter (default 0.5)",
        default="0.5",
        metavar="S",
    ),
    _Opt(
        "memeval-llm-retries",
        "retries of 429/5xx/timeouts per LLM call (default 6)",
        default="6",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-circuit-breaker",
        "after N LLM calls in a row that cannot connect, stop calling the endpoint in that "
        "process: judges UNSCORED, answers ERROR (default 5; 0 disables)",
        default="5",
        metavar="N",
    ),
    _Opt("memeval-no-cache", "do not read or write the LLM cache", flag=True),
    _Opt(
        "memeval-estimate",
        "ingest and search for real, render every LLM request, send none: print the calls, input "
        "tokens (after cache hits), cost and wall time the run would take (docs/scale.md)",
        flag=True,
    ),
    _Opt(
        "memeval-llm-batch",
        "send judge calls through the providers' batch APIs at the end of the run (half "
        "price; see docs/batch.md)",
        flag=True,
    ),
    _Opt(
        "memeval-prices",
        "JSON price table {model: {input: $/Mtok, output: $/Mtok}} for the cost in the summary",
        metavar="PATH",
    ),
    _Opt(
        "memeval-rejudge",
        "re-score the predictions stored by an earlier run (default: the latest under the cache "
        "folder) without calling the memory system or the answerer",
        metavar="RUN",
        const="latest",
    ),
    _Opt("memeval-html", "write a self-contained HTML report to PATH", metavar="PATH"),
    _Opt(
        "memeval-board",
        "add this run to the board in DIR (its JSON report is kept in DIR/reports) and rewrite "
        "the board's static site there (docs/board.md)",
        metavar="DIR",
    ),
    _Opt(
        "memeval-markdown",
        "write the Markdown summary to PATH (also appended to $GITHUB_STEP_SUMMARY when set)",
        metavar="PATH",
    ),
    _Opt(
        "memeval-fail-under",
        "gate, repeatable: BENCH.CATEGORY.METRIC>=VALUE (overall as "
        "category; <= for latency), e.g. locomo.temporal.f1>=0.4; METRIC judge = the first "
        "judge's metric on the benchmark",
        metavar="EXPR",
        multiple=True,
    ),
    _Opt(
        "memeval-save-baseline",
        "save per-question outcomes and the summary to PATH",
        metavar="PATH",
    ),
    _Opt(
        "memeval-baseline", "compare with a saved baseline (see --memeval-max-drop)", metavar="PATH"
    ),
    _Opt(
        "memeval-max-drop",
        "regression gate, repeatable: METRIC:POINTS (fails when the metric "
        "drops by more than POINTS and the drop is significant; judge = the first judge's metric)",
        metavar="M:P",
        multiple=True,
    ),
    _Opt(
        "memeval-alpha",
        "significance level of the regression test (default 0.05)",
        default="0.05",
        metavar="A",
    ),
    # ---- at scale (pytest_memeval/scale.py) ----
    _Opt(
        "memeval-shard",
        "run shard I of N: a deterministic 1/N of the conversations, balanced by question "
        "count, the same on every machine (composable with -n); merge with --memeval-merge",
        metavar="I/N",
    ),
    _Opt(
        "memeval-merge",
        "merge the run folders of the shards of one run (comma list, repeatable) into one "
        "report; options default to the shards' own; nothing is run",
        metavar="RUN_DIR[,RUN_DIR]",
        multiple=True,
    ),
    _Opt(
        "memeval-merge-partial",
        "accept a merge whose shards do not hold a result for every selected question (the "
        "missing ones count as ERROR); without it such a merge exits non-zero",
        flag=True,
    ),
    _Opt(
        "memeval-reanswer",
        "answer (and judge) again from the retrievals stored by an earlier run (default: the "
        "latest) without calling the memory system",
        metavar="RUN",
        const="latest",
    ),
    _Opt(
        "memeval-cache-import",
        "before the run, add the LLM-cache entries of FILE (from --memeval-cache-export) to "
        "the cache folder's LLM cache (repeatable; local entries win)",
        metavar="FILE",
        multiple=True,
    ),
    _Opt(
        "memeval-cache-import-verify",
        "ask the judge again, bypassing the cache, for a seeded random sample of N verdicts "
        "that came from --memeval-cache-import files, and report how many disagree",
        metavar="N",
    ),
    _Opt(
        "memeval-cache-export",
        "after the run, write every LLM-cache entry to FILE (JSON lines) for another machine",
        metavar="FILE",
    ),
    _Opt(
        "memeval-errata",
        "gold-answer errata overlay: a known name (locomo-audit), or PATH to an audit-shaped "
        "JSON file or folder; reports add official, sound-gold and ceiling columns",
        metavar="NAME|PATH",
    ),
    _Opt(
        "memeval-context-budget",
        "at most N tokens (cl100k_base) of memory text handed to the answerer per question, in "
        "rank order; what was cut is recorded",
        metavar="N",
    ),
    _Opt(
        "memeval-baselines",
        "published baselines to show next to the run (names from "
        "pytest_memeval.baselines, 'all', or 'none'; default: a representative few)",
        metavar="NAME[,NAME]",
    ),
)


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("memeval", "AI-agent memory benchmarks (pytest-memeval)")
    for opt in OPTIONS:
        if opt.flag:
            group.addoption(
                f"--{opt.name}", action="store_true", default=None, dest=opt.dest, help=opt.help
            )
            parser.addini(_ini_name(opt), opt.help, type="bool", default=False)
        elif opt.const is not None:
            group.addoption(
                f"--{opt.name}",
                action="store",
                nargs="?",
                const=opt.const,
                default=None,
                dest=opt.dest,
                metavar=opt.metavar,
                help=opt.help,
            )
            parser.addini(_ini_name(opt), opt.help, default=None)
        elif opt.multiple:
            group.addoption(
                f"--{opt.name}",
                action="append",
                default=None,
                dest=opt.dest,
                metavar=opt.metavar,
                help=opt.help,
            )
            parser.addini(_ini_name(opt), opt.help, type="linelist", default=[])
        else:
            group.addoption(
                f"--{opt.name}",
                action="store",
                default=None,
                dest=opt.dest,
                metavar=opt.metavar,
                help=opt.help,
            )
            parser.addini(_ini_name(opt), opt.help, default=None)


#: built-in benchmarks without variants, and the variants of the others (for --memeval-variant)
_NO_VARIANTS = ("demo", "locomo", "locomo-plus", "usermem")
_VARIANTS = (
    "longmemeval (oracle, s, m, or a .json file), beam (100K, 500K, 1M, 10M) and "
    "memoryagentbench (one split: Accurate_Retrieval, Test_Time_Learning, "
    "Long_Range_Understanding, Conflict_Resolution) and longmemeval-v2 (tier: small, medium), "
    "halumem (medium, long)"
)

#: seconds above this are refused (a thread join or socket timeout overflows near 1e308)
MAX_SECONDS = 7 * 24 * 3600.0


def _ini_name(opt: _Opt) -> str:
    """``memeval`` for --memeval, ``memeval_memsys`` for --memsys, ``memeval_limit`` for
    --memeval-limit."""
    if opt.dest == "memeval" or opt.dest.startswith("memeval_"):
        return opt.dest
    return f"memeval_{opt.dest}"


def _raw_value(config: pytest.Config, opt: _Opt) -> tuple[Any, str]:
    """The value and where it came from (for error messages)."""
    value = config.getoption(opt.dest)
    if value is not None:
        return value, f"--{opt.name}"
    ini = config.getini(_ini_name(opt))
    if ini not in (None, "", []) and not (opt.flag and ini is False):
        return ini, f"ini option {_ini_name(opt)}"
    return opt.default, "default"


def _csv(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(part.strip() for part in str(value).split(",") if part.strip())


def _check_judge_alias(named: list[tuple[str, str, str]]) -> None:
    """``judge`` (``judge@LABEL``) names the first judge's metric: without --memeval-judge there is
    none, and a gate or regression on it could only fail."""
    if not named:
        return
    from ..judges import resolve_judge_alias

    for option, text, metric in named:
        if resolve_judge_alias(metric, None) is None:
            raise pytest.UsageError(
                f"{option} {text!r}: {metric!r} names the first judge's metric on the benchmark "
                "(judge_mem0, judge_lme, nugget, ...), and no --memeval-judge is given; add "
                "--memeval-judge=PROVIDER:MODEL or name a metric (f1, ...)"
            )


def _int(value: Any, source: str, *, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(
            f"{source}={value!r}: expected a whole number >= {minimum}, e.g. {source}=10"
        ) from None
    if number < minimum:
        raise pytest.UsageError(
            f"{source}={value!r}: must be >= {minimum}, e.g. {source}={max(minimum, 10)}"
        )
    return number


def _seconds(value: Any, source: str, *, zero: bool = False, example: str = "0.5") -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        number = -1.0
    # NaN fails both comparisons; infinity is no timeout either
    if not (number >= 0 if zero else number > 0) or number == math.inf:
        raise pytest.UsageError(
            f"{source}={value!r}: expected seconds {'>= 0' if zero else '> 0'}, "
            f"e.g. {source}={example}"
        )
    if number > MAX_SECONDS:
        raise pytest.UsageError(
            f"{source}={value!r}: more than a week ({MAX_SECONDS:g} s) is not a useful limit; "
            f"use a realistic value, e.g. {source}={example}, or leave it out"
        )
    return number


def _prices(value: Any, source: str) -> dict[str, dict[str, float]] | None:
    """Read a price table: JSON only, small, numbers only."""
    if not value:
        return None
    import json

    path = Path(str(value)).expanduser()
    fix = 'e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}'
    from ..files import FileTooLarge, NotAFile, read_bounded_text

    try:
        data = json.loads(read_bounded_text(path, 1 << 20))
    except FileTooLarge:
        raise pytest.UsageError(
            f"{source}={value}: larger than 1 MB; expected a price table"
        ) from None
    except NotAFile as exc:
        raise pytest.UsageError(f"{source}={value}: {exc}; {fix}") from None
    except OSError as exc:
        raise pytest.UsageError(f"{source}={value}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise pytest.UsageError(f"{source}={value}: not valid JSON ({exc}); {fix}") from None
    table: dict[str, dict[str, float]] = {}
    if not isinstance(data, dict):
        raise pytest.UsageError(f"{source}={value}: expected a JSON object; {fix}")
    for model, entry in data.items():
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), (int, float)) and not isinstance(entry.get(k), bool)
            for k in ("input", "output")
        ):
            raise pytest.UsageError(
                f"{source}={value}: model {model!r} needs numeric 'input' and 'output' "
                f"(dollars per million tokens); {fix}"
            )
        table[str(model)] = {"input": float(entry["input"]), "output": float(entry["output"])}
    return table


def read_settings(config: pytest.Config) -> Settings:
    raw = {opt.dest: _raw_value(config, opt) for opt in OPTIONS}

    def val(dest: str) -> Any:
        return raw[dest][0]

    def src(dest: str) -> str:
        return raw[dest][1]

    benchmarks = _csv(val("memeval"))
    systems = _csv(val("memsys"))
    if systems and not benchmarks:
        raise pytest.UsageError("--memsys needs a benchmark: add --memeval=demo (or locomo, ...)")
    if benchmarks and not systems:
        raise pytest.UsageError(
            f"--memeval={','.join(benchmarks)} needs a memory system: add --memsys=bm25 "
            "(built-ins: full-context, bm25, embedding, no-memory, oracle, replay:PATH)"
        )
    if len(set(benchmarks)) != len(benchmarks) or len(set(systems)) != len(systems):
        raise pytest.UsageError("--memeval / --memsys: a name is listed twice")

    data = val("memeval_data") or os.environ.get("MEMEVAL_DATA_DIR") or None
    data_dir = Path(str(data)).expanduser() if data else None
    if benchmarks and data_dir is not None and not data_dir.is_dir():
        origin = src("memeval_data") if val("memeval_data") else "MEMEVAL_DATA_DIR"
        raise pytest.UsageError(
            f"{origin}={data}: not a folder. Point it at a folder holding one sub-folder per "
            "benchmark, e.g. DIR/locomo/locomo10.json"
        )

    limit = val("memeval_limit")
    sample = val("memeval_sample")
    top_k_raw = _csv(val("memeval_top_k")) or ("10",)
    top_k = tuple(_int(k, src("memeval_top_k"), minimum=1) for k in top_k_raw)
    if len(set(top_k)) != len(top_k):
        raise pytest.UsageError(f"{src('memeval_top_k')}: a value is listed twice")

    threshold_raw = val("memeval_pass_threshold")
    threshold: float | None = None
    if threshold_raw is not None:
        try:
            threshold = float(threshold_raw)
        except ValueError:
            threshold = -1.0
        if not 0.0 <= threshold <= 1.0:
            raise pytest.UsageError(
                f"{src('memeval_pass_threshold')}={threshold_raw!r}: expected a number in [0, 1]"
            )

    cache = val("memeval_cache_dir")
    cache_dir = Path(str(cache)).expanduser() if cache else config.rootpath / ".memeval-cache"
    metrics = _csv(val("memeval_metrics")) or None
    baselines_raw = val("memeval_baselines")
    baselines = _csv(baselines_raw) if baselines_raw is not None else None
    if baselines and benchmarks:
        from ..analysis.baselines import BASELINES

        known = sorted({b.name for b in BASELINES})
        unknown = [n for n in baselines if n not in known and n not in ("all", "none")]
        if unknown or (len(baselines) > 1 and {"all", "none"} & set(baselines)):
            raise pytest.UsageError(
                f"{src('memeval_baselines')}={baselines_raw}: unknown baseline "
                f"{', '.join(map(repr, unknown)) or '(all/none go alone)'}; use 'all', 'none' or "
                f"names from: {', '.join(known)}"
            )
    variant_raw = val("memeval_variant")
    if variant_raw and benchmarks and set(benchmarks) <= set(_NO_VARIANTS):
        raise pytest.UsageError(
            f"{src('memeval_variant')}={variant_raw}: {', '.join(benchmarks)} has no variants; "
            f"variants exist for {_VARIANTS} (or drop --memeval-variant)"
        )

    def flag(dest: str) -> bool:
        value = val(dest)
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)

    strict = flag("memeval_strict")
    styles = ("mem0", "graded", "longmemeval", "beam-nugget", "usermem")
    style = val("memeval_judge_style")
    if style is not None and str(style) not in styles:
        raise pytest.UsageError(
            f"{src('memeval_judge_style')}={style!r}: expected one of {', '.join(styles)}"
        )
    protocol = str(val("memeval_protocol")).strip() if val("memeval_protocol") else None
    if protocol is not None:  # imported only then: the profiles import the scorers (numpy)
        from ..protocols.profiles import PROFILES
    if protocol is not None and protocol not in PROFILES:
        raise pytest.UsageError(
            f"{src('memeval_protocol')}={protocol!r}: expected one of {', '.join(PROFILES)}"
        )
    if protocol is None and style is None and "locomo-plus" in benchmarks and val("memeval_judge"):
        # LoCoMo-Plus has no reference answers: only its own judge reads its items
        # (docs/scoring.md#locomo-plus)
        protocol = "locomo-plus"
    protocol_source = (
        config.invocation_params.dir / str(val("memeval_protocol_source"))
        if val("memeval_protocol_source")
        else None
    )
    if protocol_source is not None and protocol is None:
        raise pytest.UsageError(
            f"{src('memeval_protocol_source')} needs --memeval-protocol=NAME "
            "(mem0, longmemeval, beam, locomo, locomo-plus, memoryagentbench, halumem)"
        )
    if protocol_source is not None and not protocol_source.is_dir():
        raise pytest.UsageError(
            f"{src('memeval_protocol_source')}={protocol_source}: not a folder; give a checkout "
            "of the protocol's upstream repository"
        )
    judges = _csv(val("memeval_judge"))
    answerer = str(val("memeval_answerer"))
    specs = [(j, src("memeval_judge")) for j in judges]
    if answerer != "extractive":
        specs.append((answerer, src("memeval_answerer")))
    for spec, origin in specs:
        from ..llm.providers import PROVIDERS  # only when an LLM is asked for

        provider, _, model = spec.partition(":")
        if provider not in PROVIDERS or not model:
            raise pytest.UsageError(
                f"{origin}={spec!r}: expected PROVIDER:MODEL with PROVIDER one of "
                f"{', '.join(PROVIDERS)}, e.g. openai:gpt-4o-mini (or --memeval-answerer=extractive)"
            )
    timeout = _seconds(val("memeval_llm_timeout"), src("memeval_llm_timeout"), example="60")

    def many(dest: str) -> list[str]:
        value = val(dest)
        if value is None:
            return []
        return [str(v) for v in (value if isinstance(value, list) else [value])]

    gates = []
    for expr in many("memeval_fail_under"):
        from ..analysis.gates import parse_gate

        try:
            gates.append(parse_gate(expr))
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
    max_drops = []
    for expr in many("memeval_max_drop"):
        from ..analysis.regression import parse_max_drop

        try:
            max_drops.append(parse_max_drop(expr))
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
    if max_drops and not val("memeval_baseline"):
        raise pytest.UsageError("--memeval-max-drop needs --memeval-baseline=PATH to compare with")
    if not judges:
        _check_judge_alias(
            [("--memeval-fail-under", g.text, g.metric) for g in gates]
            + [("--memeval-max-drop", f"{m}:{p:g}", m) for m, p in max_drops]
            + [("--memeval-metrics", m, m) for m in metrics or ()]
        )
    try:
        alpha = float(val("memeval_alpha"))
    except ValueError:
        alpha = -1.0
    if not 0.0 < alpha < 1.0:
        raise pytest.UsageError(
            f"{src('memeval_alpha')}={val('memeval_alpha')!r}: expected a number in (0, 1)"
        )

    def path(dest: str) -> Path | None:
        value = val(dest)
        return Path(str(value)).expanduser() if value else None

    def report_path(dest: str) -> Path | None:
        """A report's path, checked now (before any question runs) on the controller."""
        target = path(dest)
        if target is not None and benchmarks and not hasattr(config, "workerinput"):
            from ..files import report_path_problem

            problem = report_path_problem(target)
            if problem is not None:
                raise pytest.UsageError(f"{src(dest)}={val(dest)}: {problem}")
        return target

    item_timeout: float | None = None
    if val("memeval_timeout") is not None:
        item_timeout = _seconds(val("memeval_timeout"), src("memeval_timeout"), example="30")

    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    scale = scale_settings(
        val("memeval_shard"),
        many("memeval_merge"),
        val("memeval_reanswer"),
        many("memeval_cache_import"),
        val("memeval_cache_export"),
        rejudge=val("memeval_rejudge"),
        resume=val("memeval_resume"),
    )

    calibration = None
    if val("memeval_judge_calibration") or val("memeval_calibration_wrong"):
        from ..run.calibration import CalibrationError, calibration_settings

        try:
            calibration = calibration_settings(
                val("memeval_judge_calibration"),
                val("memeval_calibration_wrong"),
                benchmarks=benchmarks,
                judges=judges,
            )
        except CalibrationError as exc:
            raise pytest.UsageError(str(exc)) from None
    if calibration is None and benchmarks:
        from ..analysis.calibration import is_calibration_metric

        for gate in gates:
            if is_calibration_metric(gate.metric):
                raise pytest.UsageError(
                    f"--memeval-fail-under {gate.text!r}: {gate.metric} is a judge calibration "
                    "figure; add --memeval-judge-calibration=before (or =only)"
                )

    return Settings(
        selection=Selection(
            benchmarks=benchmarks,
            systems=systems,
            data_dir=data_dir,
            variant=str(val("memeval_variant")) if val("memeval_variant") else None,
            limit=_int(limit, src("memeval_limit"), minimum=1) if limit is not None else None,
            sample=_int(sample, src("memeval_sample"), minimum=1) if sample is not None else None,
            seed=_int(val("memeval_seed"), src("memeval_seed"), minimum=0),
            metrics=metrics,
            top_k=top_k,
            context_budget=(
                _int(val("memeval_context_budget"), src("memeval_context_budget"), minimum=1)
                if val("memeval_context_budget") is not None
                else None
            ),
            shard=scale.shard,
            explicit_paths=explicit,
        ),
        run=RunSettings(
            pass_threshold=threshold,
            strict=strict,
            show_wrong=_int(val("memeval_show_wrong"), src("memeval_show_wrong"), minimum=0),
            keep_runs=_int(val("memeval_keep_runs"), src("memeval_keep_runs"), minimum=0),
            timeout=item_timeout,
            resume=str(val("memeval_resume")) if val("memeval_resume") else None,
            rejudge=str(val("memeval_rejudge")) if val("memeval_rejudge") else None,
            reanswer=scale.reanswer,
            merge=scale.merge,
            cache_import=scale.cache_import,
            cache_export=scale.cache_export,
        ),
        llm=LLMSettings(
            answerer=answerer,
            judges=judges,
            judge_style=str(style) if style else None,
            judge_runs=_int(val("memeval_judge_runs"), src("memeval_judge_runs"), minimum=1),
            judge_prompt=str(val("memeval_judge_prompt")) if val("memeval_judge_prompt") else None,
            answer_prompt=(
                str(val("memeval_answer_prompt")) if val("memeval_answer_prompt") else None
            ),
            protocol=protocol,
            protocol_source=protocol_source,
            base_url=str(val("memeval_base_url")) if val("memeval_base_url") else None,
            api_key_env=str(val("memeval_api_key_env")) if val("memeval_api_key_env") else None,
            concurrency=_int(
                val("memeval_llm_concurrency"), src("memeval_llm_concurrency"), minimum=1
            ),
            timeout=timeout,
            max_retries=_int(val("memeval_llm_retries"), src("memeval_llm_retries"), minimum=0),
            backoff=_seconds(val("memeval_llm_backoff"), src("memeval_llm_backoff"), zero=True),
            circuit_breaker=_int(
                val("memeval_llm_circuit_breaker"), src("memeval_llm_circuit_breaker"), minimum=0
            ),
            no_cache=flag("memeval_no_cache"),
            estimate=flag("memeval_estimate"),
            batch=flag("memeval_llm_batch"),
            prices=_prices(val("memeval_prices"), src("memeval_prices")),
            rpm=_int(val("memeval_llm_rpm"), src("memeval_llm_rpm"), minimum=1)
            if val("memeval_llm_rpm") not in (None, "")
            else None,
            tpm=_int(val("memeval_llm_tpm"), src("memeval_llm_tpm"), minimum=1)
            if val("memeval_llm_tpm") not in (None, "")
            else None,
        ),
        reports=ReportSettings(
            json_path=report_path("memeval_json"),
            html_path=report_path("memeval_html"),
            markdown_path=report_path("memeval_markdown"),
            board_path=path("memeval_board"),
            baselines=baselines,
            errata=str(val("memeval_errata")) if val("memeval_errata") else None,
        ),
        checks=CheckSettings(
            gates=tuple(gates),
            save_baseline=report_path("memeval_save_baseline"),
            baseline=path("memeval_baseline"),
            max_drops=tuple(max_drops),
            alpha=alpha,
            calibration=calibration,
        ),
        cache_dir=cache_dir,
        raw={k: v[0] for k, v in raw.items()},
    )


def split_values(values: Sequence[str]) -> list[str]:
    """Comma lists and repeated options, flattened."""
    return [part.strip() for v in values for part in str(v).split(",") if part.strip()]


def scale_settings(
    shard: Any,
    merge: Sequence[str],
    reanswer: Any,
    cache_import: Sequence[str],
    cache_export: Any,
    *,
    rejudge: Any,
    resume: Any,
) -> ScaleSettings:
    """These options, validated (``pytest.UsageError`` with the fix)."""
    parsed = None
    if shard not in (None, ""):
        from ..run.shards import parse_shard

        try:
            parsed = parse_shard(str(shard))
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
    folders = tuple(Path(p).expanduser() for p in split_values(merge))
    if folders:
        clash = [
            name
            for name, value in (
                ("--memeval-shard", parsed),
                ("--memeval-resume", resume),
                ("--memeval-rejudge", rejudge),
                ("--memeval-reanswer", reanswer),
            )
            if value
        ]
        if clash:
            raise pytest.UsageError(
                f"--memeval-merge runs nothing, so it cannot be combined with {clash[0]}; merge "
                "first, then rejudge or reanswer the merged run"
            )
    if reanswer and rejudge:
        raise pytest.UsageError(
            "--memeval-reanswer already judges the new answers again: drop --memeval-rejudge"
        )
    if reanswer and resume:
        raise pytest.UsageError(
            "--memeval-reanswer with --memeval-resume: reanswer makes a new run from a stored "
            "one; give one of them"
        )
    return ScaleSettings(
        shard=parsed,
        merge=folders,
        reanswer=str(reanswer) if reanswer else None,
        cache_import=tuple(Path(p).expanduser() for p in split_values(cache_import)),
        cache_export=Path(str(cache_export)).expanduser() if cache_export else None,
    )


@dataclass(frozen=True)
class ScaleSettings:
    """The scale options, validated (read_settings puts them in their groups)."""

    shard: Shard | None
    merge: tuple[Path, ...]
    reanswer: str | None
    cache_import: tuple[Path, ...]
    cache_export: Path | None
