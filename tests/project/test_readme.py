"""The README gets a new user to their own number: it stays short (the reference lives in docs/),
its two set-up commands are what `.ci/run` installs and runs, and its memory-system example runs
as written, from the two places it names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from test_docs import README, REPO, run_command

CI_RUN = REPO / ".ci" / "run"


def _block(marker: str, lang: str) -> str:
    """The fenced block right after ``<!-- marker -->`` in the README (exactly one)."""
    found = re.findall(
        rf"<!-- {re.escape(marker)} -->\s*```{lang}\n(.*?)```",
        README.read_text(encoding="utf-8"),
        re.S,
    )
    assert len(found) == 1, f"README: {len(found)} blocks marked <!-- {marker} -->"
    return str(found[0])


def test_readme_is_under_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines: move reference material to docs/"


def test_readme_names_the_new_features_and_links_their_pages() -> None:
    text = README.read_text(encoding="utf-8")
    for needle in (
        "from pytest_memeval import",
        "--memeval-estimate",
        "docs/scale.md",
        "--memeval-llm-batch",
        "docs/batch.md",
        "memoryagentbench",
        "docs/scoring.md#memoryagentbench",
        "docs/ci.md",
        "docs/options.md",
        "docs/services.md",
        "--memeval-fail-under",
        "--memeval-max-drop",
        "memeval-board",
        "--memeval-keep-runs",
    ):
        assert needle in text, needle


def test_setup_commands_are_what_ci_runs() -> None:
    """`.ci/run` step 1 installs what the README's second set-up command installs and runs exactly
    its test command: change one, change the other."""
    demo = _block("set-up: demo", "bash").strip()
    tests = _block("set-up: tests", "bash").strip()
    assert demo == "pip install -e . && pytest --memeval=demo --memsys=bm25"
    *first, last = tests.splitlines()
    install, _, run = last.partition(" && ")
    m = re.fullmatch(r"MEMEVAL_DATA_DIR=\S+ (python -m pytest.*)", run)
    assert m is not None, run
    test_command = m.group(1)
    ci = CI_RUN.read_text(encoding="utf-8")
    # the lines before it install first (a CPU torch), in CI's order; a comment is for the reader
    installs = [line.split("  #", 1)[0].strip() for line in first] + [install]
    where = [
        ci.find(f"python -m pip install --quiet {i.removeprefix('pip install ')}\n")
        for i in installs
    ]
    assert -1 not in where and where == sorted(where), (installs, where)
    assert f"run_suite latest {test_command} || failed=1\n" in ci


@pytest.mark.parametrize("where", ["conftest.py", "tests/conftest.py"])
def test_readme_memory_system_example_runs(where: str, tmp_path: Path) -> None:
    """The README's `KeywordMemory` conftest, in the rootdir or in `tests/` under
    `testpaths = ["tests"]`, scores on the demo next to bm25 with the README's command."""
    code = _block("example: conftest.py", "python")
    command = _block("runnable with the example above", "bash").strip()
    assert "from pytest_memeval import" in code and "--memsys=keyword" in command
    conftest = tmp_path / where
    conftest.parent.mkdir(parents=True, exist_ok=True)
    conftest.write_text(code, encoding="utf-8")
    if where.startswith("tests/"):
        (tmp_path / "pyproject.toml").write_text(
            '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n', encoding="utf-8"
        )
    proc = run_command(command, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    board = proc.stdout.split("scoreboard", 1)[1].split("\n\n", 1)[0]
    rows = [line.split() for line in board.splitlines() if line.startswith("demo ")]
    assert [r[1] for r in rows] == ["keyword", "bm25"], board
    keyword_f1 = float(rows[0][3])
    assert 0.0 < keyword_f1 <= 1.0
    assert "memeval/demo/demo-1/keyword" in proc.stdout


def test_readme_memory_system_section_ends_with_the_contract(tmp_path: Path) -> None:
    """Section 2 ends with the contract command, and the README's `KeywordMemory` passes it (every
    property holds or, for `thread_safe` and `dump` it does not offer, is skipped)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## 2. Your own system", 1)[1].split("\n## ", 1)[0]
    command = _block("runnable with the example above: contract", "bash").strip()
    assert command == "pytest --memsys=keyword --memeval-contract"
    assert section.rstrip().endswith(f"```bash\n{command}\n```")
    (tmp_path / "conftest.py").write_text(_block("example: conftest.py", "python"), "utf-8")
    proc = run_command(command + " -rs", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "7 passed, 2 skipped" in proc.stdout, proc.stdout[-3000:]
    assert "memeval-contract/keyword" in proc.stdout


def test_readme_github_actions_snippet_is_valid_steps() -> None:
    """The CI gate snippet parses as a list of GitHub Actions steps whose pytest run carries both
    gates, and the full workflow it points at exists."""
    steps = yaml.safe_load(_block("example: github-actions steps", "yaml"))
    assert isinstance(steps, list) and all(isinstance(s, dict) for s in steps)
    assert all(("run" in s) != ("uses" in s) for s in steps)
    runs = " ".join(s["run"] for s in steps if "run" in s)
    for option in ("--memeval-baseline=", "--memeval-max-drop=", "--memeval-fail-under="):
        assert option in runs
    assert (REPO / "examples" / "github-actions" / "memeval.yml").is_file()


def test_readme_lists_every_benchmark_with_its_data_folder() -> None:
    """Each registered benchmark but the shipped demo has a row in the README's table of
    suites, linked to its scoring section, with its folder in DIR and its licence column."""
    from pytest_memeval.benchmarks import available_benchmarks

    text = README.read_text(encoding="utf-8")
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r"^\| \[`([\w-]+)`\]\(docs/scoring\.md#[\w-]+\) \|.*$", text, re.M)
    }
    missing = [b for b in available_benchmarks() if b != "demo" and b not in rows]
    assert missing == [], f"README's table of suites lacks {missing}"
    for name, row in rows.items():
        assert row.count(" | ") == 3, f"README row of {name}: four columns expected: {row}"
