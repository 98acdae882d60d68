"""End to end: --memeval-errata (official, sound-gold and ceiling columns per category),
context-token figures, --memeval-context-budget, the top-k warning and the oracle system; each
run without xdist and with -n 2, with the same numbers."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import question_scores, read_json
from errata_data import write_data

from pytest_memeval.run import count_tokens

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


def _run(pytester: pytest.Pytester, mode: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    data = pytester.path / "data"
    if not data.exists():
        write_data(pytester.path)
    report = pytester.path / f"{mode}.json"
    result = pytester.runpytest(
        "--memeval=locomo",
        f"--memeval-data={data}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        "--memsys=bm25,oracle",
        f"--memeval-json={report}",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "-p",
        "no:cacheprovider",
        *MODES[mode],
        *extra,
    )
    return result, read_json(report) if report.exists() else {}


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "scores": question_scores(report),
        "errata": report["extra"].get("errata"),
        "context": report["extra"]["context"],
        "erratum": {(r["system"], q["id"]): q.get("erratum") for r in report["runs"] for q in r["questions"]},
        "tokens": {
            (r["system"], q["id"]): q["details"].get("context_tokens")
            for r in report["runs"]
            for q in r["questions"]
        },
    }  # fmt: skip


def test_errata_columns_context_tokens_and_warning(pytester: pytest.Pytester) -> None:
    reports = {}
    for mode in MODES:
        result, report = _run(pytester, mode, f"--memeval-errata={pytester.path / 'audit'}")
        assert result.ret == 0, result.stdout.str()[-3000:]
        result.stdout.fnmatch_lines(
            [
                "locomo · bm25 · errata */audit (f1)",
                "category*n*unsound gold*official f1*sound-gold f1*sound n*ceiling",
                "single-hop [[]4[]]*3*1*2*66.67%",
                "multi-hop [[]1[]]*1*0*1*100.00%",
                "temporal [[]2[]]*2*0*2*100.00%",
                "open-domain [[]3[]]*1*1*-*0*0.00%",
                "adversarial [[]5[]]*1*not audited*-*-*-",
                "overall*7*2*5*71.43%",
                "locomo · oracle · errata */audit (f1)",
                "*errata source: */audit — local */audit; 3 entries, 2 score-corrupting.*",
                "locomo · context tokens handed to the answerer (cl100k_base*",
                "system*questions*mean tokens*p50*p95*max*accuracy*Pareto",
                # bm25 retrieves turns: warned at the turn count, worded for turns
                "*WARNING budget: locomo · bm25: top-k 10 >= the turn count of 2 of 2 "
                "conversations (turns per conversation 3-5): it retrieves turns, so it gets the "
                "whole history there*",
            ]
        )
        assert "WARNING budget: locomo · oracle" not in result.stdout.str()
        reports[mode] = report
    assert _stable(reports["no-xdist"]) == _stable(reports["n2"])
    report = reports["n2"]
    for run in report["runs"]:
        assert len(run["questions"]) == 8
        assert all("erratum" in q for q in run["questions"])
        marked = {q["id"]: q["erratum"] for q in run["questions"] if q["erratum"] is not None}
        assert set(marked) == {"conv-a-q2", "conv-a-q3", "conv-b-q2"}
        assert marked["conv-a-q2"]["error_type"] == "HALLUCINATION"
        assert marked["conv-a-q2"]["correct_answer"] == "cello"
        assert marked["conv-a-q3"]["score_corrupting"] is False
    prov = report["provenance"]["errata"]
    assert prov["source"] == "local" and prov["entries"] == 3 and prov["score_corrupting"] == 2
    assert set(prov["files"]) == {
        str(pytester.path / "audit" / f"errors_conv_{i}.json") for i in (0, 1)
    }
    # the oracle hands the answerer exactly the evidence turns: their tokens, nothing else
    oracle = next(r for r in report["runs"] if r["system"] == "oracle")
    q1 = next(q for q in oracle["questions"] if q["id"] == "conv-a-q1")
    assert [m["id"] for m in q1["memories"]] == ["D1:1"]
    assert q1["details"]["context_tokens"] == count_tokens(["Ann: My dog Rex is a beagle."])[0]
    context = {r["system"]: r for r in report["extra"]["context"]["runs"]}
    assert context["oracle"]["pareto"] is True
    assert context["oracle"]["mean"] < context["bm25"]["mean"]
    bm25 = next(r for r in report["runs"] if r["system"] == "bm25")
    tokens = [q["details"]["context_tokens"] for q in bm25["questions"]]
    assert context["bm25"]["mean"] == pytest.approx(sum(tokens) / len(tokens))
    errata = {r["system"]: r for r in report["extra"]["errata"]["runs"]}
    rows = {row["category"]: row for row in errata["bm25"]["rows"]}
    by_cat = bm25["summary"]["by_category"]
    assert rows["single-hop"]["official"]["f1"] == by_cat["single-hop"]["f1"]


def test_html_and_markdown_show_the_overlays(pytester: pytest.Pytester) -> None:
    html = pytester.path / "r.html"
    md = pytester.path / "r.md"
    for mode in MODES:
        result, _ = _run(
            pytester,
            mode,
            f"--memeval-errata={pytester.path / 'audit'}",
            f"--memeval-html={html}",
            f"--memeval-markdown={md}",
        )
        assert result.ret == 0, result.stdout.str()[-3000:]
        page = html.read_text("utf-8")
        assert '<h3 id="tradeoff-locomo">' in page and '<svg class="tradeoff"' in page
        # one front point: its staircase runs from it to the right edge (issue 22: the Pareto
        # line is drawn even then)
        assert page.count("<circle") == 2
        assert re.search(r'<path class="front" d="M[\d.]+,[\d.]+H[\d.]+"', page) is not None
        assert "sound-gold f1" in page and "66.67%" in page and "budget warning" in page
        text = md.read_text("utf-8")
        assert "| single-hop \\[4\\] | 3 | 1 |" in text and "| overall | 7 | 2 |" in text
        assert "**budget warning**" in text and "context tokens handed to the answerer" in text


def test_context_budget_cuts_and_records(pytester: pytest.Pytester) -> None:
    reports = {}
    for mode in MODES:
        result, report = _run(pytester, mode, "--memeval-context-budget=6")
        assert result.ret == 0, result.stdout.str()[-3000:]
        result.stdout.fnmatch_lines(
            ["system*questions*mean tokens*cut by budget 6", "bm25 *8 q, *"]
        )
        reports[mode] = report
        assert "errata" not in report["extra"]
        assert all("erratum" not in q for r in report["runs"] for q in r["questions"])
    assert _stable(reports["no-xdist"]) == _stable(reports["n2"])
    for run in reports["n2"]["runs"]:
        for q in run["questions"]:
            budget = q["details"]["context_budget"]
            assert budget["limit"] == 6 and q["details"]["context_tokens"] <= 6
            assert budget["tokens_after"] == q["details"]["context_tokens"]
            kept = [m["text"] for m in q["memories"]]
            assert sum(count_tokens(kept)) == budget["tokens_after"]
    assert reports["n2"]["extra"]["context"]["budget"] == 6


def test_bad_errata_options_are_usage_errors(pytester: pytest.Pytester) -> None:
    write_data(pytester.path)
    wrong = json.loads((pytester.path / "audit" / "errors_conv_0.json").read_text("utf-8"))
    wrong[0]["question"] = "What instrument does Ann play?"
    bad = pytester.path / "bad.json"
    bad.write_text(json.dumps(wrong), "utf-8")
    result, _ = _run(pytester, "no-xdist", f"--memeval-errata={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --memeval-errata={bad}: *bad.json*entry [[]0[]] locomo_0_qa1*does not match*"]
    )
    result, _ = _run(pytester, "no-xdist", "--memeval-context-budget=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --memeval-context-budget='0': must be >= 1*"])
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25", "--memeval-errata=locomo-audit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --memeval-errata=locomo-audit: this overlay is for the locomo benchmark*"]
    )
