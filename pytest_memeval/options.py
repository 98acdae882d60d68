"""Command-line options and their resolution into one immutable ``Settings`` value (pytest glue).

Every option is also settable in the ini file as ``memeval_<name>``; precedence is
command line > environment (where one is documented) > ini > default. Validation errors are
``pytest.UsageError`` naming the option, where the bad value came from, and the fix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = ["OPTIONS", "Settings", "addoptions", "read_settings"]


@dataclass(frozen=True)
class _Opt:
    name: str  # without the leading "--"; ini name is name with "-" -> "_"
    help: str
    default: str | None = None
    flag: bool = False
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


OPTIONS: tuple[_Opt, ...] = (
    _Opt(
        "memeval",
        "benchmark(s) to run: demo, locomo, longmemeval, beam, usermem (comma list)",
        metavar="BENCH[,BENCH]",
    ),
    _Opt(
        "memsys",
        "memory system(s) under test: conftest fixture, entry point, built-in "
        "(full-context, bm25, no-memory), replay:PATH, or package.module:factory (comma list)",
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
        "metrics to compute and show (default: the benchmark's offline metrics)",
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
    _Opt("memeval-strict", "report WRONG answers as test failures", flag=True),
    _Opt(
        "memeval-show-wrong",
        "how many WRONG answers to detail in the terminal summary (default 5; all with -v)",
        default="5",
        metavar="N",
    ),
    _Opt(
        "memeval-baselines",
        "published baselines to show next to the run (names from "
        "pytest_memeval.baselines, 'all', or 'none'; default: a representative few)",
        metavar="NAME[,NAME]",
    ),
)


@dataclass(frozen=True)
class Settings:
    benchmarks: tuple[str, ...]
    systems: tuple[str, ...]
    data_dir: Path | None
    variant: str | None
    limit: int | None
    sample: int | None
    seed: int
    metrics: tuple[str, ...] | None
    answerer: str
    top_k: tuple[int, ...]
    pass_threshold: float | None
    cache_dir: Path
    json_path: Path | None
    strict: bool
    show_wrong: int
    baselines: tuple[str, ...] | None
    explicit_paths: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.benchmarks)

    def system_labels(self, system: str) -> list[tuple[str, int]]:
        """(label, k) per top-k variant: ``bm25`` for one k, ``bm25@10`` ... for several."""
        if len(self.top_k) == 1:
            return [(system, self.top_k[0])]
        return [(f"{system}@{k}", k) for k in self.top_k]


def addoptions(parser: pytest.Parser) -> None:
    group = parser.getgroup("memeval", "AI-agent memory benchmarks (pytest-memeval)")
    for opt in OPTIONS:
        if opt.flag:
            group.addoption(
                f"--{opt.name}", action="store_true", default=None, dest=opt.dest, help=opt.help
            )
            parser.addini(_ini_name(opt), opt.help, type="bool", default=False)
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


def _int(value: Any, source: str, *, minimum: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise pytest.UsageError(
            f"{source}={value!r}: expected a whole number >= {minimum}, e.g. {source}=10"
        ) from None
    if number < minimum:
        raise pytest.UsageError(f"{source}={value!r}: must be >= {minimum}")
    return number


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
            "(built-ins: full-context, bm25, no-memory, replay:PATH)"
        )
    if len(set(benchmarks)) != len(benchmarks) or len(set(systems)) != len(systems):
        raise pytest.UsageError("--memeval / --memsys: a name is listed twice")

    data = val("memeval_data") or os.environ.get("MEMEVAL_DATA_DIR") or None
    data_dir = Path(str(data)).expanduser() if data else None
    if data_dir is not None and not data_dir.is_dir():
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
    json_path = Path(str(val("memeval_json"))) if val("memeval_json") else None
    metrics = _csv(val("memeval_metrics")) or None
    baselines_raw = val("memeval_baselines")
    baselines = _csv(baselines_raw) if baselines_raw is not None else None

    strict_value = val("memeval_strict")
    strict = (
        bool(strict_value)
        if not isinstance(strict_value, str)
        else strict_value.lower() in ("1", "true", "yes", "on")
    )
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS

    return Settings(
        benchmarks=benchmarks,
        systems=systems,
        data_dir=data_dir,
        variant=str(val("memeval_variant")) if val("memeval_variant") else None,
        limit=_int(limit, src("memeval_limit"), minimum=1) if limit is not None else None,
        sample=_int(sample, src("memeval_sample"), minimum=1) if sample is not None else None,
        seed=_int(val("memeval_seed"), src("memeval_seed"), minimum=0),
        metrics=metrics,
        answerer=str(val("memeval_answerer")),
        top_k=top_k,
        pass_threshold=threshold,
        cache_dir=cache_dir,
        json_path=json_path,
        strict=strict,
        show_wrong=_int(val("memeval_show_wrong"), src("memeval_show_wrong"), minimum=0),
        baselines=baselines,
        explicit_paths=explicit,
        raw={k: v[0] for k, v in raw.items()},
    )
