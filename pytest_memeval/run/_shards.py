"""Shards and merging, pytest-free.

``--memeval-shard=I/N`` keeps a deterministic 1/N of the work, grouped by conversation: every
question of a conversation lands in one shard, and conversations are dealt greedily, longest first
(most selected questions; ties by benchmark then conversation id), each onto the shard with the
fewest questions so far (ties: the lowest shard number). The assignment depends only on the
selection, so every machine and every xdist worker computes the same one.

A shard's run folder records its shard and a *fingerprint* of everything that decides its
numbers (:func:`run.fingerprint.run_fingerprint`); :func:`load_shards` reads several run folders for a merge and
refuses shards of different configurations (naming the field), missing shards and duplicated ones.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MemevalError
from ..records import Question, QuestionResult, ResultKey
from ._store import CONFIG_FILE, RESULTS_FILE, scan_results

__all__ = [
    "OUTPUTS_FILE",
    "Shard",
    "ShardSet",
    "assign_shards",
    "fingerprint_difference",
    "load_shards",
    "parse_shard",
    "recorded_bases",
    "shard_questions",
    "write_outputs",
]

#: what each shard's processes reported at the end (ingest counts, LLM cache and tokens)
OUTPUTS_FILE = "outputs.json"
_SHARD_RE = re.compile(r"^\s*(\d{1,9})\s*/\s*(\d{1,9})\s*$")
#: more shards than this is a typo (each shard holds at least one conversation to be useful)
MAX_SHARDS = 10_000
#: config.json files larger than this are not read (they hold options, not results)
_MAX_CONFIG_BYTES = 4 << 20


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based, as written on the command line: ``2/4``)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def to_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}


def parse_shard(value: str, source: str = "--memeval-shard") -> Shard:
    """``"I/N"`` with 1 <= I <= N; a bad value raises MemevalError showing the form."""
    match = _SHARD_RE.match(str(value))
    if match is None:
        raise MemevalError(
            f"{source}={str(value)[:40]!r}: expected I/N (this machine's shard I of N, "
            "1 <= I <= N, at most 9 digits each), "
            f"e.g. {source}=1/4"
        )
    index, count = int(match[1]), int(match[2])
    if count > MAX_SHARDS:
        raise MemevalError(
            f"{source}={value!r}: at most {MAX_SHARDS} shards; split the run into fewer shards"
        )
    if count < 1 or not 1 <= index <= count:
        raise MemevalError(
            f"{source}={value!r}: the shard number must be between 1 and the shard count, "
            f"e.g. {source}=1/{max(count, 1)} ... {source}={max(count, 1)}/{max(count, 1)}"
        )
    return Shard(index, count)


def assign_shards(sizes: Mapping[tuple[str, str], int], count: int) -> dict[tuple[str, str], int]:
    """(benchmark, conversation id) -> shard number (1-based), balancing the question counts:
    longest first onto the lightest shard; ties broken by (benchmark, conversation id) and then by
    the lowest shard number, so the result never depends on dict order or the machine."""
    load = [0] * count
    out: dict[tuple[str, str], int] = {}
    for key, size in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        lightest = min(range(count), key=lambda i: (load[i], i))
        load[lightest] += size
        out[key] = lightest + 1
    return out


def shard_questions(
    selected: Mapping[str, Sequence[Question]], shard: Shard
) -> dict[str, list[Question]]:
    """The questions of ``selected`` (benchmark -> questions) that belong to ``shard``, in order."""
    sizes: dict[tuple[str, str], int] = {}
    for bench, questions in selected.items():
        for q in questions:
            key = (bench, q.conversation_id)
            sizes[key] = sizes.get(key, 0) + 1
    owner = assign_shards(sizes, shard.count)
    return {
        bench: [q for q in questions if owner[(bench, q.conversation_id)] == shard.index]
        for bench, questions in selected.items()
    }


def shard_loads(selected: Mapping[str, Sequence[Question]], count: int) -> list[int]:
    """Questions per shard (shard 1 first): how balanced ``count`` shards are."""
    sizes: dict[tuple[str, str], int] = {}
    for bench, questions in selected.items():
        for q in questions:
            key = (bench, q.conversation_id)
            sizes[key] = sizes.get(key, 0) + 1
    loads = [0] * count
    for key, index in assign_shards(sizes, count).items():
        loads[index - 1] += sizes[key]
    return loads


def fingerprint_difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The fields (dotted paths) where two fingerprints differ, sorted."""
    diffs: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            for key in sorted(set(x) | set(y), key=str):
                walk(x.get(key), y.get(key), f"{path}.{key}" if path else str(key))
        elif x != y:
            diffs.append(path)

    walk(a, b, "")
    return diffs


