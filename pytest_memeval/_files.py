"""User-named files, pytest-free (layer 1): bounded reads and writable-path checks.

Every file a user names (price tables, replay files, prompt templates, baselines, benchmark files,
run folders) is read through :func:`read_bounded`: it refuses what is not a regular file (a
directory, a FIFO, a device such as ``/dev/zero``) with a message saying what it is, and reads at
most ``limit + 1`` bytes, so the size limit holds for the bytes actually read, not for what
``stat()`` claims. Report paths are checked with :func:`report_path_problem` before any question
runs.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from .errors import MemevalError

__all__ = [
    "MAX_DATA_BYTES",
    "FileTooLarge",
    "NotAFile",
    "file_kind",
    "not_a_file",
    "read_bounded",
    "read_bounded_text",
    "report_path_problem",
]


class NotAFile(MemevalError):
    """The path exists but is a directory, a FIFO, a device or a socket."""


class FileTooLarge(MemevalError):
    """More than the allowed number of bytes could be read."""


def file_kind(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


#: whole-file reads of benchmark files stop here (the largest official file read whole is a few MB;
#: LongMemEval S/M are streamed)
MAX_DATA_BYTES = 2 << 30


def not_a_file(path: Path) -> str | None:
    """ "is a directory, not a file" (or a FIFO, a device ...) when ``path`` exists and is not a
    regular file; None when it is one or does not exist (then "not found" is the right word)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    kind = file_kind(mode)
    return "is not a regular file" if kind == "not a regular file" else f"is {kind}, not a file"


def _not_a_file_message(path: Path, mode: int) -> str:
    kind = file_kind(mode)
    if kind == "not a regular file":
        return f"{path} is not a regular file"
    return f"{path} is {kind}, not a file"


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of regular file ``path``, at most ``limit`` of them.

    Raises :class:`NotAFile` for a directory, FIFO or device (opened with ``O_NONBLOCK``, so a FIFO
    with no writer never blocks), :class:`FileTooLarge` when more than ``limit`` bytes are there,
    and ``OSError`` (``FileNotFoundError``, ``PermissionError``) as usual otherwise.
    """
    p = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags)
    except IsADirectoryError:
        raise NotAFile(f"{p} is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO or socket with no peer
            raise NotAFile(_not_a_file_message(p, os.stat(p).st_mode)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFile(_not_a_file_message(p, mode))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:
            raise FileTooLarge(f"{p} is larger than {_size(limit)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_bounded_text(path: str | os.PathLike[str], limit: int, encoding: str = "utf-8") -> str:
    """:func:`read_bounded`, decoded (``UnicodeDecodeError`` propagates, as ``read_text``)."""
    return read_bounded(path, limit).decode(encoding)


def _size(n: int) -> str:
    for unit, factor in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


def report_path_problem(path: Path) -> str | None:
    """Why a report cannot be written to ``path``, or None when it can.

    The parent folder must exist (missing folders are never created: a typo would otherwise
    scatter reports), be a folder, and be writable (checked by creating and removing a probe
    file, which also holds for root and read-only filesystems); ``path`` itself must not be a
    directory or other non-regular file, and an existing file must be writable.
    """
    parent = path.parent
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        return f"{_first_non_folder(parent)} is not a folder"
    except OSError as exc:
        return f"cannot use it ({exc.strerror})"
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            return "is a directory; give a file path (e.g. add /report.json)"
        if not stat.S_ISREG(st.st_mode):
            return f"is {file_kind(st.st_mode)}, not a file; give a regular file path"
    if not parent.is_dir():
        blocker = _first_non_folder(parent)
        if blocker.exists():
            return f"{blocker} is not a folder"
        return f"the folder {parent} does not exist; create it first (mkdir -p {parent})"
    try:
        fd, probe = tempfile.mkstemp(prefix=".memeval-probe-", dir=parent)
    except OSError as exc:
        return f"cannot write in {parent} ({exc.strerror}); choose a writable folder"
    os.close(fd)
    os.unlink(probe)
    if st is not None and not os.access(path, os.W_OK):
        return "the existing file is not writable; choose another path or fix its permissions"
    return None


def _first_non_folder(folder: Path) -> Path:
    """The first ancestor of ``folder`` (from the root down) that exists and is not a folder,
    else ``folder`` itself."""
    for ancestor in reversed((folder, *folder.parents)):
        if ancestor.exists() and not ancestor.is_dir():
            return ancestor
    return folder
