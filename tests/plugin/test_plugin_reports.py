"""Reports, gates and regression through the plugin (pytester, several run modes)."""

from __future__ import annotations

import importlib.util
import xml.etree.ElementTree as ET

import pytest
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def test_bad_gate_is_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-fail-under=demo.overall.f1=>0.5"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--memeval-fail-under" in result.stderr.str()
    assert ">=" in result.stderr.str()  # the grammar is shown


def test_html_markdown_and_junit(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    replay = pytester.path / "replay.json"
    replay.write_text('{{"demo-1-q1": "{}", "demo-1-q2": "x"}}'.format(HOSTILE.replace('"', '\\"')))
    step = pytester.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    html = pytester.path / "r.html"
    md = pytester.path / "r.md"
    junit = pytester.path / "j.xml"
    result = pytester.runpytest(
        "--memeval=demo",
        f"--memsys=replay:{replay}",
        "-k",
        "demo-1-q1 or demo-1-q2",
        f"--memeval-html={html}",
        f"--memeval-markdown={md}",
        f"--junitxml={junit}",
        "-n",
        "2",
    )
    assert result.ret == 0, result.stdout.str()
    page = html.read_text()
    assert "<script>document.title" not in page and "<img src=x" not in page
    assert "http://" not in page.split("<script")[0]
    text = md.read_text()
    assert "| category" in text.lower() or "|category" in text.lower()
    assert "<script>" not in text
    assert step.read_text().strip() == text.strip()
    tree = ET.parse(junit)
    props = {
        (tc.get("classname"), tc.get("name"), p.get("name")): p.get("value")
        for tc in tree.iter("testcase")
        for p in tc.iter("property")
    }
    # the system is the last folder of the node id ('/' in a replay path becomes '_')
    classname = "memeval.demo.demo-1.replay:" + str(replay).replace("/", "_")
    assert props[(classname, "demo-1-q2", "memeval.status")] == "WRONG"
    assert (classname, "demo-1-q2", "memeval.f1") in props
    assert not any(name == "memeval" for _, _, name in props)


def test_gates_and_regression_decide_exit_status(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """A passing gate exits 0 (on the run that saves the baseline), a failing one fails the run;
    a run equal to its baseline passes the regression gate."""
    base = pytester.path / "base.json"
    ok = pytester.runpytest(
        "--memeval=demo",
        "--memsys=full-context",
        "--memeval-fail-under=demo.overall.f1>=0.05",
        f"--memeval-save-baseline={base}",
        *run_mode,
    )
    assert ok.ret == 0, ok.stdout.str()
    assert read_json(base)["schema"].startswith("pytest-memeval-baseline")
    bad = pytester.runpytest(
        "--memeval=demo",
        "--memsys=full-context",
        "--memeval-fail-under=demo.overall.f1>=0.99",
        "--memeval-fail-under=demo.temporal.f1>=0.0",
        *run_mode,
    )
    assert bad.ret == pytest.ExitCode.TESTS_FAILED
    bad.stdout.fnmatch_lines(["*gate failed*demo.overall.f1*0.99*"])
    assert "INTERNALERROR" not in bad.stdout.str()
    same = pytester.runpytest(
        "--memeval=demo",
        "--memsys=full-context",
        f"--memeval-baseline={base}",
        "--memeval-max-drop=f1:2",
        *run_mode,
    )
    assert same.ret == 0, same.stdout.str()
    same.stdout.fnmatch_lines(["memeval: *"])


def test_confidence_intervals_and_readable_report_files(pytester: pytest.Pytester) -> None:
    out = pytester.path / "r.json"
    html = pytester.path / "r.html"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", f"--memeval-json={out}", f"--memeval-html={html}"
    )
    assert result.ret == 0
    by_cat = read_json(out)["runs"][0]["summary"]["by_category"]
    for row in by_cat.values():
        lo, hi = row["ci"]["f1"]
        assert lo <= row["f1"] <= hi
    for path in (out, html):
        assert path.stat().st_mode & 0o044 == 0o044  # group/other may read (umask 022)


def test_result_travels_once_per_question(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    """The full result rides on the report of the phase that produced it; later reports of the
    item (teardown, what JUnit reads) carry only the flat memeval.* properties. The same run
    writes pytest-html's report (when installed): the summary and the columns are there."""
    pytest_html = importlib.util.find_spec("pytest_html") is not None
    log = pytester.path / "dict-reports.txt"
    pytester.makeconftest(
        f"""
        import pytest

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_makereport(item, call):
            report = yield
            for name, value in report.user_properties:
                if name == "memeval" and isinstance(value, dict):
                    with open({str(log)!r}, "a") as fh:
                        fh.write(report.when + "\\n")
            return report
        """
    )
    junit = pytester.path / "junit.xml"
    page_path = pytester.path / "ph.html"
    html_args = [f"--html={page_path}"] if pytest_html else []
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", f"--junitxml={junit}", *html_args, *run_mode
    )
    assert result.ret == 0, result.stdout.str()
    assert log.read_text().split() == ["call"] * 15
    tree = ET.parse(junit)
    statuses = [
        p
        for tc in tree.iter("testcase")
        for p in tc.iter("property")
        if p.get("name") == "memeval.status"
    ]
    assert len(statuses) == 15
    if not pytest_html:
        pytest.skip("pytest-html is not installed: its report was not checked")
    page = page_path.read_text()
    assert "memeval · demo · bm25" in page
    assert "overall_all (all categories)" in page
    assert "status=CORRECT" in page or "status=WRONG" in page
    assert "f1=" in page


def test_every_report_names_the_runs_protocol_card(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    from pytest_memeval.report.cards import card_reference, protocol_card

    out, md, html = (pytester.path / n for n in ("r.json", "r.md", "r.html"))
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-json={out}",
        f"--memeval-markdown={md}",
        f"--memeval-html={html}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    card = protocol_card("demo")
    report = read_json(out)
    assert report["extra"]["protocol_cards"] == {"demo": card_reference(card)}
    assert [run["protocol_card"] for run in report["runs"]] == [card.card_id]
    text = md.read_text()
    assert f"Protocol card: {card.card_id} (docs/protocols.md#card-demo)." in text
    assert "### Protocol cards" in text and f"| demo | {card.card_id} |" in text
    page = html.read_text()
    assert page.count(f'<a href="#card-demo">{card.card_id}</a>') >= 3  # board, run, section
    assert page.count('id="card-demo"') == 1
