"""Issue 17, round two: resume only under the settings that made the stored numbers, a finished
run resumes to exit 0, a torn results line is repaired once; report paths are checked at
configuration time and a writer failing at the end stops nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import read_json
from fakes import COUNTING_CONFTEST as COUNTING

from pytest_memeval.errors import MemevalError
from pytest_memeval.run._settings import Settings
from pytest_memeval.run._store import (
    CONFIG_FILE,
    JUDGE_NAMES_KEY,
    NUMBERS_KEY,
    RESULTS_FILE,
    RunStore,
    check_resume_config,
    config_mismatch,
)

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])

# the counting conftest system of the resume tests (its MEMEVAL_SLOW switch stays off here)


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--memeval=demo",
        "--memsys=counting",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "-p",
        "no:cacheprovider",
        *args,
    )


def _answered(path: Path) -> list[str]:
    log = path / "answered.log"
    return log.read_text().split() if log.exists() else []


def _results_file(pytester: pytest.Pytester) -> Path:
    (run,) = list((pytester.path / "cache" / "runs").iterdir())
    return run / RESULTS_FILE


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        (["--memeval-limit=2"], ["--memeval-limit=3"], "--memeval-limit: 2 -> 3"),
        ([], ["--memeval-top-k=5"], "--memeval-top-k: [10] -> [5]"),
        ([], ["--memeval-pass-threshold=0.9"], "--memeval-pass-threshold: null -> 0.9"),
        (["--memeval-sample=1"], ["--memeval-sample=1", "--memeval-seed=4"], "--memeval-seed"),
        ([], ["--memeval-metrics=f1"], "--memeval-metrics"),
    ],
    ids=["limit", "top-k", "threshold", "seed", "metrics"],
)
def test_resume_with_other_numbers_is_a_usage_error(
    pytester: pytest.Pytester, first: list[str], second: list[str], named: str
) -> None:
    pytester.makeconftest(COUNTING)
    assert _run(pytester, *first).ret == 0
    result = _run(pytester, "--memeval-resume", *second)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--memeval-resume: run " in err and "was made with other settings" in err, err
    assert named in err and "start a new run without --memeval-resume" in err
    assert "INTERNALERROR" not in err


def test_resume_with_same_numbers_and_other_reports_is_fine(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(COUNTING)
    assert _run(pytester, "--memeval-limit=2").ret == 0
    out = pytester.path / "r.json"
    result = _run(pytester, "--memeval-resume", "--memeval-limit=2", f"--memeval-json={out}")
    assert result.ret == 0, result.stdout.str()
    assert len(read_json(out)["runs"][0]["questions"]) == 4


@MODES
def test_resuming_a_finished_run_exits_0_and_reports(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    pytester.makeconftest(COUNTING)
    assert _run(pytester, *mode).ret == 0
    answered = len(_answered(pytester.path))
    out = pytester.path / "r.json"
    result = _run(pytester, "--memeval-resume", f"--memeval-json={out}", *mode)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert len(_answered(pytester.path)) == answered  # nothing recomputed
    assert len(read_json(out)["runs"][0]["questions"]) == 15
    result.stdout.fnmatch_lines(["*memeval summary*"])


def test_torn_results_line_is_recomputed_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(COUNTING)
    assert _run(pytester).ret == 0
    path = _results_file(pytester)
    lines = path.read_bytes().splitlines(keepends=True)
    assert len(lines) == 15
    torn = json.loads(lines[-1])["id"]
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # died mid-write: no newline
    (pytester.path / "answered.log").unlink()
    out = pytester.path / "r.json"
    assert _run(pytester, "--memeval-resume", f"--memeval-json={out}").ret == 0
    assert _answered(pytester.path) == [torn]  # only the torn question ran again
    assert len(read_json(out)["runs"][0]["questions"]) == 15
    data = path.read_bytes()
    assert data.endswith(b"\n") and len(data.splitlines()) == 15
    assert all(json.loads(line) for line in data.splitlines())  # nothing glued, nothing torn
    assert _run(pytester, "--memeval-resume").ret == 0
    assert _answered(pytester.path) == [torn]  # not again on a later resume


def test_repair_torn_tail(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "r")
    assert store.repair_torn_tail() is False  # no file yet
    store.path.write_bytes(b'{"a": 1}\n{"b": ')
    assert store.repair_torn_tail() is True
    assert store.path.read_bytes() == b'{"a": 1}\n'
    assert store.repair_torn_tail() is False
    store.path.write_bytes(b"x" * 200_000)  # one torn line and nothing else
    assert store.repair_torn_tail() is True and store.path.read_bytes() == b""


def test_config_mismatch_names_options() -> None:
    assert config_mismatch({"--memeval-top-k": [10]}, {"--memeval-top-k": (10,)}) == []
    assert config_mismatch({"--memeval-limit": 2}, {"--memeval-limit": None}) == [
        "--memeval-limit: 2 -> null"
    ]


def test_a_run_folder_from_before_the_per_style_names_is_not_resumed(tmp_path: Path) -> None:
    """A folder written before judge scores were named per style (no JUDGE_NAMES_KEY) holds
    `judge`-named scores: resuming it with a judge is refused with the reason; without a judge
    (no judge scores either way) it resumes as before."""
    from dataclasses import replace

    base = Settings()
    judged = replace(base, llm=replace(base.llm, judges=("openai:gpt-4o-mini",)))
    for settings, refused in ((judged, True), (base, False)):
        old = settings.numbers()
        old.pop(JUDGE_NAMES_KEY)
        folder = tmp_path / ("judged" if refused else "plain")
        folder.mkdir()
        (folder / CONFIG_FILE).write_text(json.dumps({NUMBERS_KEY: old}), encoding="utf-8")
        if refused:
            with pytest.raises(MemevalError, match="before each judge style had its own metric"):
                check_resume_config(folder, settings.numbers())
        else:
            check_resume_config(folder, settings.numbers())
    # a folder written now resumes
    new = tmp_path / "new"
    new.mkdir()
    (new / CONFIG_FILE).write_text(json.dumps({NUMBERS_KEY: judged.numbers()}), encoding="utf-8")
    check_resume_config(new, judged.numbers())


# --------------------------------------------------------------------------- report paths


@pytest.fixture(params=["json", "html", "markdown", "save-baseline"])
def report_option(request: pytest.FixtureRequest) -> str:
    return f"--memeval-{request.param}"


def _configure_error(pytester: pytest.Pytester, option: str, value: Path) -> str:
    result = _run(pytester, f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert not _answered(pytester.path)  # refused before any question ran
    err = result.stderr.str()
    assert f"{option}={value}" in err and "INTERNALERROR" not in err
    return err


def test_report_path_is_a_directory(pytester: pytest.Pytester, report_option: str) -> None:
    pytester.makeconftest(COUNTING)
    err = _configure_error(pytester, report_option, pytester.path)
    assert "is a directory; give a file path" in err


def test_report_path_under_a_regular_file(pytester: pytest.Pytester, report_option: str) -> None:
    pytester.makeconftest(COUNTING)
    plain = pytester.path / "plain.txt"
    plain.write_text("x")
    err = _configure_error(pytester, report_option, plain / "r.out")
    assert f"{plain} is not a folder" in err


def test_report_path_parent_missing(pytester: pytest.Pytester, report_option: str) -> None:
    pytester.makeconftest(COUNTING)
    target = pytester.path / "missing" / "deeper" / "r.out"
    err = _configure_error(pytester, report_option, target)
    assert f"the folder {target.parent} does not exist; create it first" in err
    assert not (pytester.path / "missing").exists()  # never created behind the user's back


def test_report_path_unwritable_folder(pytester: pytest.Pytester, report_option: str) -> None:
    pytester.makeconftest(COUNTING)
    if os.geteuid() == 0:  # root writes through permissions: /proc refuses new files even so
        folder = Path("/proc")
        err = _configure_error(pytester, report_option, folder / "memeval-report.out")
    else:
        folder = pytester.path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
        try:
            err = _configure_error(pytester, report_option, folder / "r.out")
        finally:
            folder.chmod(0o700)
    assert f"cannot write in {folder}" in err and "choose a writable folder" in err


SABOTAGE = (
    COUNTING
    + """

def pytest_memeval_modify_summary(config, summary):
    # the JSON target turns into a folder after the configure-time check: its writer fails
    os.mkdir(os.path.join(os.path.dirname(__file__), "r.json"))
"""
)


@MODES
def test_a_failing_writer_stops_nothing_else(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makeconftest(SABOTAGE)
    json_path, html, md = (pytester.path / n for n in ("r.json", "r.html", "r.md"))
    result = _run(
        pytester,
        f"--memeval-json={json_path}",
        f"--memeval-html={html}",
        f"--memeval-markdown={md}",
        *mode,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert html.is_file() and md.is_file()
    result.stdout.fnmatch_lines(
        [
            "*memeval summary*",
            f"memeval: HTML report written to {html}",
            f"memeval: Markdown summary written to {md}",
            f"memeval: JSON report NOT written (--memeval-json={json_path}): *",
        ]
    )
    assert f"JSON report written to {json_path}" not in result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
