"""Each benchmark's home has its README (issue 40): what the suite is, where its data comes from
(naming ``_pins.py`` when the home pins anything), how to run it (a command on that suite), its
metrics / judge / headline, the published figures it is compared with and its known residues;
every relative link in it resolves (a heading of docs/ included), and the guide links it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pytest_memeval
from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS

PACKAGE = Path(pytest_memeval.__file__).resolve().parent
REPO = PACKAGE.parent
SECTIONS = (
    "**What it is.**",
    "**Data and pins",
    "**Run it.**",
    "**Metrics, judge, headline.**",
    "**Published figures",
    "**Known residues",
)
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)")


def _homes() -> dict[str, Path]:
    """suite name -> its home folder (the demo lives in LoCoMo's home)."""
    out = {}
    for name, where in BUILTIN_BENCHMARKS.items():
        module = where.partition(":")[0]
        parts = module.split(".")
        if parts[:2] == ["pytest_memeval", "benchmarks"] and len(parts) > 2:
            folder = PACKAGE / "benchmarks" / parts[2]
            if folder.is_dir():
                out[name] = folder
    return out


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("name", sorted(set(_homes()) - {"demo"}))
def test_each_home_has_its_readme(name: str) -> None:
    home = _homes()[name]
    readme = home / "README.md"
    text = readme.read_text(encoding="utf-8")
    assert all(section in text for section in SECTIONS), name
    assert f"--memeval={name}" in text
    if (home / "_pins.py").is_file():
        assert "[`_pins.py`](_pins.py)" in text
    broken = []
    for target, anchor in LINK.findall(text):
        if target.startswith(("http://", "https://")) or not target:
            continue
        path = (home / target).resolve()
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md":
            lines = path.read_text(encoding="utf-8").splitlines()
            slugs = {_slug(m.group(1)) for line in lines if (m := re.match(r"#+\s+(.*)", line))}
            if anchor not in slugs:
                broken.append(f"{target}#{anchor}")
    assert broken == []
    relative = readme.relative_to(REPO).as_posix()
    assert f"](../{relative})" in (REPO / "docs" / "guide.md").read_text(encoding="utf-8")
