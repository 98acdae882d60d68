"""Issue 22 point 8: run folders a user can find and bound. The terminal names the run and its
folder; --memeval-keep-runs=N prunes the oldest run folders at session end, never the run being
resumed or re-judged, never from an xdist worker."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_memeval.run import prune_runs

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}
RUN_LINE = re.compile(
    r"^memeval: run (\S+) stored in (\S+) \(continue it with --memeval-resume=\1\)$"
)


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request: pytest.FixtureRequest) -> list[str]:
    return list(MODES[request.param])


def _old_run(runs: Path, name: str, age_s: float) -> Path:
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("", encoding="utf-8")
    _age(folder, age_s)
    return folder


def _age(folder: Path, age_s: float) -> None:
    when = os.path.getmtime(folder) - age_s
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (when, when))


def _run_line(lines: list[str]) -> tuple[str, Path]:
    found = [m for m in map(RUN_LINE.match, lines) if m]
    assert len(found) == 1, "\n".join(lines)
    return found[0].group(1), Path(found[0].group(2))


def test_the_run_folder_is_named_and_old_runs_pruned(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    runs = pytester.path / "cache" / "runs"
    oldest = _old_run(runs, "20200101T000000Z-aaaaaa", 3000)
    older = _old_run(runs, "20200102T000000Z-bbbbbb", 2000)
    newer = _old_run(runs, "20200103T000000Z-cccccc", 1000)
    other = runs / "notes"  # not a run folder name: never touched
    (other / "x").mkdir(parents=True)
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        "--memeval-cache-dir=cache",
        "--memeval-keep-runs=2",
        *mode,
    )
    assert result.ret == 0, result.stdout.str()
    run_id, folder = _run_line(result.stdout.lines)
    assert folder == runs / run_id and (folder / "results.jsonl").is_file()
    result.stdout.fnmatch_lines(["memeval: removed 2 older run folder(s) (--memeval-keep-runs=2 *"])
    assert not oldest.exists() and not older.exists()
    assert newer.is_dir() and other.is_dir()
    assert sorted(p.name for p in runs.iterdir()) == sorted([run_id, newer.name, "notes"])


def test_the_resumed_run_is_never_pruned(pytester: pytest.Pytester, mode: list[str]) -> None:
    args = ["--memeval=demo", "--memsys=bm25", "--memeval-limit=1", "--memeval-cache-dir=cache"]
    first = pytester.runpytest(*args, "-p", "no:xdist")
    assert first.ret == 0, first.stdout.str()
    run_id, folder = _run_line(first.stdout.lines)
    _age(folder, 5000)  # the oldest folder of all
    runs = folder.parent
    later = [_old_run(runs, f"20200101T00000{i}Z-dddddd", 100 * i) for i in range(1, 3)]
    resumed = pytester.runpytest(
        *args, f"--memeval-resume={run_id}", "--memeval-keep-runs=1", *mode
    )
    assert resumed.ret == 0, resumed.stdout.str()
    assert _run_line(resumed.stdout.lines) == (run_id, folder)
    assert folder.is_dir() and (folder / "results.jsonl").stat().st_size > 0
    assert not any(p.exists() for p in later)


def test_keep_runs_zero_keeps_all_and_bad_values_are_usage_errors(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    folders = [_old_run(runs, f"2020010{i}T000000Z-eeeeee", 10 * i) for i in range(1, 4)]
    assert prune_runs(tmp_path, 0) == []
    assert all(p.is_dir() for p in folders)
    assert sorted(prune_runs(tmp_path, 1)) == folders[1:]  # the oldest go, the newest stays
    assert folders[0].is_dir()
    bad = pytester.runpytest("--memeval=demo", "--memsys=bm25", "--memeval-keep-runs=-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--memeval-keep-runs" in bad.stderr.str() and ">= 0" in bad.stderr.str()
