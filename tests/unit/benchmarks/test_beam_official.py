"""BEAM's official reading of judge replies (its parse, then json_repair), the order of the
event-ordering calls, and the official composite (conversation-level means)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from beam_reply_corpus import CORPUS, outcomes
from fakes import make_result

from pytest_memeval.analysis import CategoryMeta, aggregate_run, baselines_for
from pytest_memeval.benchmarks.beam._figures import official_composite
from pytest_memeval.benchmarks.beam._judge import BeamOfficialJudge, beam_official_item
from pytest_memeval.judges import parse_json_response, read_beam_reply
from pytest_memeval.llm import ChatMessage, Completion
from pytest_memeval.protocols import BEAM, Template
from pytest_memeval.records import Question
from pytest_memeval.report import (
    Summary,
    baseline_grid,
    baselines_table,
    fmt_num,
    official_table,
    render_markdown,
    render_summary,
    summary_tables,
)

#: the item score BEAM's loop reads from each corpus reply ("raises": its evaluation aborts);
#: the same under json_repair 0.44.1 and 0.64.6 (tests/unit/benchmarks/beam_reply_corpus.py)
SCORES: dict[str, float | str] = {
    "plain": 1.0,
    "fenced": 0.0,  # int(0.5)
    "fenced-other-language": 1.0,
    "prose-before": 0.0,
    "prose-around": 1.0,
    "nested-braces": 1.0,
    "truncated-after-score": 1.0,
    "truncated-mid-key": 0.0,
    "truncated-before-value": "raises",  # int("")
    "single-quotes": 1.0,
    "single-quotes-prose": 0.0,
    "trailing-comma": 1.0,
    "trailing-comma-fenced": 0.0,
    "unquoted-keys": 1.0,
    "string-score": "raises",  # int("0.5")
    "python-literals": 1.0,
    "comment-inside": 1.0,
    "two-objects": 0.0,  # the first non-greedy span
    "array": "raises",  # a list has no "score"
    "no-json-words": "raises",
    "no-json-number": "raises",  # 1 is not an object
    "empty": "raises",
    "only-brace": "raises",  # {} has no "score"
    "score-word": "raises",
}


def test_corpus_scores_read_as_beam_reads_them() -> None:
    assert [name for name, _ in CORPUS] == list(SCORES)
    assert {row["name"]: row["score"] for row in outcomes()} == SCORES


def test_parse_json_response_raises_where_beam_raises_and_repair_takes_over() -> None:
    assert parse_json_response('  ```json\n{"score": 1}\n```  ') == {"score": 1}
    assert parse_json_response('x {"a": 1} y {"b": 2}') == {"a": 1}
    with pytest.raises(ValueError, match="No valid JSON"):
        parse_json_response("no json here")
    with pytest.raises(ValueError, match="Found possible JSON"):
        parse_json_response("{'score': 1}")
    # the repair step reads what the parse rejects
    assert read_beam_reply("{'score': 1}") == {"score": 1}
    assert read_beam_reply('{"score": 0.5, "reason": "cut') == {"score": 0.5, "reason": "cut"}


def test_item_outside_event_ordering_truncates_and_event_ordering_keeps_halves() -> None:
    assert beam_official_item('{"score": 0.5}', event_ordering=False) == (0.0, None)
    assert beam_official_item('{"score": 0.5}', event_ordering=True) == (0.5, None)
    value, problem = beam_official_item('{"score": "0.5"}', event_ordering=False)
    assert value == 0.0 and problem is not None and "int()" in problem
    # no JSON: json_repair 0.44.1 repairs it to "" (no 'score'), 0.64.6 to nothing (json.loads
    # raises); BEAM aborts either way, and so it counts 0
    value, problem = beam_official_item("nothing", event_ordering=True)
    assert value == 0.0 and problem is not None


class _Recording:
    """An LLMClient that records every call (its messages) in order."""

    model = "gpt-4.1-mini"

    def __init__(self) -> None:
        self.calls: list[list[ChatMessage]] = []

    def complete(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Completion:
        self.calls.append(list(messages))
        if messages[0].role == "system":
            text = "YES" if messages[1].content.split()[-1] in messages[1].content else "NO"
        elif messages[0].content.startswith("FACTS"):
            text = "not used"
        else:
            text = json.dumps({"score": 1})
        return Completion(text=text, input_tokens=1, output_tokens=1, cached=False, model="m")


def _judge() -> BeamOfficialJudge:
    assert BEAM.judge is not None and BEAM.alignment is not None
    return BeamOfficialJudge(
        Template(("JUDGE <rubric_item> / <llm_response> / <question>",)),
        Template(("SAME?",)),
        Template(("A: ", " B: ", ""), ("first_paragraph", "second_paragraph")),
        BEAM.judge,
        BEAM.alignment,
        Template(("FACTS <question> | <input_text>",)),
    )


def _question(category: str) -> Question:
    return Question(
        id="q1",
        conversation_id="c1",
        question="When <input_text>?",
        gold="a\nb",
        category=category,
        meta={"rubric": ["first thing", "second thing"]},
    )


def test_event_ordering_sends_facts_then_alignment_then_rubric_calls() -> None:
    client = _Recording()
    result = _judge().judge(_question("event_ordering"), "first thing\nsecond thing", client)
    kinds = [
        "facts"
        if c[0].content.startswith("FACTS")
        else "equivalence"
        if c[0].role == "system"
        else "rubric"
        for c in client.calls
    ]
    n_eq = result.details["alignment_calls"]
    assert kinds == ["facts"] + ["equivalence"] * n_eq + ["rubric"] * 2
    # <question> replaced first, then <input_text> (also inside the question, as upstream)
    assert client.calls[0][0].content == (
        "FACTS When first thing\nsecond thing? | first thing\nsecond thing"
    )
    assert result.details["fact_extraction_calls"] == 1


def test_other_categories_send_no_fact_extraction_call() -> None:
    client = _Recording()
    result = _judge().judge(_question("summarization"), "first thing", client)
    assert len(client.calls) == 2 and all(c[0].content.startswith("JUDGE") for c in client.calls)
    assert result.scores["nugget_official"] == 1.0


# --------------------------------------------------------------------------- official composite


def _composite_results() -> list[Any]:
    """Three conversations with unequal question counts (hand-computed in the tests below):

    A: information_extraction 1, 0, 0 (mean 1/3); event_ordering 0.5
    B: information_extraction 1 (mean 1); event_ordering 1, 1 (mean 1) and one unscored
    C: summarization 0 (one question); one NaN (no value)
    """
    rows = [
        ("a1", "A", "information_extraction", 1.0),
        ("a2", "A", "information_extraction", 0.0),
        ("a3", "A", "information_extraction", 0.0),
        ("a4", "A", "event_ordering", 0.5),
        ("b1", "B", "information_extraction", 1.0),
        ("b2", "B", "event_ordering", 1.0),
        ("b3", "B", "event_ordering", 1.0),
        ("b4", "B", "event_ordering", None),
        ("c1", "C", "summarization", 0.0),
        ("c2", "C", "summarization", float("nan")),
    ]
    return [
        make_result(
            qid, scores={"nugget_official": v}, conversation_id=conv, category=cat, benchmark="beam"
        )
        for qid, conv, cat, v in rows
    ]


def test_composite_is_the_mean_over_conversations_of_conversation_means() -> None:
    got = official_composite(_composite_results(), "nugget_official")
    by = {c.category: c for c in got.categories}
    # information_extraction: (1/3 + 1) / 2, not the question mean 2/4
    assert by["information_extraction"].value == pytest.approx(2 / 3)
    assert (by["information_extraction"].conversations, by["information_extraction"].questions) == (
        2,
        4,
    )
    # event_ordering: (0.5 + 1) / 2 = 0.75, not the question mean 2.5 / 3
    assert by["event_ordering"].value == pytest.approx(0.75)
    assert by["summarization"].value == 0.0 and by["summarization"].conversations == 1
    # overall: the mean of the three category values
    assert got.overall == pytest.approx((2 / 3 + 0.75 + 0.0) / 3)
    assert got.counted == 3 and got.unscored == 2  # b4 (None) and c2 (NaN) left out
    assert [c.category for c in got.categories] == [
        "information_extraction",
        "event_ordering",
        "summarization",
    ]
    ordered = official_composite(_composite_results(), "nugget_official", ["summarization"])
    assert ordered.categories[0].category == "summarization"


def test_composite_groups_by_cluster_and_skips_categories_without_values() -> None:
    results = _composite_results()
    # one cluster for everything: the category values become question means
    pooled = [replace(r, cluster="all") for r in results]
    got = official_composite(pooled, "nugget_official")
    assert got.value("information_extraction") == pytest.approx(2 / 4)
    assert got.value("event_ordering") == pytest.approx(2.5 / 3)
    only_none = [make_result("x", scores={"nugget_official": None}, category="abstention")]
    empty = official_composite(only_none, "nugget_official")
    assert empty.value("abstention") is None and empty.overall is None and empty.counted == 0
    assert official_composite([], "nugget_official").overall is None


def test_official_table_json_and_baseline_column() -> None:
    results = _composite_results()
    metas = [CategoryMeta(c, None, "") for c in ("information_extraction", "event_ordering")]
    run = aggregate_run("beam", "bm25", "", results, metas, ["nugget_official"])
    assert official_table(run) is None  # no protocol: no official table
    run.official = official_composite(results, "nugget_official", [r.key for r in run.categories])
    table = official_table(run)
    assert table is not None
    cells = [[c.text for c in row.cells] for row in table.rows]
    assert cells[0] == ["information_extraction", "", "2", "4", fmt_num(2 / 3)]
    assert cells[-1] == ["overall (mean of 3 categories)", "", "", "8", fmt_num(17 / 36)]
    assert "2 questions without a value left out" in table.caption
    summary = run.summary_dict()["beam_official"]
    assert summary["overall"] == pytest.approx(17 / 36)
    assert summary["by_category"]["event_ordering"]["conversations"] == 2
    # the question mean differs: the baselines' column is the official overall
    assert run.overall.metrics["nugget_official"] != pytest.approx(17 / 36)
    chosen = baselines_for("beam", ("beam-light-100k",))
    cols, grid = baseline_grid([run], chosen)
    assert cols == [(run, "nugget_official")]
    overall = next(values for row, values in grid if row.key == "overall")
    assert overall[0] == pytest.approx(17 / 36) and overall[1] == chosen[0].overall
    ie = next(values for row, values in grid if row.key == "information_extraction")
    assert ie[0] == pytest.approx(2 / 3)
    bt = baselines_table([run], chosen)
    # the run's row beside the published one names BEAM's official composite as its metric
    assert bt is not None
    this_run = [c.text for c in bt.rows[0].cells]
    assert this_run[0] == "this run" and "BEAM official" in this_run[2]
    assert this_run[4] == fmt_num(17 / 36)
    text = "\n".join(render_summary(Summary(runs=[run]), {"beam": chosen}, []))
    assert "BEAM official" in text and fmt_num(17 / 36) in text
    assert "BEAM official" in render_markdown(Summary(runs=[run]), {"beam": chosen})
    assert "BEAM official" in summary_tables(Summary(runs=[run]))
