"""One option value read and checked: where it came from, and the number, duration, list and
price parsers ``options.read_settings`` uses (pytest glue)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._option_register import alias_dest, ini_name

if TYPE_CHECKING:
    from ._option_table import _Opt


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


class MemevalDeprecationWarning(pytest.PytestWarning, DeprecationWarning):
    """An option or ini key given in a deprecated spelling (it still works)."""


def _raw_value(config: pytest.Config, opt: _Opt) -> tuple[Any, str]:
    """The value and where it came from (for error messages). A deprecated spelling
    (``opt.alias``) counts when the current one is not given, with one warning naming it."""
    value = config.getoption(opt.dest)
    if value is not None:
        return value, f"--{opt.name}"
    old_value = config.getoption(alias_dest(opt)) if opt.alias is not None else None
    if old_value is not None:
        _deprecated(config, f"--{opt.alias}", f"--{opt.name}")
        return old_value, f"--{opt.alias}"
    for key in (ini_name(opt), ini_name(opt.alias) if opt.alias is not None else None):
        ini = config.getini(key) if key is not None else None
        if ini not in (None, "", []) and not (opt.flag and ini is False):
            if key != ini_name(opt):
                _deprecated(config, f"ini option {key}", f"ini option {ini_name(opt)}")
            return ini, f"ini option {key}"
    return opt.default, "default"


def _deprecated(config: pytest.Config, old: str, new: str) -> None:
    """One warning per session (the controller's; an xdist worker reads the same options)."""
    if not hasattr(config, "workerinput"):
        message = f"{old} is deprecated: use {new} (same values; the old spelling still works)"
        config.issue_config_time_warning(MemevalDeprecationWarning(message), stacklevel=2)


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


def _limiter(value: Any, source: str) -> str | None:
    """--memeval-llm-limiter: None for the machine-local file limiter (``file``, the default), or
    a redis:// (rediss://, unix://) URL."""
    text = str(value or "").strip()
    if text in ("", "file"):
        return None  # the default: an idle run never imports the LLM package for it
    from ..llm import REDIS_SCHEMES, redis_label

    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme not in REDIS_SCHEMES:
        raise pytest.UsageError(
            f"{source}={redis_label(text)!r}: expected file (the default: one machine) or "
            f"redis://HOST:PORT/DB (every host), e.g. {source}=redis://127.0.0.1:6379/0"
        )
    return text  # the redis package is needed only by a run that paces LLM calls (runtime)


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


def _price(value: int | float) -> float | None:
    """A price as a float: None for NaN, an infinity (JSON's NaN / Infinity, or an integer too
    large for a float) or a negative number."""
    try:
        price = float(value)
    except OverflowError:
        return None
    return price if math.isfinite(price) and price >= 0 else None


def _prices(value: Any, source: str) -> dict[str, dict[str, float]] | None:
    """Read a price table: JSON only, small, numbers only."""
    if not value:
        return None
    import json

    path = Path(str(value)).expanduser()
    fix = 'e.g. {"gpt-4o-mini": {"input": 0.15, "output": 0.6}}'
    from .._files import FileTooLarge, NotAFile, read_bounded_text

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
    except RecursionError:
        raise pytest.UsageError(
            f"{source}={value}: nested too deep to be a price table; {fix}"
        ) from None
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
        prices: dict[str, float] = {}
        for k in ("input", "output"):
            price = _price(entry[k])
            if price is None:
                raise pytest.UsageError(
                    f"{source}={value}: model {model!r} {k!r} is {repr(entry[k])[:40]}; a price is a "
                    f"finite number >= 0 (dollars per million tokens); {fix}"
                )
            prices[k] = price
        table[str(model)] = prices
    return table


def split_values(values: Sequence[str]) -> list[str]:
    """Comma lists and repeated options, flattened."""
    return [part.strip() for v in values for part in str(v).split(",") if part.strip()]
