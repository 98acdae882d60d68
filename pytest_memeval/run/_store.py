"""Results store, pytest-free: one folder per session under ``<cache>/runs/``, holding the
configuration and one JSON line per finished question, appended as soon as the result arrives.

A crash, SIGKILL or Ctrl-C loses nothing that was appended: each line is written with a single
``os.write`` on an ``O_APPEND`` descriptor (the kernel keeps it even if the process dies right
after). A truncated last line (the process died mid-write) is ignored on reading.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import secrets
import shutil
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import MemevalError
from ..records import QuestionResult, ResultKey

__all__ = [
    "RESULTS_FILE",
    "RunStore",
    "check_resume_config",
    "config_mismatch",
    "find_run",
    "prune_runs",
    "read_results",
    "row_problem",
    "scan_results",
]

RESULTS_FILE = "results.jsonl"
CONFIG_FILE = "config.json"
_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,100}$")
#: the folders :func:`new_run_id` names: the only ones --memeval-keep-runs ever deletes
_GENERATED_RUN = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")


def _runs_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / "runs"


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def find_run(cache_dir: Path, name: str | None, option: str = "--memeval-resume") -> Path:
    """The folder of run ``name`` (a run id), or of the latest run when ``name`` is None/"latest".
    Names are checked so a value like ``../x`` can never leave the runs folder."""
    runs = _runs_dir(cache_dir)
    if name in (None, "", "latest"):
        candidates = sorted(
            (p for p in runs.glob("*") if (p / RESULTS_FILE).is_file()),
            key=lambda p: (p / RESULTS_FILE).stat().st_mtime,
        )
        if not candidates:
            raise MemevalError(
                f"{option}: no earlier run under {runs}; run once without it (with the same "
                "--memeval-cache-dir) first"
            )
        return candidates[-1]
    assert name is not None
    if not _RUN_NAME.match(name):
        raise MemevalError(
            f"{option}={name!r}: not a run id (letters, digits, '.', '_', '-'); see the "
            f"folders under {runs}"
        )
    folder = runs / name
    if not (folder / RESULTS_FILE).is_file():
        available = ", ".join(sorted(p.name for p in runs.glob("*"))[-5:]) or "none"
        raise MemevalError(f"{option}={name}: no such run under {runs} (latest: {available})")
    return folder


def _last_used(folder: Path) -> float:
    """When a run folder was last written (its results file: a resumed run is recent again)."""
    for path in (folder / RESULTS_FILE, folder / CONFIG_FILE, folder):
        try:
            return path.stat().st_mtime
        except OSError:
            continue
    return 0.0


def prune_runs(cache_dir: Path, keep: int, protect: Collection[Path] = ()) -> list[Path]:
    """Delete the least recently written run folders under ``<cache_dir>/runs`` beyond the newest
    ``keep`` (0: keep all). Folders in ``protect`` (the run being written, resumed or re-judged)
    are never deleted and count among the kept. Only folders named as the plugin names runs
    (``20261203T105020Z-278b0c``) are touched; one that cannot be deleted is left. Returns the
    deleted folders."""
    if keep <= 0:
        return []
    runs = _runs_dir(cache_dir)
    try:
        folders = [p for p in runs.iterdir() if p.is_dir() and _GENERATED_RUN.match(p.name)]
    except OSError:
        return []
    kept = {p.resolve() for p in protect}
    by_age = sorted(folders, key=_last_used, reverse=True)  # newest first
    removed: list[Path] = []
    budget = keep - sum(1 for p in folders if p.resolve() in kept)
    for folder in by_age:
        if folder.resolve() in kept:
            continue
        if budget > 0:
            budget -= 1
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


def read_results(folder: Path) -> Iterator[QuestionResult]:
    """Every complete, well-formed line of a run's results file, in order (a later line for the
    same :attr:`QuestionResult.key` supersedes an earlier one); malformed lines are skipped
    (:func:`scan_results` names them)."""
    yield from scan_results(folder)[0]


def scan_results(folder: Path) -> tuple[list[QuestionResult], list[str]]:
    """(the well-formed results, one line per malformed row: ``results.jsonl line N: why``).
    A last line without its newline (the process died mid-write) is skipped silently; any other
    line that is not a result of the stored shape is named, never raised: a run folder may come
    from another machine."""
    path = folder / RESULTS_FILE
    try:
        raw = path.read_bytes()
    except OSError:
        return [], []
    lines = raw.split(b"\n")
    torn = not raw.endswith(b"\n")
    out: list[QuestionResult] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            if not (torn and number == len(lines)):
                problems.append(f"{RESULTS_FILE} line {number}: not a JSON object")
            continue
        problem = row_problem(data)
        if problem is not None:
            problems.append(f"{RESULTS_FILE} line {number}: {problem}")
            continue
        try:
            out.append(QuestionResult.from_dict(data))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"{RESULTS_FILE} line {number}: {type(exc).__name__}")
    return out, problems


def _number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def row_problem(data: object) -> str | None:
    """Why a stored results line is not of the shape :meth:`QuestionResult.to_dict` writes (the
    field named), or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for name in ("id", "benchmark", "system"):
        if not isinstance(data.get(name), str) or not data[name]:
            return f"'{name}' is not a non-empty string"
    for name in ("flow", "conversation", "cluster", "category", "question", "status", "nodeid"):
        if not isinstance(data.get(name, ""), str):
            return f"'{name}' is not a string"
    for name in ("prediction", "error"):
        if not isinstance(data.get(name), str | None):
            return f"'{name}' is not a string or null"
    for name in ("scores", "latency"):
        values = data.get(name) or {}
        if not isinstance(values, dict):
            return f"'{name}' is not an object"
        for key, value in values.items():
            if not _number(value) or (name == "latency" and value is None):
                return f"{name}.{key} is {str(value)[:40]!r}, not a number"
    if not isinstance(data.get("details") or {}, dict):
        return "'details' is not an object"
    pending = data.get("pending") or []
    if not isinstance(pending, list):
        return "'pending' is not a list"
    for i, call in enumerate(pending):
        if not isinstance(call, dict) or not isinstance(call.get("keys", []), list):
            return f"pending[{i}] is not a pending call with a list of keys"
    memories = data.get("memories") or []
    if not isinstance(memories, list):
        return "'memories' is not a list"
    for i, memory in enumerate(memories):
        if not isinstance(memory, dict) or not isinstance(memory.get("text", ""), str):
            return f"memories[{i}] is not a memory object with a text"
        if not _number(memory.get("score")):
            return f"memories[{i}].score is {str(memory.get('score'))[:40]!r}, not a number"
        for name in ("id", "date", "speaker"):
            if not isinstance(memory.get(name), str | int | None) or isinstance(
                memory.get(name), bool
            ):
                return f"memories[{i}].{name} is not a string"
        ids = memory.get("source_ids") or []
        if not isinstance(ids, list) or not all(isinstance(x, str | int) for x in ids):
            return f"memories[{i}].source_ids is not a list of ids"
    return None


