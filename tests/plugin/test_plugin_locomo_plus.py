"""``--memeval=locomo-plus`` end to end on fixture files in upstream's format: offline (bm25 and
oracle, without xdist and with ``-n 2``: the same numbers), and judged under
``--memeval-protocol=locomo-plus`` through the loopback server with the real openai SDK, the
requests compared with those the upstream-shaped judge code (tests/fixtures/protocols/
locomo-plus) sends for the same records."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import XDIST_MODES, read_json, status_scores
from llm_server import OPENAI_PATH, LLMServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DATA = FIXTURES / "locomo_plus" / "data"
PROTOCOL = FIXTURES / "protocols" / "locomo-plus"
KEY = "sk-loopback-locomo-plus"

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_offline_bm25_and_oracle_same_numbers_with_xdist(pytester: pytest.Pytester) -> None:
    reports = []
    for mode in XDIST_MODES.values():
        out = pytester.path / f"r{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=locomo-plus",
            f"--memeval-data={DATA}",
            "--memeval-accept-unpinned",  # a small file at the release's path
            "--memsys=bm25,oracle",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret in (0, 1), result.stdout.str()
        reports.append(read_json(out))
    first, second = reports
    assert status_scores(first) == status_scores(second)
    runs = {r["system"]: r for r in first["runs"]}
    assert runs["oracle"]["summary"]["overall"]["cue_recall"] == 1.0
    assert runs["oracle"]["summary"]["overall"]["statuses"]["CORRECT"] == 3
    assert runs["bm25"]["summary"]["overall"]["count"] == 3  # every item collected
    ds = first["provenance"]["datasets"]["locomo-plus"]
    assert ds["questions_total"] == 3
    assert ds["pairing"].startswith("item i -> locomo10.json conversation i % 2 (file order;")


def _reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = messages[-1]["content"]
    if "Cue:" in text:
        return '{"label": "correct", "reason": "mentions the cue"}'
    if "never mentioned" in text:
        return "WRONG"  # not JSON: read by upstream's fallback
    return '```json\n{"label": "partial", "reason": "close"}\n```'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


def _upstream_judge() -> Any:
    """The upstream-shaped judge module of the fixture (test code, never the plugin)."""
    sys.path.insert(0, str(PROTOCOL / "evaluation_framework"))
    try:
        for name in ("task_eval.llm_as_judge", "task_eval.utils", "task_eval.prompt", "task_eval"):
            sys.modules.pop(name, None)
        return importlib.import_module("task_eval.llm_as_judge")
    finally:
        sys.path.remove(str(PROTOCOL / "evaluation_framework"))


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
def test_unified_set_judged_as_upstream(
    pytester: pytest.Pytester, server: LLMServer, mode: str
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=locomo,locomo-plus",
        f"--memeval-data={DATA}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=locomo-plus",
        f"--memeval-protocol-source={PROTOCOL}",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-json={out}",
        *XDIST_MODES[mode],
    )
    assert result.ret in (0, 1), result.stdout.str()
    report = read_json(out)
    questions = [(run["benchmark"], q) for run in report["runs"] for q in run["questions"]]
    assert len(questions) == 6 + 3  # LoCoMo's 6 questions (all 5 categories) + 3 Cognitive
    plugin = sorted(
        json.dumps(r.body, sort_keys=True) for r in server.requests if r.path == OPENAI_PATH
    )
    assert len(plugin) == len(questions)  # every category judged, adversarial included

    server.reset()
    upstream = _upstream_judge()
    names = {1: "multi-hop", 2: "temporal", 3: "common-sense", 4: "single-hop", 5: "adversarial"}
    for bench, q in questions:
        gold = q["gold"]
        upstream.judge_one(
            {
                "category": "Cognitive" if bench == "locomo-plus" else names[q["category_id"]],
                "evidence": _evidence(bench, q["id"]),
                "prediction": q["prediction"],
                "ground_truth": "" if gold is None else gold,
            }
        )
    theirs = sorted(
        json.dumps(r.body, sort_keys=True) for r in server.requests if r.path == OPENAI_PATH
    )
    assert plugin == theirs
    body = server.requests[0].body
    assert body["temperature"] == 0.0 and body["max_tokens"] == 512
    assert [m["role"] for m in body["messages"]] == ["user"]
    # the loopback judge: JSON "correct" for the cue template, a bare WRONG for adversarial (read
    # by upstream's fallback), fenced JSON "partial" for the others (read by the regex)
    want = {"cognitive": 1.0, "adversarial": 0.0}
    got = {q["id"]: q["scores"]["judge_locomo_plus_official"] for _, q in questions}
    assert got == {q["id"]: want.get(q["category"], 0.5) for _, q in questions}
    prov = report["provenance"]
    assert prov["judge_style"] == {
        "locomo": "locomo-plus-official",
        "locomo-plus": "locomo-plus-official",
    }
    assert prov["protocol"]["name"] == "locomo-plus"


def _evidence(bench: str, qid: str) -> str:
    """Upstream's evidence text for a question of the fixture files, built from the raw files."""
    raw = json.loads((DATA / "locomo" / "locomo10.json").read_text("utf-8"))
    if bench == "locomo-plus":
        plus = json.loads((DATA / "locomo-plus" / "locomo_plus.json").read_text("utf-8"))
        i = int(qid[2:5]) - 1
        conv = raw[i % len(raw)]["conversation"]
        who = {"A": conv["speaker_a"], "B": conv["speaker_b"]}
        lines = [line.strip() for line in plus[i]["cue_dialogue"].split("\n")]
        return "\n".join(
            f"{who[line[0]]}：{line[2:].strip()}"
            for line in lines
            if line[:2] in ("A:", "B:") and line[2:].strip()
        )
    sample_id, _, n = qid.rpartition("-q")
    sample = next(s for s in raw if s["sample_id"] == sample_id)
    conv = sample["conversation"]
    out = []
    for ev in sample["qa"][int(n) - 1]["evidence"]:
        for part in (p.strip() for p in ev.split(";")):
            s, _, t = part.partition(":")
            turns = conv.get(f"session_{s[1:]}", [])
            k = int(t) - 1
            out.append(
                f"{turns[k]['speaker']}：{turns[k]['text']}"
                if 0 <= k < len(turns)
                else f"[{part}] [Missing turn]"
            )
    return "\n".join(out)


