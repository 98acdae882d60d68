"""Every shell command in blocks marked `<!-- runnable offline -->`, in README.md and in every
docs/*.md page, runs and exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import INNER_ADDOPTS

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"<!-- runnable offline -->\s*```bash\n(.*?)```", re.S)


def commands(page: Path) -> list[str]:
    """The commands of the page's runnable blocks (one a line, trailing `  # comment` dropped)."""
    out = []
    for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line:
                out.append(line)
    return out


def _cases() -> list[tuple[str, str]]:
    return [(str(p.relative_to(REPO)), c) for p in PAGES for c in commands(p)]


def run_command(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``bash -c command`` in ``cwd`` as a user runs it: no PYTEST_/MEMEVAL_ variables from the
    outer run, this interpreter's scripts first on PATH, the cache under ``cwd``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env["PYTEST_ADDOPTS"] = f"{INNER_ADDOPTS} -p no:cacheprovider --memeval-cache-dir={cwd}/c"
    bindir = Path(sys.executable).parent
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_readme_has_runnable_commands() -> None:
    readme = commands(README)
    assert len(readme) >= 5
    assert "pytest --memeval=demo --memsys=bm25" in readme


def test_docs_pages_have_runnable_commands() -> None:
    """The commands that moved from the README into docs/ are still executed (not vacuous)."""
    docs = [c for where, c in _cases() if where.startswith("docs/")]
    assert len(docs) >= 3
    assert all(c.startswith("pytest --memeval=demo") for c in docs)


@pytest.mark.parametrize(("page", "command"), _cases())
def test_documented_command_runs(page: str, command: str, tmp_path: Path) -> None:
    proc = run_command(command, tmp_path)
    assert proc.returncode == 0, f"{page}: " + proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "memeval summary" in proc.stdout


OPTIONS_PAGE = REPO / "docs" / "options.md"


def _documented_options() -> set[str]:
    """The option names docs/options.md's table names (``--memeval-limit=N`` -> ``memeval-limit``)."""
    rows = [
        ln for ln in OPTIONS_PAGE.read_text(encoding="utf-8").splitlines() if ln.startswith("|")
    ]
    return {m for row in rows for m in re.findall(r"`--((?:memeval|memsys)[\w-]*)", row)}


def test_options_page_lists_every_option_of_the_table() -> None:
    """docs/options.md names every option of the option table, and none that is not in it."""
    from pytest_memeval.plugin import OPTIONS

    declared = {o.name for o in OPTIONS}
    documented = _documented_options()
    assert not declared - documented, f"docs/options.md lacks {sorted(declared - documented)}"
    assert not documented - declared, f"docs/options.md names unknown {documented - declared}"


def test_options_page_lists_every_benchmark() -> None:
    """The ``--memeval=`` row names every registered benchmark."""
    from pytest_memeval.benchmarks import available_benchmarks

    text = OPTIONS_PAGE.read_text(encoding="utf-8")
    row = next(ln for ln in text.splitlines() if ln.startswith("| `--memeval=BENCH"))
    named = set(re.findall(r"`([\w-]+)`", row.split(" | ", 1)[1]))
    missing = [b for b in available_benchmarks() if b not in named]
    assert not missing, f"docs/options.md's --memeval row lacks {missing}"


def test_options_page_and_readme_say_what_limit_and_baselines_do() -> None:
    """``--memeval-limit`` counts per conversation (``select_questions``), and the published
    baselines beyond the default few (Zep, LangMem, A-Mem on LoCoMo) need
    ``--memeval-published-baselines=all`` (formerly ``--memeval-baselines``): both pages say so."""
    from pytest_memeval.analysis import DEFAULT_BASELINES, baselines_for

    only_all = {b.system for b in baselines_for("locomo", ("all",))} - {
        b.system for b in baselines_for("locomo")
    }
    assert {"Zep", "LangMem", "A-Mem"} <= only_all
    assert not {n for n in DEFAULT_BASELINES if "zep" in n or "langmem" in n or "amem" in n}
    for page in (README, OPTIONS_PAGE):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert "--memeval-published-baselines=all" in text, page.name
        assert all(name in text for name in ("Zep", "LangMem", "A-Mem")), page.name
        pattern = r"--memeval-limit=N` [|(] ?the first N questions \**of \**each conversation"
        assert re.search(pattern, text), page.name
