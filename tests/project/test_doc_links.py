"""The documentation lives in the repository: nothing in the package points at documents a user who
installs it from an index does not have, and every ``docs/...`` link (README, docstrings, comments,
the docs themselves) names a file and a heading that exist."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pytest_memeval"
DOCS = REPO / "docs"

#: pointers at the design documents the project was started from, which are not shipped
OUTSIDE_DOCS = re.compile(r"\bSCORING\b|\bDESIGN\.md\b|\bSTYLE\.md\b")
#: ... and at the folder next to the checkout that holds them
OUTSIDE_FOLDER = re.compile(r"\.\./shared\b|(?<![\w./-])shared/(?:data|vectors)\b")
#: ``docs/<page>.md`` with an optional ``#anchor``, as written in code and in the README
DOCS_LINK = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")
#: a Markdown link target inside docs/*.md: ``(page.md#anchor)``, ``(#anchor)``, ``(../README.md)``
MD_LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")
#: a repository path in backticks inside docs/*.md (``plugin/_items.py``, ``tests/llm_server.py``)
CODE_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|md|txt|toml|json))`")
_FENCE = re.compile(r"^\s*(?:```+|~~~+)[^`]*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_REPO_ROOTS = ("tests/", "perf/", "docs/", "examples/", "pytest_memeval/")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower-cased, punctuation other than ``-`` and
    ``_`` dropped (backticks included), spaces turned into ``-``."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page (fenced code skipped; repeats get ``-1``, ``-2``)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m is None:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _text_files(root: Path, suffixes: tuple[str, ...] | None = None) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        if suffixes is not None and path.suffix not in suffixes:
            continue
        try:
            path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file
        yield path


def _hits(pattern: re.Pattern[str], files: Iterator[Path]) -> list[str]:
    out = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                out.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    return out


def test_the_package_points_at_no_document_outside_the_repository() -> None:
    files = list(_text_files(PACKAGE))
    assert any(p.suffix == ".py" for p in files) and any(p.suffix == ".txt" for p in files)
    assert _hits(OUTSIDE_DOCS, iter(files)) == []
    assert _hits(OUTSIDE_FOLDER, iter(files)) == []


def test_tests_and_perf_point_at_no_design_document_outside_the_repository() -> None:
    """Tests and perf scripts may read data from a folder next to the checkout (the benchmark files,
    the golden vectors), but their comments point at docs/, never at the unshipped documents."""
    files = [*_text_files(REPO / "tests", (".py",)), *_text_files(REPO / "perf", (".py", ".md"))]
    assert len(files) > 20
    assert _hits(OUTSIDE_DOCS, iter(files)) == []


def _docs_links() -> list[tuple[str, str, str | None]]:
    """``(where, page, anchor)`` of every ``docs/...`` link in the README, the package, the tests,
    the perf scripts and the examples."""
    files = [REPO / "README.md", REPO / "perf" / "README.md"]
    for folder in ("pytest_memeval", "tests", "perf", "examples"):
        files += list(_text_files(REPO / folder, (".py", ".md", ".txt", ".toml")))
    links = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in DOCS_LINK.finditer(line):
                links.append((f"{path.relative_to(REPO)}:{n}", m.group(1), m.group(2)))
    return links


def test_every_docs_link_in_readme_and_code_resolves() -> None:
    links = _docs_links()
    # the README links every page and the code points at scoring.md sections: this is not vacuous
    assert {page for where, page, _ in links if where.startswith("README.md")} >= {
        "index.md",
        "scoring.md",
        "design.md",
        "extending.md",
    }
    assert sum(1 for where, _, a in links if where.startswith("pytest_memeval/") and a) >= 20
    broken = []
    for where, page, anchor in links:
        target = DOCS / page
        if not target.is_file():
            broken.append(f"{where}: docs/{page} does not exist")
        elif anchor is not None and anchor not in anchors(target):
            broken.append(f"{where}: docs/{page} has no heading #{anchor}")
    assert broken == []


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_links_inside_docs_resolve(page: str) -> None:
    source = DOCS / page
    text = source.read_text(encoding="utf-8")
    targets = MD_LINK.findall(text)
    assert targets, f"docs/{page} links nothing"
    broken = []
    for file_part, anchor in targets:
        if file_part.startswith(("http://", "https://", "mailto:")):
            continue
        target = (source.parent / file_part).resolve() if file_part else source
        if not target.exists():
            broken.append(f"({file_part}): no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"({file_part}#{anchor}): no such heading")
    assert broken == []


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_paths_named_in_docs_exist(page: str) -> None:
    """A module or test file the docs name in backticks exists (``plugin/_items.py`` is read below
    ``pytest_memeval/``; ``tests/...``, ``perf/...``, ``docs/...`` below the repository root), so a
    module that moves cannot leave the docs naming its old place."""
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    missing = []
    checked = 0
    for rel in CODE_PATH.findall((DOCS / page).read_text(encoding="utf-8")):
        if rel.startswith(_REPO_ROOTS):
            base = REPO
        elif rel.split("/", 1)[0] in packages:
            base = PACKAGE
        else:
            continue  # a path inside a benchmark's data folder (``fixtures/gold_facts.json``)
        checked += 1
        if not (base / rel).exists():
            missing.append(rel)
    assert checked > 0 and missing == []


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("Set-F1, exact match and BLEU-1", "set-f1-exact-match-and-bleu-1"),
        ("The `embedding` baseline", "the-embedding-baseline"),
        ("Memory systems (`--memsys`)", "memory-systems---memsys"),
        ("One question, end to end", "one-question-end-to-end"),
    ],
)
def test_github_slug(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_anchors_skip_fenced_code_and_number_repeats(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# A\n\n```\n# not a heading\n```\n\n## A\n## B c\n", encoding="utf-8")
    assert anchors(page) == {"a", "a-1", "b-c"}