def _describe(fp: Mapping[str, Any], dotted: str) -> str:
    value: Any = fp
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return json.dumps(value, default=str)


@dataclass
class ShardRun:
    folder: Path
    shard: Shard | None
    fingerprint: dict[str, Any]
    results: dict[ResultKey, QuestionResult]
    outputs: dict[str, Any]


@dataclass
class ShardSet:
    """The run folders of one sharded run, checked: same configuration, every shard once."""

    runs: list[ShardRun]
    fingerprint: dict[str, Any]
    results: dict[ResultKey, QuestionResult] = field(default_factory=dict)

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return [r.outputs for r in self.runs if r.outputs]


def read_run_json(path: Path, what: str) -> Any:
    try:
        if path.stat().st_size > _MAX_CONFIG_BYTES:
            raise MemevalError(f"--memeval-merge: {path}: larger than 4 MB; not a {what}")
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MemevalError(
            f"--memeval-merge: {path}: cannot read it ({exc.strerror}); each RUN_DIR is a run "
            f"folder <cache>/runs/<run-id>/ holding {CONFIG_FILE} and {RESULTS_FILE}"
        ) from None
    except ValueError as exc:
        raise MemevalError(f"--memeval-merge: {path}: not valid JSON ({str(exc)[:200]})") from None
    except RecursionError:
        raise MemevalError(
            f"--memeval-merge: {path}: nested too deeply to be a {what}; restore it from its run"
        ) from None


def recorded_bases(folder: Path) -> dict[str, list[str]]:
    """``--memsys`` value -> the system names a run folder recorded (``system_bases`` of its
    config.json); entries of the wrong type are left out (the merge then refuses the mismatch)."""
    stored = read_run_json(Path(folder) / CONFIG_FILE, "run configuration")
    raw = stored.get("system_bases") if isinstance(stored, dict) else None
    out: dict[str, list[str]] = {}
    for name, bases in (raw or {}).items() if isinstance(raw, dict) else ():
        if isinstance(bases, list) and bases and all(isinstance(b, str) for b in bases):
            out[str(name)] = list(bases)
    return out


def read_shard_run(folder: Path) -> ShardRun:
    folder = Path(folder)
    if not (folder / RESULTS_FILE).is_file() or not (folder / CONFIG_FILE).is_file():
        raise MemevalError(
            f"--memeval-merge: {folder} is not a run folder (it needs {CONFIG_FILE} and "
            f"{RESULTS_FILE}; run folders are <cache>/runs/<run-id>/)"
        )
    config = read_run_json(folder / CONFIG_FILE, "run configuration")
    if not isinstance(config, dict) or not isinstance(config.get("fingerprint"), dict):
        raise MemevalError(
            f"--memeval-merge: {folder / CONFIG_FILE} has no 'fingerprint' (written by an older "
            "pytest-memeval); rerun that shard with this version"
        )
    raw = config.get("shard")
    shard = None
    if raw is not None:
        index = raw.get("index") if isinstance(raw, dict) else None
        count = raw.get("count") if isinstance(raw, dict) else None
        if (
            type(index) is not int
            or type(count) is not int
            or not 1 <= index <= count <= MAX_SHARDS
        ):
            raise MemevalError(
                f"--memeval-merge: {folder / CONFIG_FILE}: malformed 'shard' entry (expected "
                f'{{"index": I, "count": N}} with 1 <= I <= N <= {MAX_SHARDS}); rerun that shard '
                "or restore its config.json"
            )
        shard = Shard(index, count)
    outputs: dict[str, Any] = {}
    if (folder / OUTPUTS_FILE).is_file():
        data = read_run_json(folder / OUTPUTS_FILE, "process report")
        problem = outputs_problem(data)
        if problem is not None:
            raise MemevalError(
                f"--memeval-merge: {folder / OUTPUTS_FILE}: {problem}; it is written by the shard's "
                "run: restore it, or delete it (the merge then counts no ingests or LLM calls "
                "for that shard)"
            )
        outputs = data
    rows, problems = scan_results(folder)
    if problems:
        raise MemevalError(
            f"--memeval-merge: {folder}/{problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
            + "; restore the file from its run, or rerun that shard"
        )
    results = {r.key: r for r in rows}
    return ShardRun(folder, shard, dict(config["fingerprint"]), results, outputs)


def _count(value: object) -> bool:
    return type(value) is int and 0 <= value < 1 << 53


