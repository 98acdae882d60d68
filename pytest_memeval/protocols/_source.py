"""Upstream source files of the official protocols: pinned, fetched, checked, parsed.

An upstream file is named by repository, commit, path and sha256 (:class:`UpstreamFile`). It is
read from ``--memeval-protocol-source=DIR`` (a local checkout: ``DIR/<path>``) when given, else
from the cache, else downloaded from ``raw.githubusercontent.com`` at the pinned commit (https
only, via the dataset downloader). Its sha256 must match the pin in every case.

Prompt text is taken out of the file by parsing it with :mod:`ast`: the file is never imported
or executed. :class:`StringRef` says where a string lives (a module constant, a local assignment
inside a function, the ``content`` of a message dict inside a function, or an f-string); the
extracted text is returned as a :class:`Template` (literal text, with the names of any f-string
fields between the pieces).
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..benchmarks import download, file_sha256
from ..errors import DatasetError, MemevalError

__all__ = [
    "MSG_PROTOCOL_OFFLINE",
    "ProtocolSourceError",
    "SourceText",
    "StringRef",
    "Template",
    "UpstreamFile",
    "extract",
    "read_upstream",
]

#: the one line printed when an upstream file can be neither read nor downloaded
MSG_PROTOCOL_OFFLINE = (
    "--memeval-protocol={protocol}: cannot download {url} ({reason}); pass a local checkout of "
    "{repo} at commit {commit} with --memeval-protocol-source=DIR (expects DIR/{path})"
)


class ProtocolSourceError(MemevalError):
    """An upstream file is missing, differs from its pin, or does not hold the expected string."""


@dataclass(frozen=True)
class UpstreamFile:
    """One upstream source file at a pinned commit."""

    repo: str  # owner/name on GitHub
    commit: str  # full 40-hex commit
    path: str  # path inside the repository
    sha256: str  # of the file's bytes at that commit
    host: str = "https://raw.githubusercontent.com"

    @property
    def url(self) -> str:
        return f"{self.host}/{self.repo}/{self.commit}/{self.path}"

    def cache_path(self, cache_dir: Path) -> Path:
        owner, _, name = self.repo.partition("/")
        return cache_dir / "protocols" / f"{owner}+{name}" / self.commit / self.path

    def to_dict(self) -> dict[str, str]:
        return {
            "repo": self.repo,
            "commit": self.commit,
            "path": self.path,
            "url": self.url,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class SourceText:
    """The text of an upstream file and where it was read from."""

    file: UpstreamFile
    text: str
    origin: str  # the local path it was read from
    sha256: str = ""  # of the bytes read (the pin's, unless a local checkout differs)

    @property
    def matches_pin(self) -> bool:
        return self.sha256 == self.file.sha256


def read_upstream(
    file: UpstreamFile,
    *,
    protocol: str,
    source_dir: Path | None,
    cache_dir: Path,
    timeout: float = 30.0,
) -> SourceText:
    """The pinned file's text: from ``source_dir`` when given, else cached or downloaded.

    A download must match the pinned sha256. A local checkout may differ (a fork, an edited
    copy, the upstream-shaped files of the tests): its text is used, ``matches_pin`` is false,
    and the caller warns and records both hashes. Raises :class:`ProtocolSourceError` naming the
    file, the pin and the fix."""
    if source_dir is not None:
        local = Path(source_dir) / file.path
        if not local.is_file():
            raise ProtocolSourceError(
                f"--memeval-protocol-source={source_dir}: {local} does not exist; give a "
                f"checkout of {file.repo} at commit {file.commit} (it must hold {file.path})"
            )
        actual = file_sha256(local)
        path = local
    else:
        dest = file.cache_path(cache_dir)
        try:
            download(file.url, dest, file.sha256, timeout=timeout, what=file.path)
        except DatasetError as exc:
            if "sha256 mismatch" in str(exc):
                raise ProtocolSourceError(
                    f"--memeval-protocol={protocol}: {exc.args[0].split('. ')[0]}; pass a "
                    f"checkout of {file.repo} at {file.commit} with --memeval-protocol-source=DIR"
                ) from None
            cause = exc.__cause__
            reason = str(cause) if cause is not None else str(exc)
            raise ProtocolSourceError(
                MSG_PROTOCOL_OFFLINE.format(
                    protocol=protocol,
                    url=file.url,
                    reason=" ".join(reason.split())[:160],
                    repo=file.repo,
                    commit=file.commit,
                    path=file.path,
                )
            ) from None
        path = dest
        actual = file.sha256
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolSourceError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return SourceText(file=file, text=text, origin=str(path), sha256=actual)


# --------------------------------------------------------------------------- extraction


@dataclass(frozen=True)
class Template:
    """Extracted text: literal ``pieces`` with the f-string field names between them
    (``len(pieces) == len(fields) + 1``); a plain string has no fields."""

    pieces: tuple[str, ...]
    fields: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The literal text with each field written ``{name}`` (what is hashed)."""
        out = [self.pieces[0]]
        for name, piece in zip(self.fields, self.pieces[1:], strict=True):
            out.append("{" + name + "}")
            out.append(piece)
        return "".join(out)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def fill(self, values: dict[str, str]) -> str:
        """The f-string's value for ``values`` (every field must be given)."""
        out = [self.pieces[0]]
        for name, piece in zip(self.fields, self.pieces[1:], strict=True):
            out.append(values[name])
            out.append(piece)
        return "".join(out)


