"""Issue 22 points 4 and 6, end to end: the scoreboard first and provenance last, headers that
count what ran after -k/-m, UNSCORED counts with their reason, the top-k warning only where it
applies (each with and without xdist: the ``run_mode`` fixture)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_header_counts_the_questions_left_by_m(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "-m", "temporal", "-p", "no:cacheprovider", *run_mode
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["configuration: demo: 4/15 questions, sha256 *"])
    assert "15/15 questions" not in result.stdout.str()


def test_scoreboard_first_and_provenance_last(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """The scoreboard first, provenance last (terminal and HTML); and bm25 gets no whole-sessions
    warning: it returns turns, on the demo k=10 is below every conversation's turn count (the
    session wording is only for systems that may return sessions; no-memory returns none)."""
    html = pytester.path / "r.html"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25,no-memory",
        f"--memeval-html={html}",
        "-p",
        "no:cacheprovider",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "WARNING budget" not in out
    assert "retrieves whole sessions" not in out
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "memeval summary" in line)
    assert lines[start + 1] == "scoreboard"
    result.stdout.fnmatch_lines(
        [
            "scoreboard",
            "benchmark*system*metric*overall*95% CI*n*errors*unscored*nearest published*role",
            "demo*bm25*f1*[[]*]*15*0*0*-",
            "demo*no-memory*f1*15*0*0*-*control",
            "demo · bm25 — 15 questions",
            "configuration: demo: 15/15 questions*",
        ]
    )
    page = html.read_text()
    assert page.index('id="scoreboard"') < page.index('<h2 id="bench-0">')
    assert page.index('<details class="provenance" id="config">') > page.index('id="questions"')
    # versions as a small table of their own, never a raw JSON blob
    assert "<h4>versions</h4>" in page
    assert '{"' not in page.split('<details class="provenance"')[1].split("</details>")[0]
    board = page.split('id="scoreboard-table"')[1].split("</table>")[0]
    assert "<td>control</td>" in board and board.count("<tr") == 3


def test_usermem_unscored_shows_its_reason(
    pytester: pytest.Pytester, run_mode: list[str], data_dir: Path
) -> None:
    if not (data_dir / "usermem").is_dir():
        pytest.skip("no usermem data")
    result = pytester.runpytest(
        "--memeval=usermem",
        f"--memeval-data={data_dir}",
        "--memsys=bm25",
        "-k",
        "layer1",
        "-p",
        "no:cacheprovider",
        *run_mode,
    )
    out = result.stdout.str()
    found = re.search(r"(\d+) unscored", out.splitlines()[-1])
    assert found is not None, out
    unscored = int(found.group(1))
    result.stdout.fnmatch_lines(
        [
            f"  note: UNSCORED {unscored} of *: no keyword_recall value for the question (a case "
            "without gold facts has no offline keyword_recall; only an LLM judge scores it "
            "(--memeval-judge=PROVIDER:MODEL))"
        ]
    )