def outputs_problem(data: object) -> str | None:
    """Why an ``outputs.json`` is not of the shape a run writes (the field named), or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for name in ("ingests", "cache"):
        values = data.get(name) or {}
        if not isinstance(values, dict):
            return f"'{name}' is not an object"
        for key, value in values.items():
            if not _count(value):
                return f"{name}.{key} is {str(value)[:40]!r}, not a count"
    off = data.get("cache_off") or []
    if not isinstance(off, list) or not all(isinstance(x, str) for x in off):
        return "'cache_off' is not a list of strings"
    said = data.get("limiter") or []
    if not isinstance(said, list) or not all(isinstance(x, str) for x in said):
        return "'limiter' is not a list of strings"
    for name in ("judge_warnings", "judge_unscored"):
        if not _count(data.get(name, 0)):
            return f"'{name}' is not a count"
    imported = data.get("imported") or {}
    if not isinstance(imported, dict) or not all(
        isinstance(roles, dict) and all(_count(n) for n in roles.values())
        for roles in imported.values()
    ):
        return "'imported' is not an object of counts by role"
    tokens = data.get("tokens") or {}
    if not isinstance(tokens, dict):
        return "'tokens' is not an object"
    for role, models in tokens.items():
        if not isinstance(models, dict):
            return f"tokens.{role} is not an object"
        for label, counters in models.items():
            if not isinstance(counters, dict):
                return f"tokens.{role}.{label} is not an object"
            for key, value in counters.items():
                if not _number(value):
                    return f"tokens.{role}.{label}.{key} is {str(value)[:40]!r}, not a number"
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e15


def load_shards(folders: Iterable[Path]) -> ShardSet:
    """Read and check the run folders of a sharded run.

    Refused, with a message naming the folders and the fix: a field of the fingerprint that
    differs (the first folder is the reference), a shard number given twice, shards of different
    counts, a missing shard, a folder without a shard next to sharded ones, or a result present in
    two shards.
    """
    runs = [read_shard_run(Path(f)) for f in folders]
    if not runs:
        raise MemevalError("--memeval-merge: no run folder given; e.g. --memeval-merge=DIR1,DIR2")
    first = runs[0]
    for other in runs[1:]:
        diffs = fingerprint_difference(first.fingerprint, other.fingerprint)
        if diffs:
            shown = "; ".join(
                f"{d}: {_describe(first.fingerprint, d)} in {first.folder.name} vs "
                f"{_describe(other.fingerprint, d)} in {other.folder.name}"
                for d in diffs[:5]
            )
            raise MemevalError(
                f"--memeval-merge: {other.folder} was run with a different configuration than "
                f"{first.folder} ({shown}); merge only shards of one run (same data, options and "
                "plugin version)"
            )
    sharded = [r for r in runs if r.shard is not None]
    if sharded and len(sharded) != len(runs):
        plain = next(r for r in runs if r.shard is None)
        raise MemevalError(
            f"--memeval-merge: {plain.folder} is not a shard (run without --memeval-shard) but "
            "the other folders are; merge the shards of one sharded run"
        )
    if sharded:
        counts = {r.shard.count for r in sharded if r.shard is not None}
        if len(counts) > 1:
            raise MemevalError(
                "--memeval-merge: the folders come from runs with different shard counts ("
                + ", ".join(f"{r.folder.name}: {r.shard}" for r in sharded)
                + "); merge the N shards of one --memeval-shard=I/N run"
            )
        count = counts.pop()
        seen: dict[int, Path] = {}
        for r in sharded:
            assert r.shard is not None
            if r.shard.index in seen:
                raise MemevalError(
                    f"--memeval-merge: shard {r.shard} is given twice ({seen[r.shard.index]} and "
                    f"{r.folder}); pass each shard's run folder once"
                )
            seen[r.shard.index] = r.folder
        missing = [i for i in range(1, count + 1) if i not in seen]
        if missing:
            raise MemevalError(
                "--memeval-merge: missing shard(s) "
                + ", ".join(f"{i}/{count}" for i in missing)
                + f" (given: {', '.join(f'{i}/{count}' for i in sorted(seen))}); add their run "
                "folders (or rerun those shards)"
            )
    merged = ShardSet(runs=runs, fingerprint=first.fingerprint)
    owner: dict[ResultKey, Path] = {}
    for r in runs:
        for key, result in r.results.items():
            if key in owner:
                raise MemevalError(
                    f"--memeval-merge: {'/'.join(key)} has a result in both {owner[key]} and "
                    f"{r.folder}; shards never share a question, so one folder is given twice "
                    "or comes from another run"
                )
            owner[key] = r.folder
            merged.results[key] = result
    return merged


def write_outputs(folder: Path, data: dict[str, Any]) -> None:
    """What the processes of a run reported (ingests, LLM cache, tokens), next to its results."""
    tmp = folder / f".{OUTPUTS_FILE}.tmp"
    try:
        tmp.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
        os.replace(tmp, folder / OUTPUTS_FILE)
    except OSError:
        pass  # the report is what matters; a merge then counts no ingests for this shard
