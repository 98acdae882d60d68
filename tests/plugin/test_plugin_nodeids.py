"""Items, node ids, counts and result keys on every supported pytest (the public-API issue)."""

from __future__ import annotations

import pytest
from conftest import question_scores, read_json

from pytest_memeval.plugin.items import item_nodeid
from pytest_memeval.plugin.scheduler import ConversationScheduling

THREE = "--memsys=bm25,full-context,no-memory"


def test_header_and_collect_only_count_every_item(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    result = pytester.runpytest("--memeval=demo", THREE, *run_mode)
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    if "-n" in run_mode and run_mode[run_mode.index("-n") + 1] != "0":
        assert "[45 items]" in out  # xdist's header: "2 workers [45 items]"
    else:
        result.stdout.fnmatch_lines(["collected 45 items"])
    outcomes = result.parseoutcomes()
    assert outcomes.get("wrong", 0) + outcomes.get("correct", 0) == 45

    listed = pytester.runpytest("--memeval=demo", THREE, "--collect-only", "-q", *run_mode)
    assert listed.ret == 0
    lines = [ln for ln in listed.stdout.lines if ln.startswith("memeval/")]
    assert len(lines) == len(set(lines)) == 45
    listed.stdout.fnmatch_lines(["45 tests collected*"])


def test_node_ids_keep_their_documented_form(pytester: pytest.Pytester) -> None:
    items, _ = pytester.inline_genitems("--memeval=demo", THREE, "--memeval-top-k=3,5")
    ids = [item.nodeid for item in items]
    assert len(ids) == len(set(ids)) == 90
    assert "memeval/demo/demo-1/bm25@3::demo-1-q1" in ids
    assert "memeval/demo/demo-2/no-memory@5::demo-2-q7" in ids
    assert all(i.count("::") == 1 and "[" not in i for i in ids)


def test_node_ids_round_trip_through_pytest_s_own_parser(pytester: pytest.Pytester) -> None:
    """pytest 9.2 keeps node ids structured (path, names, params) and parses stored ones back
    (``--lf``, ``--nf``, ``--sw``); an item's id must equal its parsed string."""
    nodeid_mod = pytest.importorskip("_pytest.nodeid", reason="pytest < 9.2 keeps string node ids")
    items, _ = pytester.inline_genitems("--memeval=demo", THREE)
    for item in items:
        assert nodeid_mod.NodeId.parse(item.nodeid) == item.id  # type: ignore[attr-defined]


def test_three_systems_give_three_tables_and_three_runs(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    out = pytester.path / "out.json"
    result = pytester.runpytest("--memeval=demo", THREE, f"--memeval-json={out}", *run_mode)
    assert result.ret == 0, result.stdout.str()
    text = result.stdout.str()
    for system in ("bm25", "full-context", "no-memory"):
        assert f"demo · {system}" in text
    report = read_json(out)
    assert [r["system"] for r in report["runs"]] == ["bm25", "full-context", "no-memory"]
    assert all(len(r["questions"]) == 15 for r in report["runs"])
    versions = report["provenance"]["versions"]
    assert versions["pytest"] == pytest.__version__
    for name in ("python", "pytest-xdist", "nltk", "regex", "PyYAML", "numpy", "scipy"):
        assert versions[name], name
    assert {"openai", "anthropic", "bm25s"} <= set(versions)


COLLIDING_IDS = """
import os
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_logreport(report):
    # what pytest 9.2 did to hand-built items: every system's item got the same node id (on the
    # controller only: xdist's workers keep theirs, or xdist itself would lose track)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        report.nodeid = "memeval/demo/same::same"
    return (yield)
"""


def test_results_survive_colliding_node_ids(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    """Results are keyed by (benchmark, system, flow, question id): even when every report
    carries the same node id, each system's run is complete."""
    pytester.makeconftest(COLLIDING_IDS)
    out = pytester.path / "out.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25,no-memory", f"--memeval-json={out}", *run_mode
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    assert [r["system"] for r in report["runs"]] == ["bm25", "no-memory"]
    scores = question_scores(report)
    assert len(scores) == 30
    assert {s for s, _, _ in scores} == {"bm25", "no-memory"}


def test_resume_is_keyed_by_result_not_node_id(pytester: pytest.Pytester) -> None:
    """A resumed run restores each system's results apart, whatever the node ids were."""
    pytester.makeconftest(COLLIDING_IDS)
    cache = pytester.path / "cache"
    first = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25,no-memory", f"--memeval-cache-dir={cache}"
    )
    assert first.ret == 0
    out = pytester.path / "resumed.json"
    again = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25,no-memory",
        f"--memeval-cache-dir={cache}",
        "--memeval-resume",
        f"--memeval-json={out}",
    )
    again.stdout.fnmatch_lines(["*30 deselected*"])
    report = read_json(out)
    assert [len(r["questions"]) for r in report["runs"]] == [15, 15]


def test_two_systems_with_one_name_are_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_memeval_make_system(config, name):
    if name == "twins":
        from pytest_memeval.systems.builtin import BUILTIN_SYSTEMS
        return [("bm25", BUILTIN_SYSTEMS["no-memory"])]
    return None
"""
    )
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25,twins")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*two systems are both named 'bm25' (from 'bm25' and 'twins')*own name*"]
    )


def test_selection_options_work_on_our_items(pytester: pytest.Pytester) -> None:
    base = ("--memeval=demo", "--memsys=bm25,no-memory", "-p", "cacheprovider")
    deselect = pytester.runpytest(
        *base, "--deselect", "memeval/demo/demo-1/bm25::demo-1-q1", "-k", "demo-1"
    )
    deselect.stdout.fnmatch_lines(["*deselected*"])
    outcomes = deselect.parseoutcomes()
    assert outcomes.get("wrong", 0) + outcomes.get("correct", 0) == 15  # 16 of demo-1, minus 1
    strict = pytester.runpytest(*base, "--memeval-strict")
    failed = strict.parseoutcomes()["failed"]
    rerun = pytester.runpytest(*base, "--memeval-strict", "--lf")
    assert rerun.parseoutcomes()["failed"] == failed
    assert "passed" not in rerun.parseoutcomes()


def test_scheduler_implements_xdist_s_scheduling_protocol() -> None:
    """The scheduler is written against xdist's public protocol (when xdist ships it)."""
    protocol = pytest.importorskip("xdist.scheduler.protocol").Scheduling
    wanted = {n for n in vars(protocol) if not n.startswith("_")}
    missing = {n for n in wanted if not hasattr(ConversationScheduling, n)}
    assert not missing, missing


def test_item_nodeid_is_what_pytest_gives(pytester: pytest.Pytester) -> None:
    """The controller names items that crashed their worker by this function."""
    items, _ = pytester.inline_genitems("--memeval=demo", THREE, "--memeval-top-k=3,5")
    for item in items:
        assert item.nodeid == item_nodeid(item.benchmark, item.question, item.system)  # type: ignore[attr-defined]


def test_no_private_pytest_or_xdist_attributes() -> None:
    import re

    from conftest import REPO

    private = re.compile(
        r"\._(fixturemanager|fixtureinfo|request|repr_failure_py|split_scope|nodeid|obj|"
        r"pyfuncitem|arg2fixturedefs|getobj|initrequest)\b|getfixturedefs|_pytest\b"
    )
    offenders = []
    for path in sorted((REPO / "pytest_memeval").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if private.search(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "private pytest/xdist API:\n" + "\n".join(offenders)