def test_judge_without_protocol_picks_locomo_plus(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    result = pytester.runpytest(
        "--memeval=locomo-plus",
        f"--memeval-data={DATA}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-judge=openai:gpt-4o-mini",
        "-p",
        "no:xdist",
    )
    # offline: the pinned upstream prompt file cannot be downloaded, and the message says so
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-protocol=locomo-plus: cannot download*"])
    assert server.request_count == 0


@pytest.mark.parametrize("mode", list(XDIST_MODES), ids=list(XDIST_MODES))
@pytest.mark.parametrize("gap", ["1000000 years", "9999999999999 weeks"])
def test_time_gap_past_the_calendar_is_one_line(
    pytester: pytest.Pytester, gap: str, mode: str
) -> None:
    """A ``time_gap`` putting the cue before the year 1 (or past what a timedelta holds) was an
    INTERNALERROR (OverflowError: date value out of range) at collection: a usage error naming
    the file, the record and the field."""
    data = pytester.path / "data"
    for rel in ("locomo/locomo10.json", "locomo-plus/locomo_plus.json"):
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).write_bytes((DATA / rel).read_bytes())
    plus = data / "locomo-plus" / "locomo_plus.json"
    items = json.loads(plus.read_text("utf-8"))
    items[1]["time_gap"] = gap
    plus.write_text(json.dumps(items), "utf-8")
    result = pytester.runpytest(
        "--memeval=locomo-plus", f"--memeval-data={data}", "--memsys=bm25", *XDIST_MODES[mode]
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    (line,) = [ln for ln in result.stderr.str().splitlines() if ln.startswith("ERROR:")]
    assert f"{plus}, record [1], field 'time_gap': '{gap}'" in line, line
    assert "puts the cue before the year 1" in line, line