@dataclass(frozen=True)
class StringRef:
    """Where a string lives in an upstream file.

    ``kind``: ``"constant"`` (module-level ``NAME = "..."``), ``"local"`` (every ``NAME = "..."``
    inside function ``function``, in source order; ``index`` picks one), ``"message"`` (the
    ``"content"`` value of the dict assigned to ``NAME`` inside ``function``; may be an
    f-string), ``"entry"`` (the plain string under the literal key ``key`` of the module-level
    dict literal ``NAME = {...}``: LoCoMo-Plus's ``PROMPT_TEMPLATES``; a tuple ``key`` walks
    nested dict literals: MemoryAgentBench's ``BASE_TEMPLATES[dataset]['query'][agent]``),
    ``"f-local"`` (as ``"local"``, but the string may be an f-string of plain names:
    LongMemEval-V2's ``user_prompt``)."""

    kind: str
    name: str
    function: str | None = None
    index: int = 0
    expect_count: int | None = None  # for "local": how many assignments the file must have
    key: str | tuple[str, ...] | None = None  # for "entry": the dict key (or nested keys)

    def describe(self) -> str:
        if self.kind == "entry":
            keys = self.key if isinstance(self.key, tuple) else (self.key,)
            return f"entry {self.name}" + "".join(f"[{k!r}]" for k in keys)
        where = f" in function {self.function}()" if self.function else ""
        return f"{self.kind} {self.name}{where}" + (
            f" #{self.index + 1}" if self.kind in ("local", "f-local") else ""
        )


def _as_template(node: ast.expr) -> Template | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Template((node.value,))
    if isinstance(node, ast.JoinedStr):
        pieces: list[str] = [""]
        fields: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                pieces[-1] += part.value
            elif (
                isinstance(part, ast.FormattedValue)
                and isinstance(part.value, ast.Name)
                and part.conversion == -1
                and part.format_spec is None
            ):
                fields.append(part.value.id)
                pieces.append("")
            else:
                return None
        return Template(tuple(pieces), tuple(fields))
    return None


def _assigned(node: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in node.targets
    ):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.value if node.target.id == name else None
    return None


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    return None


def _walk_in_order(node: ast.AST) -> list[ast.AST]:
    """Every node below ``node`` in source order."""
    found = [n for n in ast.walk(node) if hasattr(n, "lineno")]
    found.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    return found


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160] or type(exc).__name__


def extract(source: SourceText, ref: StringRef) -> Template:
    """The string ``ref`` names in ``source``, by parsing (never executing) the file."""
    where = f"{source.file.repo}@{source.file.commit[:12]}:{source.file.path}"
    try:
        tree = ast.parse(source.text, filename=source.file.path)
    except SyntaxError as exc:
        raise ProtocolSourceError(f"{where}: cannot parse it as Python ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        # an expression nested thousands deep (the parser's stack, then the tree's build, give
        # out), or a NUL byte: not an upstream file
        what = "nested too deeply" if not isinstance(exc, ValueError) else _one_line(exc)
        raise ProtocolSourceError(
            f"{where}: cannot parse it as Python ({what}); use a checkout of the pinned commit"
        ) from None

    def missing(detail: str) -> ProtocolSourceError:
        return ProtocolSourceError(f"{where}: no {ref.describe()} ({detail})")

    if ref.kind == "constant":
        for node in tree.body:
            value = _assigned(node, ref.name)
            if value is not None:
                template = _as_template(value)
                if template is None or template.fields:
                    raise missing("it is not a plain string literal")
                return template
        raise missing("no such module-level assignment")
    if ref.kind == "entry":
        for node in tree.body:
            value = _assigned(node, ref.name)
            if value is None:
                continue
            keys = ref.key if isinstance(ref.key, tuple) else (ref.key,)
            item: ast.expr | None = value
            for wanted in keys:
                if not isinstance(item, ast.Dict):
                    raise missing("it is not a dict literal")
                item = next(
                    (
                        v
                        for k, v in zip(item.keys, item.values, strict=True)
                        if isinstance(k, ast.Constant) and k.value == wanted
                    ),
                    None,
                )
                if item is None:
                    raise missing("no such key")
            assert item is not None
            template = _as_template(item)
            if template is None or template.fields:
                raise missing("its value is not a plain string literal")
            return template
        raise missing("no such module-level assignment")
    if ref.function is None:
        raise missing("a function name is needed")
    func = _function(tree, ref.function)
    if func is None:
        raise missing("no such function")
    values: list[ast.expr] = []
    for found in _walk_in_order(func):
        if isinstance(found, ast.stmt):
            value = _assigned(found, ref.name)
            if value is not None:
                values.append(value)
    if ref.kind in ("local", "f-local"):
        if ref.expect_count is not None and len(values) != ref.expect_count:
            raise missing(f"expected {ref.expect_count} assignments, found {len(values)}")
        if ref.index >= len(values):
            raise missing(f"found {len(values)} assignments")
        template = _as_template(values[ref.index])
        if ref.kind == "f-local" and template is None:
            raise missing("it is not a string or simple f-string")
        if ref.kind == "local" and (template is None or template.fields):
            raise missing("it is not a plain string literal")
        assert template is not None
        return template
    if ref.kind == "message":
        for value in values:
            if isinstance(value, ast.Dict):
                for key, item in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "content":
                        template = _as_template(item)
                        if template is None:
                            raise missing("its content is not a string or simple f-string")
                        return template
        raise missing("no dict with a 'content' key assigned to that name")
    raise missing(f"unknown kind {ref.kind!r}")


def extract_all(source: SourceText, refs: Sequence[StringRef]) -> list[Template]:
    return [extract(source, ref) for ref in refs]
