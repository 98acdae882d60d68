"""Command-line options, declared once (``OPTIONS``, in ``option_table.py``), read once into the
grouped ``run.settings.Settings`` (pytest glue); one value's checks are in ``option_values.py``.

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
    from ..run import ContractLimits, Shard

from ..run import CheckSettings, LLMSettings, ReportSettings, RunSettings, Selection, Settings
from ._option_register import addoptions
from ._option_table import OPTIONS
from ._option_values import (
    _NO_VARIANTS,
    _VARIANTS,
    _check_judge_alias,
    _csv,
    _int,
    _limiter,
    _prices,
    _raw_value,
    _seconds,
    split_values,
)

__all__ = ["OPTIONS", "addoptions", "read_settings", "split_values"]


def read_settings(config: pytest.Config) -> Settings:
    raw = {opt.dest: _raw_value(config, opt) for opt in OPTIONS}

    def val(dest: str) -> Any:
        return raw[dest][0]

    def src(dest: str) -> str:
        return raw[dest][1]

    benchmarks = _csv(val("memeval"))
    systems = _csv(val("memsys"))
    contract = _contract_limits(config, val, src, benchmarks, systems)
    if systems and not benchmarks and contract is None:
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
    baselines_raw = val("memeval_published_baselines")
    baselines = _csv(baselines_raw) if baselines_raw is not None else None
    if baselines and benchmarks:
        from ..analysis import BASELINES

        known = sorted({b.name for b in BASELINES})
        unknown = [n for n in baselines if n not in known and n not in ("all", "none")]
        if unknown or (len(baselines) > 1 and {"all", "none"} & set(baselines)):
            raise pytest.UsageError(
                f"{src('memeval_published_baselines')}={baselines_raw}: unknown baseline "
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
        from ..protocols import PROFILES
    if protocol is not None and protocol not in PROFILES:
        raise pytest.UsageError(
            f"{src('memeval_protocol')}={protocol!r}: expected one of {', '.join(PROFILES)}"
        )
    if protocol is None and style is None and val("memeval_judge"):
        # a suite whose items only its own protocol's judge reads (the registry's
        # SUITE_DEFAULT_PROTOCOLS, first found in its order)
        from ..benchmarks import SUITE_DEFAULT_PROTOCOLS

        protocol = next(
            (p for suite, p in SUITE_DEFAULT_PROTOCOLS.items() if suite in benchmarks), None
        )
    protocol_source = (
        config.invocation_params.dir / str(val("memeval_protocol_source"))
        if val("memeval_protocol_source")
        else None
    )
    if protocol_source is not None and protocol is None:
        raise pytest.UsageError(
            f"{src('memeval_protocol_source')} needs --memeval-protocol=NAME "
            "(mem0, longmemeval, beam, locomo, locomo-plus, memoryagentbench, halumem, "
            "longmemeval-v2)"
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
        from ..llm import PROVIDERS

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
        from ..analysis import parse_gate

        try:
            gates.append(parse_gate(expr))
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
    max_drops = []
    for expr in many("memeval_max_drop"):
        from ..analysis import parse_max_drop

        try:
            max_drops.append(parse_max_drop(expr))
        except MemevalError as exc:
            raise pytest.UsageError(str(exc)) from None
    if max_drops and not val("memeval_baseline"):
        raise pytest.UsageError("--memeval-max-drop needs --memeval-baseline=PATH to compare with")
    if not judges:
        _check_judge_alias(
            [("--memeval-fail-under", g.text, g.metric) for g in gates]
            + [("--memeval-max-drop", f"{m}:{p:g}", m.rpartition(".")[2]) for m, p in max_drops]
            + [("--memeval-metrics", m, m) for m in metrics or ()]
        )
    health_text = str(val("memeval_health_max_rise") or "10").strip()
    health_max_rise: float | None = None
    if health_text.lower() != "off":
        try:
            health_points = float(health_text.removesuffix("%"))
        except ValueError:
            health_points = -1.0
        if not (math.isfinite(health_points) and 0.0 <= health_points <= 100.0):
            raise pytest.UsageError(
                f"{src('memeval_health_max_rise')}={health_text!r}: expected points between 0 "
                "and 100 (10 = the share of unhealthy questions may rise by 10 points) or off"
            )
        health_max_rise = health_points / 100.0
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
            from .._files import report_path_problem

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
        from ..run import CalibrationError, calibration_settings

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
        from ..analysis import is_calibration_metric

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
            accept_unpinned=flag("memeval_accept_unpinned"),
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
            max_repeated_errors=_int(
                val("memeval_max_repeated_errors"), src("memeval_max_repeated_errors"), minimum=0
            ),
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
            ingest_ahead=_int(val("memeval_ingest_ahead"), src("memeval_ingest_ahead"), minimum=0),
            timeout=timeout,
            max_retries=_int(val("memeval_llm_retries"), src("memeval_llm_retries"), minimum=0),
            backoff=_seconds(val("memeval_llm_backoff"), src("memeval_llm_backoff"), zero=True),
            circuit_breaker=_int(
                val("memeval_llm_circuit_breaker"), src("memeval_llm_circuit_breaker"), minimum=0
            ),
            no_cache=flag("memeval_no_cache"),
            estimate=flag("memeval_estimate"),
            batch=flag("memeval_llm_batch"),
            batch_wait=_seconds(
                val("memeval_llm_batch_wait"), src("memeval_llm_batch_wait"), example="3600"
            ),
            prices=_prices(val("memeval_prices"), src("memeval_prices")),
            rpm=_int(val("memeval_llm_rpm"), src("memeval_llm_rpm"), minimum=1)
            if val("memeval_llm_rpm") not in (None, "")
            else None,
            tpm=_int(val("memeval_llm_tpm"), src("memeval_llm_tpm"), minimum=1)
            if val("memeval_llm_tpm") not in (None, "")
            else None,
            limiter=_limiter(val("memeval_llm_limiter"), src("memeval_llm_limiter")),
            limiter_wait=_seconds(
                val("memeval_llm_limiter_wait"), src("memeval_llm_limiter_wait"), example="600"
            ),
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
            health_max_rise=health_max_rise,
            calibration=calibration,
        ),
        cache_dir=cache_dir,
        raw={k: v[0] for k, v in raw.items()},
        contract=contract,
    )


def _contract_limits(
    config: pytest.Config,
    val: Any,
    src: Any,
    benchmarks: Sequence[str],
    systems: Sequence[str],
) -> ContractLimits | None:
    """--memeval-contract's limits (None without it): it checks ``--memsys`` alone."""
    value = val("memeval_contract")
    on = (
        value.strip().lower() in ("1", "true", "yes", "on")
        if isinstance(value, str)
        else bool(value)
    )
    if not on:
        return None
    if benchmarks:
        raise pytest.UsageError(
            f"--memeval-contract checks the memory system alone: drop --memeval="
            f"{','.join(benchmarks)} (or drop --memeval-contract to run the benchmark)"
        )
    if not systems:
        raise pytest.UsageError(
            "--memeval-contract needs the system to check: add --memsys=NAME (a conftest "
            "fixture, an entry point, package.module:factory, http:URL, mcp:COMMAND or a built-in)"
        )
    from ..run import DEFAULT_SCALE_TIMEOUT, ContractLimits

    timeout = (
        _seconds(val("memeval_timeout"), src("memeval_timeout"), example="30")
        if val("memeval_timeout") is not None
        else None
    )
    memory = _int(val("memeval_contract_memory"), src("memeval_contract_memory"), minimum=1)
    return ContractLimits(
        timeout=timeout,
        scale_timeout=timeout if timeout is not None else DEFAULT_SCALE_TIMEOUT,
        memory_mib=memory,
    )


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
        from ..run import parse_shard

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
