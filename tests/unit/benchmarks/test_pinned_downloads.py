"""Every Hugging Face suite downloads its pinned files from ``HF_ENDPOINT`` (a loopback mirror
serving ``/datasets/{repo}/resolve/{revision}/{path}``), reuses them from the cache, and refuses
wrong bytes naming the pinned sha256 with nothing left in the cache. The pin records are replaced
by ones for small fake files (their hashes computed here): the real data is never shipped."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from file_server import FileServer, serve_files

from pytest_memeval.benchmarks import get_benchmark
from pytest_memeval.benchmarks._base import LoadRequest
from pytest_memeval.benchmarks._download import PinnedFile, Pins
from pytest_memeval.errors import DatasetError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TOKEN = "hf_secret_token_for_the_test"


def _lme_item() -> bytes:
    item = {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "What degree did I graduate with?",
        "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_1"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I graduated in Business Administration"},
                {"role": "assistant", "content": "Congrats"},
            ]
        ],
        "answer_session_ids": ["s_1"],
    }
    return json.dumps([item]).encode()


def _mab_parquet() -> bytes:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = json.loads(
        (FIXTURES / "memoryagentbench/data/memoryagentbench/Conflict_Resolution.json").read_bytes()
    )
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return bytes(sink.getvalue().to_pybytes())


def _lme2(name: str) -> bytes:
    return (FIXTURES / "longmemeval_v2/data/longmemeval-v2" / name).read_bytes()


@dataclass(frozen=True)
class Suite:
    name: str
    variant: str
    folder: str
    #: pin key -> (path in the repository, bytes served)
    files: Callable[[], dict[str, tuple[str, bytes]]]
    #: the key whose bytes the wrong-bytes test replaces
    victim: str


def _lme2_files() -> dict[str, tuple[str, bytes]]:
    files = {
        "questions": ("questions.jsonl", _lme2("questions.jsonl")),
        "trajectories": ("trajectories.jsonl", _lme2("trajectories.jsonl")),
        "small": ("haystacks/lme_v2_small.json", _lme2("haystacks/lme_v2_small.json")),
    }
    listing = "".join(
        f"{hashlib.sha256(body).hexdigest()}  ./{path}\n" for path, body in files.values()
    )
    files["checksums"] = ("checksums.sha256", listing.encode())
    return files


SUITES = {
    "longmemeval": Suite(
        "longmemeval",
        "oracle",
        "longmemeval",
        lambda: {"oracle": ("longmemeval_oracle.json", _lme_item())},
        "oracle",
    ),
    "halumem": Suite(
        "halumem",
        "medium",
        "halumem",
        lambda: {
            "medium": (
                "HaluMem-Medium.jsonl",
                (FIXTURES / "halumem/data/halumem/HaluMem-Medium.jsonl").read_bytes(),
            )
        },
        "medium",
    ),
    "memoryagentbench": Suite(
        "memoryagentbench",
        "Conflict_Resolution",
        "memoryagentbench",
        lambda: {
            "Conflict_Resolution": (
                "data/Conflict_Resolution-00000-of-00001.parquet",
                _mab_parquet(),
            )
        },
        "Conflict_Resolution",
    ),
    "longmemeval-v2": Suite("longmemeval-v2", "small", "longmemeval-v2", _lme2_files, "small"),
}


def _pins(suite: Suite, files: dict[str, tuple[str, bytes]]) -> Pins:
    real: Pins = get_benchmark(suite.name).pins  # type: ignore[attr-defined]
    return Pins(
        "huggingface",
        real.repo,
        "0123456789abcdef0123456789abcdef01234567",
        {
            key: PinnedFile(
                path, f"{suite.folder}/{path}", hashlib.sha256(body).hexdigest(), len(body)
            )
            for key, (path, body) in files.items()
        },
    )


def _route(pins: Pins, path: str) -> str:
    return f"/datasets/{pins.repo}/resolve/{pins.revision}/{path}"


@pytest.fixture
def mirror(monkeypatch: pytest.MonkeyPatch) -> Iterator[FileServer]:
    with serve_files() as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.base + "/")  # a trailing slash is dropped
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield srv


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("name", list(SUITES))
def test_downloads_the_pinned_files_from_hf_endpoint(
    name: str, mirror: FileServer, tmp_path: Path
) -> None:
    suite = SUITES[name]
    files = suite.files()
    pins = _pins(suite, files)
    mirror.routes.update({_route(pins, path): body for path, body in files.values()})
    bench: Any = replace(get_benchmark(name), pins=pins)
    lines: list[str] = []
    request = LoadRequest(None, tmp_path / "cache", suite.variant, progress=lines.append)
    dataset = bench.load(request)
    assert dataset.questions
    assert sorted(mirror.requests) == sorted(_route(pins, path) for path, _ in files.values())
    assert all(h.get("Authorization") == f"Bearer {TOKEN}" for h in mirror.headers)
    data = tmp_path / "cache" / "data"
    for _, (path, body) in files.items():
        assert (data / suite.folder / path).read_bytes() == body
    assert not list(data.rglob("*.part"))
    saved = [line for line in lines if line.startswith("saved ")]
    assert len(saved) == len(files)
    assert all(str(data) in line for line in saved)
    assert not any(TOKEN in line for line in lines)
    if name != "longmemeval":
        assert dataset.meta["source"] == f"huggingface:{pins.repo}@{pins.revision}"
    again = bench.load(request)  # from the cache: nothing requested again
    assert len(again.questions) == len(dataset.questions)
    assert len(mirror.requests) == len(files)


@pytest.mark.parametrize("name", list(SUITES))
def test_wrong_bytes_are_refused_naming_the_pinned_sha256(
    name: str, mirror: FileServer, tmp_path: Path
) -> None:
    suite = SUITES[name]
    files = suite.files()
    pins = _pins(suite, files)
    mirror.routes.update({_route(pins, path): body for path, body in files.values()})
    path, body = files[suite.victim]
    wrong = body[:-1] + bytes([body[-1] ^ 1])  # same size, one bit changed
    mirror.routes[_route(pins, path)] = wrong
    bench: Any = replace(get_benchmark(name), pins=pins)
    cache = tmp_path / "cache"
    with pytest.raises(DatasetError) as info:
        bench.load(LoadRequest(None, cache, suite.variant))
    msg = str(info.value)
    assert pins.files[suite.victim].sha256 in msg
    assert hashlib.sha256(wrong).hexdigest() in msg
    assert path.rsplit("/", 1)[-1] in msg and "\n" not in msg
    assert TOKEN not in msg
    done = {f"data/{suite.folder}/{p}" for k, (p, _) in files.items() if k != suite.victim}
    left = {p for p in _leftovers(cache) if not p.startswith("data/.sha256-cache/")}
    assert left <= done  # the files checked before it stay; nothing of the refused one
    assert not (cache / "data" / suite.folder / path).exists()
    assert not list(cache.rglob("*.part"))


def test_lme2_checksums_listing_must_agree_with_the_pins(
    mirror: FileServer, tmp_path: Path
) -> None:
    suite = SUITES["longmemeval-v2"]
    files = _lme2_files()
    listed = hashlib.sha256(files["small"][1]).hexdigest()
    other = "0" * 64
    path, listing = files["checksums"]
    files["checksums"] = (path, listing.replace(listed.encode(), other.encode()))
    pins = _pins(suite, files)
    mirror.routes.update({_route(pins, p): body for p, body in files.values()})
    bench: Any = replace(get_benchmark("longmemeval-v2"), pins=pins)
    with pytest.raises(DatasetError) as info:
        bench.load(LoadRequest(None, tmp_path, "small"))
    msg = str(info.value)
    assert "checksums.sha256 lists haystacks/lme_v2_small.json" in msg
    assert other in msg and listed in msg
    assert _route(pins, "haystacks/lme_v2_small.json") not in mirror.requests  # checked first


def test_the_real_pins_point_at_revisions_not_branches() -> None:
    for name in ("locomo", "longmemeval", "memoryagentbench", "longmemeval-v2", "halumem"):
        pins: Pins = get_benchmark(name).pins  # type: ignore[attr-defined]
        assert len(pins.revision) == 40 and int(pins.revision, 16) >= 0
        for pin in pins.files.values():
            assert len(pin.sha256) == 64
            assert "/main/" not in pins.url(pin)


def test_test_time_learning_brings_the_movie_table(mirror: FileServer, tmp_path: Path) -> None:
    from pytest_memeval.benchmarks.memoryagentbench._loader import download_splits

    table = b'{"Heat (1995)": 1}'
    shard = b"not read here"
    pins = Pins(
        "huggingface",
        "ai-hyz/MemoryAgentBench",
        "e" * 40,
        {
            "Test_Time_Learning": PinnedFile(
                "data/Test_Time_Learning-00000-of-00001.parquet",
                "memoryagentbench/data/Test_Time_Learning-00000-of-00001.parquet",
                hashlib.sha256(shard).hexdigest(),
                len(shard),
            ),
            "entity2id": PinnedFile(
                "entity2id.json",
                "memoryagentbench/entity2id.json",
                hashlib.sha256(table).hexdigest(),
            ),
        },
    )
    mirror.routes[_route(pins, "data/Test_Time_Learning-00000-of-00001.parquet")] = shard
    mirror.routes[_route(pins, "entity2id.json")] = table
    root = download_splits(LoadRequest(None, tmp_path), ["Test_Time_Learning"], pins)
    assert (root / "memoryagentbench" / "entity2id.json").read_bytes() == table
    assert mirror.requests[-1] == _route(pins, "entity2id.json")
