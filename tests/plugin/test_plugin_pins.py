"""Pinned releases end to end, without xdist and with ``-n 2``: a file under ``--memeval-data`` at
a pinned path with other bytes is refused naming both hashes and ``--memeval-accept-unpinned``,
and accepted with it (recorded as unpinned in the provenance); the real LoCoMo file is the pinned
one; a suite downloads from ``HF_ENDPOINT`` (a loopback mirror) saying where the file went, and
the second run reuses the cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from conftest import read_json
from file_server import serve_files

from pytest_memeval.benchmarks.halumem import PINS

DATA = Path(__file__).resolve().parent.parent / "fixtures" / "halumem" / "data"
FILE = DATA / "halumem" / "HaluMem-Medium.jsonl"

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_unpinned_copy_is_refused_then_accepted(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    args = [
        *run_mode,
        "--memeval=halumem",
        "--memeval-variant=medium",
        f"--memeval-data={DATA}",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
    ]
    actual = hashlib.sha256(FILE.read_bytes()).hexdigest()
    pinned = PINS.files["medium"].sha256
    refused = pytester.runpytest(*args)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    err = refused.stderr.str()
    assert "halumem/HaluMem-Medium.jsonl is not the pinned release file" in err
    assert actual in err and pinned in err and "--memeval-accept-unpinned" in err
    assert "Traceback" not in err
    out = pytester.path / "r.json"
    accepted = pytester.runpytest(*args, "--memeval-accept-unpinned", f"--memeval-json={out}")
    assert accepted.ret == pytest.ExitCode.OK, accepted.stdout.str()
    info = read_json(out)["provenance"]["datasets"]["halumem"]
    assert info["unpinned"] == {
        "halumem/HaluMem-Medium.jsonl": {
            "sha256": actual,
            "pinned": pinned,
            "release": f"{PINS.repo}@{PINS.revision}",
        }
    }


def test_real_locomo_copy_is_the_pinned_release(
    pytester: pytest.Pytester, run_mode: list[str], data_dir: Path
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        *run_mode,
        "--memeval=locomo",
        f"--memeval-data={data_dir}",
        "--memsys=bm25",
        "--memeval-limit=1",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
    )
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    info = read_json(out)["provenance"]["datasets"]["locomo"]
    assert "unpinned" not in info  # no --memeval-accept-unpinned needed


CONFTEST = """
import dataclasses
import pytest
from pytest_memeval.benchmarks import halumem
from pytest_memeval.benchmarks._download import PinnedFile, Pins

REAL = halumem.BENCHMARK
FAKE = Pins("huggingface", REAL.pins.repo, "f" * 40, {
    "medium": PinnedFile("HaluMem-Medium.jsonl", "halumem/HaluMem-Medium.jsonl", %r, %d),
})

def pytest_configure(config):
    halumem.BENCHMARK = dataclasses.replace(REAL, pins=FAKE)  # the fixture as the release

def pytest_unconfigure(config):
    halumem.BENCHMARK = REAL
"""


def test_download_from_hf_endpoint_then_the_cache(
    pytester: pytest.Pytester, run_mode: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = FILE.read_bytes()
    pytester.makeconftest(CONFTEST % (hashlib.sha256(body).hexdigest(), len(body)))
    route = f"/datasets/{PINS.repo}/resolve/{'f' * 40}/HaluMem-Medium.jsonl"
    cache = pytester.path / "cache"
    with serve_files({route: body}) as mirror:
        monkeypatch.setenv("HF_ENDPOINT", mirror.base)
        args = [
            *run_mode,
            "--memeval=halumem",
            "--memeval-variant=medium",
            "--memsys=bm25",
            f"--memeval-cache-dir={cache}",
        ]
        first = pytester.runpytest(*args)
        assert first.ret == pytest.ExitCode.OK, first.stderr.str()
        dest = cache / "data" / "halumem" / "HaluMem-Medium.jsonl"
        first.stderr.fnmatch_lines([f"memeval: saved the HaluMem medium file (*) to {dest}"])
        assert dest.read_bytes() == body
        second = pytester.runpytest(*args)
        assert second.ret == pytest.ExitCode.OK
        assert "memeval: saved" not in second.stderr.str()
        assert mirror.requests == [route]  # once: the second run (and every worker) reads the cache
