"""LoCoMo-Plus: the loader (stitching as upstream's evaluation input does), the offline score, and
the official judge's reading of replies, checked against upstream's own functions.

Offline, upstream's outputs come from ``tests/fixtures/locomo_plus/upstream_vectors.json`` (inputs
we wrote, outputs of the pinned upstream files; provenance in the file). With
``MEMEVAL_LOCOMO_PLUS_SOURCE`` set to a checkout of xjtuleeyf/Locomo-Plus at the pinned commit,
``test_equals_upstream_checkout`` imports upstream's files (test code only, never the plugin) and
compares: every recorded vector, and the stitching of the real ``data/locomo_plus.json`` into the
real ``data/locomo10.json`` (turn order, speakers, evidence text) for all 401 items.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.benchmarks import LoadRequest, get_benchmark
from pytest_memeval.benchmarks.locomo import evidence_text, load_locomo_file
from pytest_memeval.benchmarks.locomo_plus import (
    CUE_SESSION,
    pairing_rule,
    parse_locomo_plus,
    parse_time_gap,
)
from pytest_memeval.benchmarks.locomo_plus._judge import (
    LocomoPlusOfficialJudge,
    locomo_plus_category,
    locomo_plus_label,
    locomo_plus_score,
)
from pytest_memeval.benchmarks.locomo_plus._pins import LOCOMO_PLUS_COMMIT, LOCOMO_PLUS_SHA256
from pytest_memeval.errors import DatasetError
from pytest_memeval.protocols import (
    LOCOMO_PLUS,
    LOCOMO_PLUS_JUDGE_FILE,
    SourceText,
    StringRef,
    UpstreamFile,
    extract,
    load_protocol,
)
from pytest_memeval.records import Memory, Prediction

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DATA = FIXTURES / "locomo_plus" / "data"
VECTORS = json.loads((FIXTURES / "locomo_plus" / "upstream_vectors.json").read_text("utf-8"))
PROTOCOL_FIXTURE = FIXTURES / "protocols" / "locomo-plus"


def _load(data_dir: Path = DATA, tmp: Path | None = None) -> Any:
    return get_benchmark("locomo-plus").load(LoadRequest(data_dir, tmp or Path("/nonexistent")))


# --------------------------------------------------------------------------- loader


def test_every_item_is_stitched_into_conversation_i_mod_len() -> None:
    ds = _load()
    assert [q.id for q in ds.questions] == [
        "lp001-conv-a-q1",
        "lp002-conv-b-q1",
        "lp003-conv-a-q1",
    ]
    assert [q.meta["base_conversation"] for q in ds.questions] == ["conv-a", "conv-b", "conv-a"]
    assert {q.category for q in ds.questions} == {"cognitive"}
    assert all(q.gold is None and q.cluster == q.meta["base_conversation"] for q in ds.questions)
    # the rule as applied: i % 2 for this two-conversation file (i % 10 for the official one)
    assert ds.meta["pairing"] == pairing_rule(2)
    assert pairing_rule(2).startswith("item i -> locomo10.json conversation i % 2 (file order;")
    assert set(ds.sha256) == {"locomo-plus/locomo_plus.json", "locomo/locomo10.json"}
    assert ds.meta["sha256_mismatch"] == ["locomo-plus/locomo_plus.json", "locomo/locomo10.json"]


def test_docs_say_the_pairing_rule_the_provenance_records() -> None:
    """docs/scoring.md states the rule as the provenance records it for the official file (one
    place: pairing_rule), names the evaluation input that fixes it and the random script that
    does not, and what it makes of the 401 items."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "scoring.md").read_text("utf-8")
    section = text.split("### LoCoMo-Plus records", 1)[1].split("### LoCoMo-Plus judge", 1)[0]
    assert f"`{pairing_rule(10)}`" in " ".join(section.split())
    for needle in ("locomo_list[i % len(locomo_list)]", "random.choice(locomo_raw)", "41", "40"):
        assert needle in section, needle


