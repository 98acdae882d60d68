"""download(): https-only pinning, size and sha256 checks, atomic replace, cache reuse, resuming
with ranges, progress, offline errors; pin records and the unpinned-copy check."""

from __future__ import annotations

import hashlib
import itertools
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from file_server import FileServer, Reply, Route, serve_files

from pytest_memeval.benchmarks import _download as download_module
from pytest_memeval.benchmarks._download import (
    PinnedFile,
    Pins,
    Unpinned,
    download,
    file_sha256,
    format_progress,
    known_sha256,
    unpinned_files,
)
from pytest_memeval.errors import DatasetError

GOOD = b'[{"hello": "world"}]\n' * 5000  # ~100 KB: several read chunks
GOOD_SHA = hashlib.sha256(GOOD).hexdigest()
WRONG = b"<html>not the file you pinned</html>"
WRONG_SHA = hashlib.sha256(WRONG).hexdigest()


@pytest.fixture
def server() -> Iterator[FileServer]:
    routes: dict[str, Route] = {
        "/good.json": GOOD,
        "/wrong.json": WRONG,
        "/truncated.json": Reply(GOOD, truncate_to=1000),
        "/slow.json": Reply(GOOD, delay=60.0),  # far past the 0.2-s timeout (a daemon thread)
    }
    with serve_files(routes) as srv:
        yield srv


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_downloads_and_checks_sha256(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "data" / "locomo" / "locomo10.json"
    assert download(f"{server.base}/good.json", dest, GOOD_SHA) == dest
    assert dest.read_bytes() == GOOD
    assert file_sha256(dest) == GOOD_SHA
    assert _leftovers(dest.parent) == ["locomo10.json"]  # no temp file left
    assert server.hits["/good.json"] == 1


def test_second_call_reuses_the_cache(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    download(f"{server.base}/good.json", dest, GOOD_SHA)
    download(f"{server.base}/good.json", dest, GOOD_SHA.upper())  # hex case does not matter
    assert server.hits["/good.json"] == 1


def test_unpinned_existing_file_is_reused(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    dest.write_bytes(b"local")
    assert download(f"{server.base}/good.json", dest, None) == dest
    assert dest.read_bytes() == b"local"
    assert server.hits["/good.json"] == 0


def test_cached_file_with_wrong_sha256_is_replaced(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    dest.write_bytes(b"stale partial content")
    download(f"{server.base}/good.json", dest, GOOD_SHA)
    assert dest.read_bytes() == GOOD
    assert server.hits["/good.json"] == 1
    assert _leftovers(tmp_path) == ["f.json"]


def test_checksum_mismatch_names_both_hashes_and_leaves_nothing(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "d" / "f.json"
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/wrong.json", dest, GOOD_SHA)
    msg = str(info.value)
    assert GOOD_SHA in msg and WRONG_SHA in msg
    assert "--memeval-data" in msg
    assert not dest.exists()
    assert _leftovers(dest.parent) == []


def test_checksum_mismatch_keeps_an_existing_good_file_untouched(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "f.json"
    dest.write_bytes(b"old")
    with pytest.raises(DatasetError):
        download(f"{server.base}/wrong.json", dest, GOOD_SHA)
    assert dest.read_bytes() == b"old"  # never overwritten by a bad download
    assert _leftovers(tmp_path) == ["f.json"]


def test_http_404_is_an_offline_error(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "locomo" / "locomo10.json"
    url = f"{server.base}/missing.json"
    with pytest.raises(DatasetError) as info:
        download(url, dest, GOOD_SHA)
    msg = str(info.value)
    assert "\n" not in msg
    assert url in msg
    assert "HTTP 404" in msg
    assert "--memeval-data=DIR" in msg and "DIR/locomo/locomo10.json" in msg
    assert "MEMEVAL_DATA_DIR" in msg
    assert _leftovers(dest.parent) == []


def test_truncated_body_is_kept_as_part_and_resumed_with_a_range(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "f.json"
    server.ranges = True
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/truncated.json", dest, GOOD_SHA, size=len(GOOD))
    assert "could not download" in str(info.value)
    assert "bytes still expected" in str(info.value)
    assert _leftovers(tmp_path) == ["f.json.part"]  # kept for the next attempt
    assert (tmp_path / "f.json.part").read_bytes() == GOOD[:1000]
    server.routes["/truncated.json"] = GOOD  # the connection holds this time
    lines: list[str] = []
    download(f"{server.base}/truncated.json", dest, GOOD_SHA, size=len(GOOD), progress=lines.append)
    assert server.headers[-1]["Range"] == "bytes=1000-"
    assert dest.read_bytes() == GOOD
    assert _leftovers(tmp_path) == ["f.json"]
    assert lines[-1].startswith("saved f.json (") and lines[-1].endswith(f"to {dest}")


def test_a_server_ignoring_the_range_restarts_from_zero(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    (tmp_path / "f.json.part").write_bytes(b"garbage that is not a prefix")
    download(f"{server.base}/good.json", dest, GOOD_SHA)  # server.ranges is off: 200, whole body
    assert server.headers[-1]["Range"] == "bytes=28-"
    assert dest.read_bytes() == GOOD
    assert _leftovers(tmp_path) == ["f.json"]


def test_a_part_longer_than_the_file_is_fetched_again(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    server.ranges = True
    (tmp_path / "f.json.part").write_bytes(GOOD + b"extra")  # 416 Range Not Satisfiable
    download(f"{server.base}/good.json", dest, GOOD_SHA)
    assert [h.get("Range") for h in server.headers] == [f"bytes={len(GOOD) + 5}-", None]
    assert dest.read_bytes() == GOOD


def test_a_resumed_part_with_wrong_bytes_is_refused_and_removed(
    server: FileServer, tmp_path: Path
) -> None:
    dest = tmp_path / "f.json"
    server.ranges = True
    (tmp_path / "f.json.part").write_bytes(b"X" * 1000)  # the rest is GOOD's: the sha256 differs
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/good.json", dest, GOOD_SHA, size=len(GOOD))
    assert GOOD_SHA in str(info.value)
    assert _leftovers(tmp_path) == []


def test_size_mismatch_is_refused(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/good.json", dest, GOOD_SHA, size=len(GOOD) + 1)
    assert f"size mismatch: {len(GOOD)} bytes, expected {len(GOOD) + 1}" in str(info.value)
    assert _leftovers(tmp_path) == []


def test_progress_line_and_its_throttle(
    server: FileServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert format_progress("f.json", 12_000_000, 277_400_000, 2.0, 0) == (
        "f.json: 12.0 MB of 277.4 MB (4%), 6.0 MB/s, ETA 44 s"
    )
    assert format_progress("f.json", 500, None, 0.0, 0) == "f.json: 500 B, 0 B/s"
    clock = [0.0]

    def tick() -> float:
        clock[0] += 0.25  # a quarter second a call
        return clock[0]

    monkeypatch.setattr(download_module.time, "monotonic", tick)
    server.routes["/big.bin"] = big = bytes(range(256)) * 8192  # 2 MB: many reads
    lines: list[tuple[float, str]] = []
    download(
        f"{server.base}/big.bin",
        tmp_path / "big.bin",
        hashlib.sha256(big).hexdigest(),
        progress=lambda line: lines.append((clock[0], line)),
    )
    progress = [(t, line) for t, line in lines if line.startswith("downloading big.bin: ")]
    assert len(progress) >= 3
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(progress[:-1])]
    assert all(gap >= 1.0 for gap in gaps)  # at most one line a second (the last one aside)
    assert progress[-1][1].startswith("downloading big.bin: 2.1 MB of 2.1 MB (100%), ")
    assert "ETA 0 s" in progress[-1][1]
    assert lines[-1][1].startswith("saved big.bin (2.1 MB, sha256 ")


def test_known_sha256_hashes_a_file_once_per_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(GOOD)
    calls: list[Path] = []
    real = download_module.file_sha256

    def counting(p: Path) -> str:
        calls.append(p)
        return real(p)

    monkeypatch.setattr(download_module, "file_sha256", counting)
    cache = tmp_path / "hashes"
    assert known_sha256(path, cache) == GOOD_SHA
    assert known_sha256(path, cache) == GOOD_SHA
    assert len(calls) == 1
    path.write_bytes(WRONG)  # a new version (size and mtime): hashed again
    assert known_sha256(path, cache) == WRONG_SHA
    assert len(calls) == 2


def test_token_goes_to_the_url_only_not_to_a_redirect(tmp_path: Path) -> None:
    with serve_files({"/file": GOOD}) as cdn:
        with serve_files(
            {"/resolve": Reply(status=302, headers={"Location": cdn.url("/file")})}
        ) as hub:
            download(
                hub.url("/resolve"),
                tmp_path / "f.json",
                GOOD_SHA,
                secret_headers={"Authorization": "Bearer tok"},
            )
            assert hub.headers[0]["Authorization"] == "Bearer tok"
        assert "Authorization" not in cdn.headers[0]


def test_hf_urls_follow_hf_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = Pins(
        "huggingface", "org/set", "a" * 40, {"x": PinnedFile("d/x y.json", "s/x.json", "0")}
    )
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert pins.url(pins.files["x"]) == (
        f"https://huggingface.co/datasets/org/set/resolve/{'a' * 40}/d/x%20y.json"
    )
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example/")
    assert pins.url(pins.files["x"]).startswith("https://hf-mirror.example/datasets/org/set/")
    github = Pins("github", "o/r", "b" * 40, {"x": PinnedFile("data/x.json", "x/x.json", "0")})
    assert github.url(github.files["x"]) == (
        f"https://raw.githubusercontent.com/o/r/{'b' * 40}/data/x.json"
    )


def test_unpinned_files_lists_copies_at_pinned_paths_only() -> None:
    pins = Pins(
        "huggingface",
        "o/r",
        "c" * 40,
        {
            "a": PinnedFile("a.json", "suite/a.json", GOOD_SHA),
            "b": PinnedFile("b.json", "suite/b.json", GOOD_SHA),
        },
    )
    found = unpinned_files(
        {"suite/a.json": GOOD_SHA, "suite/b.json": WRONG_SHA, "suite/export.jsonl": WRONG_SHA},
        pins,
    )
    assert found == [Unpinned("suite/b.json", WRONG_SHA, GOOD_SHA)]
    # a suite that keys its files by name alone
    assert unpinned_files({"b.json": WRONG_SHA}, pins) == [Unpinned("b.json", WRONG_SHA, GOOD_SHA)]


def test_timeout_is_an_offline_error(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/slow.json", dest, GOOD_SHA, timeout=0.2)
    assert "timed out" in str(info.value)
    assert _leftovers(tmp_path) == []


def test_connection_refused_is_an_offline_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/locomo10.json"
    dest = tmp_path / "locomo" / "locomo10.json"
    with pytest.raises(DatasetError) as info:
        download(url, dest, GOOD_SHA, what="the LoCoMo file")
    msg = str(info.value)
    assert msg.startswith(f"could not download the LoCoMo file from {url} (")
    assert "refused" in msg.lower()
    assert "\n" not in msg
    assert _leftovers(dest.parent) == []


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/locomo10.json",
        "ftp://example.com/locomo10.json",
        "file:///etc/passwd",
        "https:///no-host",
        "locomo10.json",
    ],
)
def test_refuses_non_https_urls(url: str, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    with pytest.raises(DatasetError) as info:
        download(url, dest, None)
    assert "only https" in str(info.value)
    assert _leftovers(tmp_path) == []
