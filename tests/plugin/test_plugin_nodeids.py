"""Items, node ids, counts and result keys on every supported pytest (the public-API issue)."""

from __future__ import annotations

import pytest
from conftest import question_scores, read_json

from pytest_memeval.plugin import ConversationScheduling, item_nodeid

THREE = "--memsys=bm25,full-context,no-memory"


def test_collect_only_counts_every_item(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    """(The header's count of a real run of the three systems, their tables and the versions in
    the report: test_plugin.py::test_demo_end_to_end_same_with_and_without_xdist, which runs
    them in every mode.)"""
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
    carries the same node id, each system's run is complete; and a resumed run (of the plain
    run's store) restores each system's results apart."""
    pytester.makeconftest(COLLIDING_IDS)
    out = pytester.path / "out.json"
    cache = pytester.path / "cache"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25,no-memory",
        f"--memeval-json={out}",
        f"--memeval-cache-dir={cache}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    assert [r["system"] for r in report["runs"]] == ["bm25", "no-memory"]
    scores = question_scores(report)
    assert len(scores) == 30
    assert {s for s, _, _ in scores} == {"bm25", "no-memory"}
    if run_mode:
        return
    resumed_out = pytester.path / "resumed.json"
    again = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25,no-memory",
        f"--memeval-cache-dir={cache}",
        "--memeval-resume",
        f"--memeval-json={resumed_out}",
    )
    again.stdout.fnmatch_lines(["*30 deselected*"])
    resumed = read_json(resumed_out)
    assert [len(r["questions"]) for r in resumed["runs"]] == [15, 15]


def test_two_systems_with_one_name_are_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_memeval_make_system(config, name):
    if name == "twins":
        from pytest_memeval.systems._builtin import BUILTIN_SYSTEMS
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
