"""Download a pinned benchmark file into the cache: https only, size- and sha256-checked, atomic,
resumable, with a progress line.

Every suite's release is one :class:`Pins` record in its loader module (repository, revision,
the files with their size and sha256). :func:`fetch_pinned` turns a pinned file into its URL
(``{HF_ENDPOINT}/datasets/{repo}/resolve/{revision}/{path}`` for Hugging Face, the raw file at the
commit for GitHub) and calls :func:`download`.

:func:`download` streams the body into ``<dest>.part`` beside ``dest`` (kept when the connection
breaks, so the next run resumes it with ``Range: bytes=N-``; a server that ignores the range and
answers 200 is read from the start), checks the size and the sha256, and only then moves the file
into place with ``os.replace`` (atomic on one file system). A file with the wrong bytes is never
left in the cache: the ``.part`` is removed and the error names the file, the pinned and the
actual sha256. A cached file is reused when its sha256 (remembered per path, size and mtime, so a
2.7 GB file is hashed once) is the pinned one.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MSG_OFFLINE, DatasetError
from ._base import file_sha256

__all__ = [
    "HF_DEFAULT_ENDPOINT",
    "LOOPBACK_HOSTS",
    "PinnedFile",
    "Pins",
    "SuitePins",
    "Unpinned",
    "check_local_copies",
    "download",
    "fetch_pinned",
    "file_sha256",
    "format_progress",
    "hf_endpoint",
    "known_sha256",
    "unpinned_files",
]

#: hosts for which plain http is allowed (loopback test servers)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: where Hugging Face files come from unless ``HF_ENDPOINT`` names a mirror (as huggingface_hub)
HF_DEFAULT_ENDPOINT = "https://huggingface.co"

_CHUNK = 1 << 16
#: seconds between two progress lines
PROGRESS_EVERY = 1.0


# --------------------------------------------------------------------------- pins


@dataclass(frozen=True)
class PinnedFile:
    """One file of a pinned release: ``path`` inside the repository, ``local`` below
    ``--memeval-data`` (and below the cache's ``data`` folder), its sha256 and size (None when
    no source records it)."""

    path: str
    local: str
    sha256: str
    size: int | None = None

    @classmethod
    def below(cls, folder: str, path: str, sha256: str, size: int | None) -> PinnedFile:
        """A file kept locally at ``folder/path`` (the repository's own layout below it)."""
        return cls(path, f"{folder}/{path}", sha256, size)


@dataclass(frozen=True)
class Pins:
    """A suite's pinned release: ``host`` is ``huggingface`` (a dataset repository) or ``github``;
    ``files`` maps a short key (a split, a variant, a file name) to its :class:`PinnedFile`."""

    host: str
    repo: str
    revision: str
    files: Mapping[str, PinnedFile]

    def url(self, pin: PinnedFile) -> str:
        quoted = urllib.parse.quote(pin.path)
        if self.host == "github":
            return f"https://raw.githubusercontent.com/{self.repo}/{self.revision}/{quoted}"
        return f"{hf_endpoint()}/datasets/{self.repo}/resolve/{self.revision}/{quoted}"

    def by_local(self) -> dict[str, PinnedFile]:
        return {pin.local: pin for pin in self.files.values()}

    @property
    def label(self) -> str:
        return f"{self.repo}@{self.revision[:12]}"


@dataclass(frozen=True)
class SuitePins:
    """Everything a suite pins, as one record: the upstream code it follows (``repo`` at
    ``commit``) with the sha256 of each file whose rules it reproduces (``scorer``: the offline
    scorer, ``loader``: the reading of the data; path -> sha256, the tests compare against those
    files), and the data release it downloads (``data``; None when the files are only read from
    ``--memeval-data``)."""

    repo: str
    commit: str
    scorer: Mapping[str, str]
    loader: Mapping[str, str]
    data: Pins | None = None

    @property
    def files(self) -> dict[str, str]:
        """Every pinned upstream file, scorer and loader side: path -> sha256."""
        return {**self.scorer, **self.loader}

    @property
    def label(self) -> str:
        """``owner/name@commit`` (recorded in a dataset's meta as ``upstream``)."""
        return f"{self.repo}@{self.commit}"


def hf_endpoint() -> str:
    """``HF_ENDPOINT`` (a mirror) or ``https://huggingface.co``, without a trailing slash."""
    return (os.environ.get("HF_ENDPOINT") or HF_DEFAULT_ENDPOINT).rstrip("/")


def _auth_headers(pins: Pins) -> dict[str, str]:
    token = os.environ.get("HF_TOKEN") if pins.host == "huggingface" else None
    return {"Authorization": f"Bearer {token}"} if token else {}


def fetch_pinned(
    pins: Pins,
    key: str,
    cache_data: Path,
    *,
    what: str,
    timeout: float = 30.0,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Download pinned file ``key`` of ``pins`` to ``cache_data / pin.local`` (or reuse it) and
    return that path; ``HF_TOKEN`` is sent as a Bearer header to Hugging Face (never logged,
    never stored, not forwarded by a redirect)."""
    pin = pins.files[key]
    return download(
        pins.url(pin),
        cache_data / pin.local,
        pin.sha256,
        size=pin.size,
        timeout=timeout,
        what=what,
        layout=f"DIR/{pin.local}",
        secret_headers=_auth_headers(pins),
        progress=progress,
        hash_cache=cache_data / ".sha256-cache",
    )


@dataclass(frozen=True)
class Unpinned:
    """A file under ``--memeval-data`` at a pinned path whose bytes are not the pinned ones."""

    local: str
    sha256: str
    pinned: str


def unpinned_files(sha256: Mapping[str, str], pins: Pins) -> list[Unpinned]:
    """The files of a loaded dataset (``local path -> sha256``) that sit at a pinned path but
    hold other bytes. Files under other names (a ``.jsonl`` export, a ``--memeval-variant``
    file) are not copies of the release and are not listed."""
    wanted = pins.by_local()
    # a suite that keys its files by name alone (LongMemEval) names the release file by name
    wanted.update({Path(k).name: v for k, v in wanted.items() if Path(k).name not in wanted})
    return [
        Unpinned(local, digest.lower(), wanted[local].sha256)
        for local, digest in sorted(sha256.items())
        if local in wanted and digest.lower() != wanted[local].sha256.lower()
    ]


def check_local_copies(
    name: str, pins: Pins | tuple[Pins, ...] | None, sha256: Mapping[str, str], accept: bool
) -> dict[str, dict[str, str]]:
    """The files of a loaded dataset that sit at a pinned path with other bytes, as
    ``{path: {"sha256": ..., "pinned": ..., "release": ...}}`` (for the provenance) when
    ``accept``; otherwise the first one is a DatasetError naming both hashes and the option."""
    found: dict[str, dict[str, str]] = {}
    for release in (pins,) if isinstance(pins, Pins) else pins or ():
        for copy in unpinned_files(sha256, release):
            if not accept:
                raise DatasetError(
                    f"{copy.local} is not the pinned release file of {release.label}: its "
                    f"sha256 is {copy.sha256}, the pinned one {copy.pinned}. Replace it with the "
                    f"release file (or drop --memeval-data to download it), or pass "
                    f"--memeval-accept-unpinned to use this copy (recorded as unpinned in the "
                    f"provenance of {name})."
                )
            found[copy.local] = {
                "sha256": copy.sha256,
                "pinned": copy.pinned,
                "release": f"{release.repo}@{release.revision}",
            }
    return found


# --------------------------------------------------------------------------- sha256 cache


def known_sha256(path: Path, cache: Path | None) -> str:
    """The sha256 of ``path``, read from ``cache`` (a folder of small JSON files) when the file's
    (resolved path, size, mtime_ns) is unchanged since it was hashed; otherwise hashed and
    remembered there. Without ``cache`` the file is hashed."""
    if cache is None:
        return file_sha256(path)
    resolved = path.resolve()
    st = resolved.stat()
    key = [str(resolved), st.st_size, st.st_mtime_ns]
    entry = cache / (hashlib.sha256(str(resolved).encode()).hexdigest()[:24] + ".json")
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(entry.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("key") == key:
            digest = data.get("sha256")
            if isinstance(digest, str) and len(digest) == 64:
                return digest
    digest = file_sha256(resolved)
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "sha256": digest}), encoding="utf-8")
        os.replace(tmp, entry)
    return digest


# --------------------------------------------------------------------------- http


def _check_url(url: str) -> None:
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" and host:
        return
    if parts.scheme == "http" and host in LOOPBACK_HOSTS:
        return
    raise DatasetError(
        f"refusing to download from {url!r}: only https URLs are allowed "
        "(plain http only for 127.0.0.1/localhost). Pass a local copy with --memeval-data=DIR.",
        path=url,
    )


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to a URL :func:`_check_url` accepts: refused *before* any request is
    sent there (urllib would otherwise follow https -> http)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        _check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _open(request: urllib.request.Request, timeout: float) -> Any:
    return urllib.request.build_opener(_CheckedRedirects).open(request, timeout=timeout)


def _content_length(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _range_start(value: str | None) -> int | None:
    """The first byte of a ``Content-Range: bytes N-M/T`` header; None when absent or odd."""
    if not value:
        return None
    unit, _, rest = value.strip().partition(" ")
    first = rest.partition("-")[0]
    return int(first) if unit.lower() == "bytes" and first.isdigit() else None


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return _one_line(f"HTTP {exc.code} {exc.reason}")
    if isinstance(exc, urllib.error.URLError):
        return _one_line(str(exc.reason))
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, http.client.IncompleteRead):
        return f"connection closed with {exc.expected} bytes still expected"
    return _one_line(f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- progress


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def format_progress(name: str, done: int, total: int | None, seconds: float, start: int) -> str:
    """One progress line: bytes so far (of the total), the rate of this session's bytes, and the
    time left at that rate, e.g. ``f.json: 12.0 MB of 277.4 MB (4%), 6.0 MB/s, ETA 44 s``."""
    rate = (done - start) / seconds if seconds > 0 else 0.0
    parts = [f"{name}: {_size(done)}"]
    if total:
        parts[0] += f" of {_size(total)} ({100 * done // total}%)"
    parts.append(f"{_size(rate)}/s")
    if total and rate > 0:
        parts.append(f"ETA {max(0, total - done) / rate:.0f} s")
    return ", ".join(parts)


class _Progress:
    """Calls ``say`` with a progress line at most once every :data:`PROGRESS_EVERY` seconds."""

    def __init__(
        self, name: str, total: int | None, start: int, say: Callable[[str], None] | None
    ) -> None:
        self.name, self.total, self.start, self.say = name, total, start, say
        self.t0 = self.last = time.monotonic()
        self.lines = 0

    def update(self, done: int, *, final: bool = False) -> None:
        if self.say is None:
            return
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY and not (final and self.lines):
            return
        self.last = now
        self.lines += 1
        self.say(
            "downloading " + format_progress(self.name, done, self.total, now - self.t0, self.start)
        )


# --------------------------------------------------------------------------- download


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` between processes sharing the cache (two runs must not
    append to one ``.part``); no lock file is left behind. A no-op where ``fcntl`` is missing."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _offline(what: str, url: str, layout: str, exc: BaseException) -> DatasetError:
    return DatasetError(MSG_OFFLINE.format(what=what, url=url, reason=_reason(exc), layout=layout))


def _mismatch(what: str, url: str, dest: Path, layout: str, detail: str) -> DatasetError:
    return DatasetError(
        f"{detail} for {what} from {url}. The file was not saved. The upstream file may have "
        f"changed; pass a copy you trust with --memeval-data=DIR (expects {layout}).",
        path=str(dest),
    )


def download(
    url: str,
    dest: Path,
    sha256: str | None,
    *,
    size: int | None = None,
    timeout: float = 30.0,
    what: str | None = None,
    layout: str | None = None,
    secret_headers: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
    hash_cache: Path | None = None,
) -> Path:
    """Fetch ``url`` to ``dest`` (creating parent folders) and return ``dest``.

    ``sha256`` pins the content (hex, case-insensitive; ``None`` accepts any content), ``size``
    its length. ``what`` and ``layout`` shape the messages (defaults: the file name,
    ``DIR/<folder>/<file>``). ``secret_headers`` (a token) are sent to ``url`` only, never to a
    redirect's target and never written anywhere. ``progress`` is called with a line (bytes,
    rate, ETA) about once a second and with one saying where the file went. Raises ``DatasetError`` for a refused URL, a
    network failure (message ``MSG_OFFLINE``; the bytes received are kept in ``<dest>.part`` for
    the next attempt) or a size or checksum mismatch (message naming both; nothing kept).
    """
    _check_url(url)
    dest = Path(dest)
    expected = sha256.lower() if sha256 else None
    if dest.is_file() and (expected is None or known_sha256(dest, hash_cache) == expected):
        return dest
    what = what or dest.name
    layout = layout or f"DIR/{dest.parent.name}/{dest.name}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    with _locked(dest.parent):
        # another process may have finished the file while this one waited for the lock
        if dest.is_file() and (expected is None or known_sha256(dest, hash_cache) == expected):
            return dest
        try:
            try:
                actual, received = _fetch(url, part, timeout, secret_headers, progress, dest.name)
            except urllib.error.HTTPError as exc:
                if exc.code != 416 or not part.is_file():
                    raise
                exc.close()  # the .part is not a prefix of the file (416): fetch it whole
                part.unlink()
                actual, received = _fetch(url, part, timeout, secret_headers, progress, dest.name)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            # URLError/HTTPError/TimeoutError/ConnectionError are OSErrors; IncompleteRead is an
            # HTTPException; a malformed URL is a ValueError.
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the response socket
            if part.is_file() and part.stat().st_size == 0:
                part.unlink()
            raise _offline(what, url, layout, exc) from exc
        if (size is not None and received != size) or (expected is not None and actual != expected):
            part.unlink(missing_ok=True)
            detail = (
                f"size mismatch: {received} bytes, expected {size}"
                if size is not None and received != size
                else f"sha256 mismatch: got {actual}, expected the pinned {expected}"
            )
            raise _mismatch(what, url, dest, layout, detail)
        os.replace(part, dest)
    if progress is not None:
        progress(f"saved {what} ({_size(received)}, sha256 {actual[:12]}…) to {dest}")
    return dest


def _fetch(
    url: str,
    part: Path,
    timeout: float,
    secret_headers: Mapping[str, str] | None,
    progress: Callable[[str], None] | None,
    name: str,
) -> tuple[str, int]:
    """Append the body of ``url`` to ``part`` (resuming from its length with a range request);
    return the sha256 and the length of the whole file."""
    have = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(
        url, headers={"User-Agent": "pytest-memeval", "Accept-Encoding": "identity"}
    )
    for key, value in (secret_headers or {}).items():
        request.add_unredirected_header(key, value)  # not sent on to a redirect's host
    if have:
        request.add_header("Range", f"bytes={have}-")
    with _open(request, timeout) as resp:
        _check_url(resp.geturl())  # a redirect must not leave https (checked twice)
        length = _content_length(resp.headers.get("Content-Length"))
        resumed = have and resp.status == 206 and _range_start(resp.headers.get("Content-Range"))
        if resumed != have:  # a full body (200: the range was ignored): start again
            have = 0
        digest = hashlib.sha256()
        mode = "ab" if have else "wb"
        with part.open(mode) as out:
            if have:
                with part.open("rb") as old:
                    for chunk in iter(lambda: old.read(_CHUNK), b""):
                        digest.update(chunk)
            total = have + length if length is not None else None
            meter = _Progress(name, total, have, progress)
            received = have
            while chunk := resp.read(_CHUNK):
                received += len(chunk)
                digest.update(chunk)
                out.write(chunk)
                meter.update(received)
            if total is not None and received != total:
                # a read with a size does not raise IncompleteRead: check it here
                raise http.client.IncompleteRead(b"", total - received)
            meter.update(received, final=True)  # the last figures, when a line was shown
    return digest.hexdigest(), received
