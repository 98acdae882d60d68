"""Issue 40 item 4: ``pytest --help`` shows the plugin's options in the settings' groups (run,
data, LLM, reports and gates, scale, protocol), and a renamed option's old spelling (command line
and ini key) still works, with one deprecation warning naming the new spelling."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_memeval.plugin import GROUPS, OPTIONS

GROUP_NAMES = ("run", "data", "LLM", "reports and gates", "scale", "protocol")


def test_every_option_is_in_exactly_one_of_the_six_groups() -> None:
    headings = [heading for _, heading, _ in GROUPS]
    assert [h.removeprefix("pytest-memeval ").split(":")[0] for h in headings] == list(GROUP_NAMES)
    grouped = [opt.name for _, _, opts in GROUPS for opt in opts]
    assert sorted(grouped) == sorted(o.name for o in OPTIONS)
    assert len(grouped) == len(set(grouped))
    assert all(opts for _, _, opts in GROUPS)


def _help_sections(text: str) -> dict[str, set[str]]:
    """Each ``--help`` section heading (a line ending in ``:`` at column 0) -> its options."""
    sections: dict[str, set[str]] = {}
    current = ""
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1]
            sections[current] = set()
        elif current:
            sections[current].update(re.findall(r"^  (--(?:memeval|memsys)[\w-]*)", line))
    return sections


def test_help_lists_each_option_under_its_group(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    result = pytester.runpytest("--help", *run_mode)
    assert result.ret == 0, result.stderr.str()
    text = result.stdout.str()
    sections = _help_sections(text)
    for _, heading, opts in GROUPS:
        assert sections.get(heading) == {f"--{o.name}" for o in opts}, heading
    order = [text.index(f"\n{heading}:\n") for _, heading, _ in GROUPS]
    assert order == sorted(order)
    assert "AI-agent memory benchmarks (pytest-memeval)" not in text  # no flat group any more
    # the old spelling works but is not offered
    assert "--memeval-baselines" not in text.replace("--memeval-baselines=all", "")
    assert "--memeval-published-baselines" in text


WARNING = "MemevalDeprecationWarning: {old} is deprecated: use {new}"


def _run_options(cache: Path) -> dict[str, object]:
    (config,) = cache.glob("runs/*/config.json")
    options = json.loads(config.read_text(encoding="utf-8"))["options"]
    assert isinstance(options, dict)
    return options


@pytest.mark.parametrize("given", ["old", "new"])
def test_old_command_line_spelling_works_with_one_warning(
    pytester: pytest.Pytester, run_mode: list[str], given: str
) -> None:
    name = "memeval-baselines" if given == "old" else "memeval-published-baselines"
    cache = pytester.path / "c"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        f"--{name}=none",
        f"--memeval-cache-dir={cache}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    out = result.stdout.str()
    warning = WARNING.format(old="--memeval-baselines", new="--memeval-published-baselines")
    assert out.count(warning) == (1 if given == "old" else 0), out
    assert _run_options(cache)["memeval_published_baselines"] == "none"


def test_old_ini_key_works_with_one_warning(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    pytester.makeini("[pytest]\nmemeval_baselines = none\n")
    cache = pytester.path / "c"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        f"--memeval-cache-dir={cache}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    out = result.stdout.str()
    warning = WARNING.format(
        old="ini option memeval_baselines", new="ini option memeval_published_baselines"
    )
    assert out.count(warning) == 1, out
    assert _run_options(cache)["memeval_published_baselines"] == "none"


def test_old_spelling_is_an_error_where_warnings_are(pytester: pytest.Pytester) -> None:
    """With ``-W error`` (as this suite runs) the deprecation stops the run with its message."""
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        "--memeval-baselines=none",
        f"--memeval-cache-dir={pytester.path / 'c'}",
        "-W",
        "error::DeprecationWarning",
    )
    assert result.ret != 0
    text = result.stdout.str() + result.stderr.str()
    assert "--memeval-baselines is deprecated: use --memeval-published-baselines" in text


def test_new_spelling_wins_over_the_old(pytester: pytest.Pytester) -> None:
    cache = pytester.path / "c"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-limit=1",
        "--memeval-baselines=nope",
        "--memeval-published-baselines=none",
        f"--memeval-cache-dir={cache}",
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert _run_options(cache)["memeval_published_baselines"] == "none"