#: the key of config.json holding the settings that change the numbers of a run
NUMBERS_KEY = "numbers"
#: in those settings: how judge scores are named, when a judge ran ("per style": judge_mem0,
#: judge_graded, ...; docs/scoring.md#metric-names). A run folder written before the names were
#: per style lacks the key and holds scores named ``judge``, so it cannot be resumed into a run
#: that writes the new names.
JUDGE_NAMES_KEY = "judge metric names"
JUDGE_NAMES = "per style"


def config_mismatch(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``option: stored -> current`` for every number-changing option whose value differs (both
    mappings as written by ``Settings.numbers()``; JSON round-trips tuples to lists, so values
    are compared in their JSON form)."""

    def plain(value: object) -> str:
        return json.dumps(value, sort_keys=True, default=str)

    out = []
    for option in sorted(set(stored) | set(current)):
        before, now = stored.get(option), current.get(option)
        if plain(before) != plain(now):
            out.append(f"{option}: {plain(before)} -> {plain(now)}")
    return out


def check_resume_config(folder: Path, current: Mapping[str, Any]) -> None:
    """Refuse to resume run ``folder`` under settings that change its numbers: its stored results
    would be reported as if computed with the new ones."""
    config = read_config(folder)
    stored = config.get(NUMBERS_KEY) if config is not None else None
    if not isinstance(stored, dict):
        raise MemevalError(
            f"--memeval-resume: run {folder.name} has no readable {CONFIG_FILE} with its "
            f"settings ({folder / CONFIG_FILE}), so its results cannot be checked against this "
            "run's options; start a new run (without --memeval-resume)"
        )
    differing = config_mismatch(stored, current)
    if current.get(JUDGE_NAMES_KEY) is not None and stored.get(JUDGE_NAMES_KEY) is None:
        if any(o.startswith("--memeval-judge:") for o in differing):
            pass  # the judges differ: the general message below says so
        else:
            raise MemevalError(
                f"--memeval-resume: run {folder.name} was written before each judge style had its "
                "own metric name (docs/scoring.md#metric-names): its stored judge scores are named "
                "'judge' and would sit beside this run's per-style names. Start a new run "
                "(without --memeval-resume); its LLM calls are answered from the cache"
            )
    if differing:
        raise MemevalError(
            f"--memeval-resume: run {folder.name} was made with other settings, so its stored "
            f"results do not match this configuration ({'; '.join(differing)}). Resume with the "
            "run's own options, or start a new run without --memeval-resume"
        )


def read_config(folder: Path) -> dict[str, Any] | None:
    """A run's config.json, or None when it is missing or unreadable."""
    try:
        raw = (folder / CONFIG_FILE).read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


class RunStore:
    """Appends results of one session to ``<cache>/runs/<run_id>/results.jsonl``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / RESULTS_FILE
        self._fd: int | None = None

    @classmethod
    def create(cls, cache_dir: Path, run_id: str | None = None) -> RunStore:
        return cls(_runs_dir(cache_dir) / (run_id or new_run_id()))

    @property
    def run_id(self) -> str:
        return self.folder.name

    def write_config(self, config: Mapping[str, Any]) -> None:
        tmp = self.folder / f".{CONFIG_FILE}.tmp"
        tmp.write_text(json.dumps(config, indent=1, default=str), encoding="utf-8")
        os.replace(tmp, self.folder / CONFIG_FILE)

    def repair_torn_tail(self) -> bool:
        """Before appending to an existing file: a last line without its newline (the process died
        mid-write) is cut off, so the next append starts on a fresh line instead of gluing onto
        it (which would lose both). The torn question is then simply missing and recomputed once.
        True when something was cut."""
        try:
            with open(self.path, "rb+") as fh:
                size = fh.seek(0, os.SEEK_END)
                if size == 0:
                    return False
                fh.seek(size - 1)
                if fh.read(1) == b"\n":
                    return False
                end = size
                chunk = 1 << 16
                while end > 0:
                    start = max(0, end - chunk)
                    fh.seek(start)
                    block = fh.read(end - start)
                    at = block.rfind(b"\n")
                    if at >= 0:
                        fh.truncate(start + at + 1)
                        return True
                    end = start
                fh.truncate(0)
                return True
        except FileNotFoundError:
            return False

    def append(self, result: QuestionResult) -> None:
        line = (json.dumps(result.to_dict(), default=str, allow_nan=False) + "\n").encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(self._fd, line)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def stored(self) -> dict[ResultKey, QuestionResult]:
        """The results stored so far, by (benchmark, system, flow, question id); a later line for
        the same key wins (a question retried after an error)."""
        return {r.key: r for r in read_results(self.folder)}
