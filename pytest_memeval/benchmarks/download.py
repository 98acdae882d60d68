"""Download a pinned benchmark file into the cache: https only, sha256-checked, atomic.

The file is streamed into a temporary file in the destination folder, its sha256 is checked, and
only then is it moved into place with ``os.replace`` (atomic on one file system). A partial or
wrong file is never left at ``dest``; the temporary file is removed on any failure. When ``dest``
already exists with the expected sha256 nothing is requested.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from ..errors import MSG_OFFLINE, DatasetError
from .base import file_sha256

__all__ = ["LOOPBACK_HOSTS", "download", "file_sha256"]

#: hosts for which plain http is allowed (loopback test servers)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

_CHUNK = 1 << 16


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


def download(
    url: str,
    dest: Path,
    sha256: str | None,
    *,
    timeout: float = 30.0,
    what: str | None = None,
    layout: str | None = None,
) -> Path:
    """Fetch ``url`` to ``dest`` (creating parent folders) and return ``dest``.

    ``sha256`` pins the content (hex, case-insensitive); ``None`` accepts any content. ``what`` and
    ``layout`` only shape the offline message (defaults: the file name, ``DIR/<folder>/<file>``).
    Raises ``DatasetError`` for a refused URL, a network failure (message ``MSG_OFFLINE``) or a
    checksum mismatch (message naming both hashes).
    """
    _check_url(url)
    dest = Path(dest)
    expected = sha256.lower() if sha256 else None
    if dest.is_file() and (expected is None or file_sha256(dest) == expected):
        return dest

    what = what or dest.name
    layout = layout or f"DIR/{dest.parent.name}/{dest.name}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    out = os.fdopen(fd, "wb")
    try:
        digest = hashlib.sha256()
        request = urllib.request.Request(
            url, headers={"User-Agent": "pytest-memeval", "Accept-Encoding": "identity"}
        )
        try:
            with out, _open(request, timeout) as resp:
                _check_url(resp.geturl())  # a redirect must not leave https (checked twice)
                expected_len = _content_length(resp.headers.get("Content-Length"))
                received = 0
                while chunk := resp.read(_CHUNK):
                    received += len(chunk)
                    digest.update(chunk)
                    out.write(chunk)
                if expected_len is not None and received != expected_len:
                    # a read with a size does not raise IncompleteRead: check it here
                    raise http.client.IncompleteRead(b"", expected_len - received)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            # URLError/HTTPError/TimeoutError/ConnectionError are OSErrors; IncompleteRead is an
            # HTTPException; a malformed URL is a ValueError.
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()  # it holds the response socket
            raise DatasetError(
                MSG_OFFLINE.format(what=what, url=url, reason=_reason(exc), layout=layout)
            ) from exc
        actual = digest.hexdigest()
        if expected is not None and actual != expected:
            raise DatasetError(
                f"sha256 mismatch for {url}: expected {expected}, got {actual}. The file was not "
                f"saved. The upstream file may have changed; pass a copy you trust with "
                f"--memeval-data=DIR (expects {layout}).",
                path=str(dest),
            )
        os.replace(tmp, dest)
    finally:
        out.close()
        tmp.unlink(missing_ok=True)
    return dest