def test_cue_goes_time_gap_before_a_query_a_week_after_the_last_session() -> None:
    ds = _load()
    first, second, third = ds.questions
    # conv-a's last session is 1 March 2023 13:15: query 8 March, cue two weeks before
    conv = ds.conversation(first.conversation_id)
    assert first.question_date_raw == "1:15 pm on 8 March, 2023"
    cue = next(s for s in conv.sessions if s.id == CUE_SESSION)
    assert cue.date_raw == "1:15 pm on 22 February, 2023"
    assert [s.id for s in conv.sessions_by_date()] == ["S1", "S2", "CUE", "S3"]
    assert [(t.id, t.speaker) for t in cue.turns] == [("CUE:1", "Ana"), ("CUE:2", "Ben")]
    assert first.evidence == ("CUE:1", "CUE:2")
    assert (
        first.question == "Ana: Someone suggested a shortcut along the ring road, should I take it?"
    )
    assert first.meta["evidence_text"] == (
        "Ana：Since the accident I only cycle on quiet roads.\nBen：That sounds like a sensible rule."
    )
    # B speaks first; the line without A:/B: is dropped; "about a month" is 30 days
    conv2 = ds.conversation(second.conversation_id)
    cue2 = next(s for s in conv2.sessions if s.id == CUE_SESSION)
    assert [t.speaker for t in cue2.turns] == ["Dev", "Cleo"]
    assert second.question.startswith("Dev: There is a sale")
    assert cue2.date is not None and second.question_date is not None
    assert (second.question_date - cue2.date).days == 30
    # three years back: before every session (upstream's cue_idx None)
    conv3 = ds.conversation(third.conversation_id)
    assert conv3.sessions_by_date()[0].id == CUE_SESSION


def test_missing_files_name_the_layout(tmp_path: Path) -> None:
    (tmp_path / "locomo-plus").mkdir()
    with pytest.raises(DatasetError, match=r"DIR/locomo-plus/locomo_plus.json and DIR/locomo/"):
        _load(tmp_path)
    (tmp_path / "locomo-plus" / "locomo_plus.json").write_text("[]")
    with pytest.raises(DatasetError, match="the LoCoMo file not found"):
        _load(tmp_path)


def test_bad_records_name_record_and_field() -> None:
    with pytest.raises(DatasetError) as info:
        parse_locomo_plus(b'[{"cue_dialogue": "A: x", "trigger_query": 3, "time_gap": ""}]', "f")
    assert "[0]" in str(info.value) and "trigger_query" in str(info.value)
    with pytest.raises(DatasetError, match="invalid or truncated JSON"):
        parse_locomo_plus(b"[{", "f")
    with pytest.raises(DatasetError, match="top level must be a list"):
        parse_locomo_plus(b"{}", "f")


def test_time_gap_equals_upstream_vectors() -> None:
    mismatches = [v for v in VECTORS["time_gap"] if parse_time_gap(v["time_gap"]) != v["days"]]
    assert mismatches == []
    assert len(VECTORS["time_gap"]) >= 20


def test_locomo_evidence_text_as_upstream_writes_it() -> None:
    conv = load_locomo_file(DATA / "locomo" / "locomo10.json").conversations[0]
    assert evidence_text(conv, ["D2:1; D2:3"]) == (
        "Ben：My bike got a flat tyre on the way to work.\nBen：Yes, with a kit from the shop."
    )
    assert evidence_text(conv, ["D9:9", "D1", "x:y"]) == (
        "[D9:9] [Missing turn]\n[D1] [Parse error]\n[x:y] [Parse error]"
    )
    questions = load_locomo_file(DATA / "locomo" / "locomo10.json").questions
    assert questions[0].meta["evidence_text"] == "Ana：I started a pottery class this week."


# --------------------------------------------------------------------------- offline score


def test_cue_recall_needs_source_ids() -> None:
    bench = get_benchmark("locomo-plus")
    q = _load().questions[0]
    assert bench.score(q, Prediction("x", (Memory("m"),))) == {}  # no sources: UNSCORED
    half = Prediction("x", (Memory("m", source_ids=("CUE:2", "CUE")),))
    assert bench.score(q, half) == {"cue_recall": 0.5}
    none = Prediction("x", (Memory("m", source_ids=("D1:1",)),))
    assert bench.score(q, none) == {"cue_recall": 0.0}


# --------------------------------------------------------------------------- judge


def test_judge_reading_equals_upstream_vectors() -> None:
    mismatches = []
    for v in VECTORS["judge"]:
        label, reason = locomo_plus_label(v["reply"])
        if (label, reason, locomo_plus_score(label)) != (v["label"], v["reason"], v["score"]):
            mismatches.append(v["reply"])
    assert mismatches == []
    assert len(VECTORS["judge"]) >= 30
    prov = VECTORS["provenance"]
    assert prov["commit"] == LOCOMO_PLUS_COMMIT
    assert prov["files"][LOCOMO_PLUS_JUDGE_FILE.path] == LOCOMO_PLUS_JUDGE_FILE.sha256


