"""Issue 17, round two: reads of user-named files are bounded by the bytes actually read, and a
directory, FIFO or device in place of a file says what it is (never hangs, never "not found")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import XDIST_MODES

from pytest_memeval._files import FileTooLarge, NotAFile, read_bounded
from pytest_memeval.analysis._regression import load_baseline
from pytest_memeval.systems._builtin import load_replay

pytestmark = pytest.mark.usefixtures("memeval_env")

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
needs_dev_zero = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@needs_fifo
def test_read_bounded_refuses_non_regular_files(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(NotAFile, match="is a directory, not a file"):
        read_bounded(tmp_path, 10)
    with pytest.raises(NotAFile, match=r"pipe\.json is a FIFO \(named pipe\), not a file"):
        read_bounded(fifo, 10)  # no writer: must not block
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 10)
    path = tmp_path / "f.txt"
    path.write_bytes(b"12345")
    assert read_bounded(path, 5) == b"12345"
    with pytest.raises(FileTooLarge, match="larger than 4 bytes"):
        read_bounded(path, 4)


@needs_dev_zero
def test_read_bounded_dev_zero_is_refused_not_read() -> None:
    with pytest.raises(NotAFile, match="/dev/zero is a device, not a file"):
        read_bounded("/dev/zero", 1 << 20)


@needs_fifo
@needs_dev_zero
def test_loaders_of_user_files(tmp_path: Path, fifo: Path) -> None:
    from pytest_memeval.errors import AdapterError, JudgeError, MemevalError
    from pytest_memeval.judges._base import load_template

    for bad, words in (
        (fifo, "is a FIFO"),
        (Path("/dev/zero"), "is a device"),
        (tmp_path, "is a directory"),
    ):
        with pytest.raises(AdapterError, match=f"replay file .*{words}"):
            load_replay(bad)
        with pytest.raises(MemevalError, match=f"not a regular file .*{words}"):
            load_baseline(bad)
        with pytest.raises(JudgeError, match=f"prompt template .*{words}"):
            load_template("mem0.txt", ("question",), str(bad))


def _subprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "-p",
        "no:cacheprovider",
        *args,
        timeout=120,
    )


@needs_fifo
@needs_dev_zero
@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_prices_and_replay_from_non_files_are_usage_errors(
    pytester: pytest.Pytester, kind: str
) -> None:
    target = Path("/dev/zero") if kind == "dev-zero" else pytester.path / "pipe"
    if kind == "fifo":
        os.mkfifo(target)
    words = "is a device" if kind == "dev-zero" else "is a FIFO (named pipe)"
    result = _subprocess(pytester, f"--memeval-prices={target}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--memeval-prices={target}: {target} {words}, not a file" in result.stderr.str()
    result = pytester.runpytest_subprocess(
        "--memeval=demo",
        f"--memsys=replay:{target}",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        timeout=120,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"replay file {target} {words}, not a file" in result.stderr.str()


@needs_fifo
def test_baseline_from_a_fifo_fails_the_comparison_not_the_session(
    pytester: pytest.Pytester,
) -> None:
    pipe = pytester.path / "base.json"
    os.mkfifo(pipe)
    result = _subprocess(pytester, f"--memeval-baseline={pipe}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["memeval: regression FAILED: *base.json*is a FIFO*"])


@needs_fifo
@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_data_file_that_is_not_a_file(pytester: pytest.Pytester, kind: str) -> None:
    data = pytester.path / "data"
    (data / "locomo").mkdir(parents=True)
    target = data / "locomo" / "locomo10.json"
    if kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(target)
    result = pytester.runpytest_subprocess(
        "--memeval=locomo",
        "--memsys=bm25",
        f"--memeval-data={data}",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        timeout=120,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "not found" not in err
    words = "is a directory, not a file" if kind == "directory" else "is a FIFO (named pipe)"
    assert f"{target}: {words}" in err, err


def test_prices_size_is_bytes_read(pytester: pytest.Pytester) -> None:
    big = pytester.path / "prices.json"
    big.write_text(json.dumps({"m": {"input": 1, "output": 2}}) + " " * (1 << 20))
    result = _subprocess(pytester, f"--memeval-prices={big}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "larger than 1 MB" in result.stderr.str()


#: price tables refused with one line: (file text, what the line says)
BAD_PRICES = {
    "nested-100000-deep": ('{"m": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deep"),
    "nan": ('{"m": {"input": NaN, "output": 2}}', "'input' is nan; a price is a finite number"),
    "infinity": ('{"m": {"input": 1, "output": Infinity}}', "'output' is inf; a price is a"),
    "minus-infinity": ('{"m": {"input": -Infinity, "output": 1}}', "'input' is -inf"),
    "float-overflow": ('{"m": {"input": 1e400, "output": 1}}', "'input' is inf"),
    "int-past-float": ('{"m": {"input": 1' + "0" * 400 + ', "output": 1}}', "'input' is 1000"),
    "negative": ('{"m": {"input": -0.5, "output": 1}}', "'input' is -0.5; a price is a finite"),
}


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
@pytest.mark.parametrize("case", list(BAD_PRICES), ids=list(BAD_PRICES))
def test_bad_price_tables_are_one_line(pytester: pytest.Pytester, case: str, mode: str) -> None:
    """A price table nested 100,000 deep was an INTERNALERROR, and a NaN or infinite price was
    accepted (the estimate printed ``$nan``): each is a usage error naming the file and model."""
    text, words = BAD_PRICES[case]
    path = pytester.path / "prices.json"
    path.write_text(text)
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-prices={path}",
        "--memeval-estimate",
        *XDIST_MODES[mode],
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out and "$nan" not in out
    (line,) = [ln for ln in result.stderr.str().splitlines() if ln.startswith("ERROR:")]
    assert f"--memeval-prices={path}" in line and words in line, line
