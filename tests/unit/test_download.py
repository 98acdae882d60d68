"""download(): https-only pinning, sha256 check, atomic replace, cache reuse, offline errors."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from file_server import FileServer, Reply, Route, serve_files

from pytest_memeval.benchmarks.download import download, file_sha256
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


def test_truncated_body_leaves_no_partial_file(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "f.json"
    with pytest.raises(DatasetError) as info:
        download(f"{server.base}/truncated.json", dest, None)
    assert "could not download" in str(info.value)
    assert "bytes still expected" in str(info.value)
    assert _leftovers(tmp_path) == []


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