def test_entry_strings_are_read_from_a_dict_literal() -> None:
    text = 'T = {\n    "a": """one {x}""",\n    "b": f"{y}",\n}\nU = "s"\n'
    src = SourceText(UpstreamFile("o/r", "0" * 40, "p.py", "0" * 64), text, "mem", "0" * 64)
    assert extract(src, StringRef("entry", "T", key="a")).text == "one {x}"
    from pytest_memeval.protocols import ProtocolSourceError

    with pytest.raises(ProtocolSourceError, match="not a plain string"):
        extract(src, StringRef("entry", "T", key="b"))
    with pytest.raises(ProtocolSourceError, match="no such key"):
        extract(src, StringRef("entry", "T", key="c"))
    with pytest.raises(ProtocolSourceError, match="not a dict literal"):
        extract(src, StringRef("entry", "U", key="a"))


def test_template_per_category_and_prompt_shape() -> None:
    loaded = load_protocol("locomo-plus", source_dir=PROTOCOL_FIXTURE, cache_dir=Path("/x"))
    judge = loaded.judge()
    assert isinstance(judge, LocomoPlusOfficialJudge)
    plus = _load().questions[0]
    locomo = load_locomo_file(DATA / "locomo" / "locomo10.json").questions
    assert [locomo_plus_category(q) for q in (plus, *locomo)] == [
        "Cognitive",
        "single-hop",
        "temporal",
        "multi-hop",
        "adversarial",
        "single-hop",
        "common-sense",
    ]
    prompt = judge.render(plus, "Maybe avoid the ring road.")
    start = loaded.templates["conversation_start"].text.format("A", "B")
    body = loaded.templates["Cognitive"].text.format(
        gold="", pred="Maybe avoid the ring road.", evidence=plus.meta["evidence_text"]
    )
    assert prompt == start + body.strip()
    # an integer gold is formatted by str.format, as upstream does
    assert "Reference: 4\n" in judge.render(locomo[5], "four")


# --------------------------------------------------------------------------- upstream checkout


def _checkout() -> Path:
    value = os.environ.get("MEMEVAL_LOCOMO_PLUS_SOURCE")
    if not value:
        pytest.skip("MEMEVAL_LOCOMO_PLUS_SOURCE is not set (a checkout of xjtuleeyf/Locomo-Plus)")
    return Path(value)


def test_equals_upstream_checkout(tmp_path: Path) -> None:
    root = _checkout()
    sys.path[:0] = [str(root / "evaluation_framework"), str(root / "data")]
    try:
        import build_conv  # type: ignore[import-not-found]
        import unified_input  # type: ignore[import-not-found]
        from task_eval import llm_as_judge  # type: ignore[import-not-found]
    finally:
        del sys.path[:2]
    judged = [
        v["reply"]
        for v in VECTORS["judge"]
        if locomo_plus_label(v["reply"]) != llm_as_judge._parse_judge_response(v["reply"])
        or locomo_plus_score(locomo_plus_label(v["reply"])[0])
        != llm_as_judge.label_to_score(llm_as_judge._parse_judge_response(v["reply"])[0])
    ]
    gaps = [
        v["time_gap"]
        for v in VECTORS["time_gap"]
        if parse_time_gap(v["time_gap"]) != build_conv.parse_time_gap(v["time_gap"])
    ]
    # the real files: our stitching against upstream's build_context / evidence text
    data = tmp_path / "data"
    (data / "locomo-plus").mkdir(parents=True)
    (data / "locomo").mkdir()
    (data / "locomo-plus" / "locomo_plus.json").write_bytes(
        (root / "data" / "locomo_plus.json").read_bytes()
    )
    (data / "locomo" / "locomo10.json").write_bytes((root / "data" / "locomo10.json").read_bytes())
    ds = _load(data, tmp_path)
    plus = json.loads((root / "data" / "locomo_plus.json").read_text("utf-8"))
    raw = json.loads((root / "data" / "locomo10.json").read_text("utf-8"))
    stitched = []
    for i, (item, q) in enumerate(zip(plus, ds.questions, strict=True)):
        ctx = build_conv.build_context(item, raw[i % len(raw)])
        conv = ds.conversation(q.conversation_id)
        ours = [(t.speaker, t.text) for _, t in conv.turns()]
        query = [(t["speaker"], t["text"]) for t in ctx["query_turns"]]
        theirs = [(t["speaker"], t["text"]) for t in ctx["dialogue"]]
        evidence = unified_input._cue_dialogue_to_evidence(item["cue_dialogue"], raw[i % len(raw)])
        if ours + query != theirs or q.meta["evidence_text"] != evidence:
            stitched.append(q.id)
    assert (judged, gaps, stitched) == ([], [], [])
    assert len(ds.questions) == 401 and ds.sha256["locomo-plus/locomo_plus.json"] == (
        LOCOMO_PLUS_SHA256
    )
    assert LOCOMO_PLUS.commit == LOCOMO_PLUS_COMMIT
