"""Published baselines: keyed by category id, each with a protocol; checks from
docs/scoring.md#published-baselines."""

from __future__ import annotations

import pytest

from pytest_memeval.analysis.baselines import BASELINES, baselines_for

COUNTS = {1: 282, 2: 321, 3: 96, 4: 841}


def _by_name(name: str):  # type: ignore[no-untyped-def]
    (b,) = [b for b in BASELINES if b.name == name]
    return b


def test_names_unique_and_protocols_stated() -> None:
    names = [b.name for b in BASELINES]
    assert len(names) == len(set(names))
    assert all(b.protocol and b.source for b in BASELINES)


@pytest.mark.parametrize("name", [b.name for b in BASELINES if b.name.startswith("mem0-j-")])
def test_mem0_judge_overall_is_the_1540_weighted_mean(name: str) -> None:
    # docs/scoring.md#published-baselines: the Mem0 paper's overall J equals the weighted mean only
    # under Mem0's
    # id mapping, which is how the columns are stored here (by LoCoMo id)
    b = _by_name(name)
    weighted = sum(b.by_category[k] * n for k, n in COUNTS.items()) / 1540
    assert weighted == pytest.approx(b.overall, abs=0.0002)


def test_mem0_f1_implied_overall() -> None:
    assert _by_name("mem0-f1-mem0").overall == pytest.approx(0.4510, abs=0.0001)
    assert _by_name("mem0-f1-mem0").metric == "set_f1"


def test_locomo_paper_rows_by_id() -> None:
    b = _by_name("locomo-gpt-4-turbo")
    assert b.by_category == pytest.approx({4: 0.234, 1: 0.234, 2: 0.104, 3: 0.246, 5: 0.702})
    assert b.overall_scope == "overall_all" and b.metric == "f1"
    assert "50-conversation" in b.protocol


def test_selection() -> None:
    assert baselines_for("locomo", ("none",)) == []
    assert len(baselines_for("locomo", ("all",))) == len(
        [b for b in BASELINES if b.benchmark == "locomo"]
    )
    assert {b.metric for b in baselines_for("locomo", ("all",), ("f1",))} == {"f1"}
    assert baselines_for("demo") == []
    beam = baselines_for("beam", variant="1M")
    assert [b.name for b in beam] == ["beam-light-1m"]
    assert {b.name for b in baselines_for("longmemeval", variant="oracle")} == {"lme-gpt-4o-oracle"}


def test_label_and_every_reason() -> None:
    """Issue 22: a baseline measured another way is a "reference" with every reason (protocol,
    judge, judge model, answerer, metric), never hidden; one measured the same way is
    "comparable"."""
    from pytest_memeval.analysis.baselines import RunProtocol, mark_comparability

    mem0 = [_by_name("mem0-j-mem0")]
    bare = RunProtocol(metrics=frozenset({"f1"}), answerer="extractive")
    (row,) = mark_comparability(mem0, bare)
    assert row.label == "reference"
    assert [r.split(":")[0] for r in row.reasons] == [
        "protocol",
        "judge",
        "judge model",
        "answerer",
        "metric",
    ]
    assert "this run's by extractive" in row.reasons[3]
    # the first reason stays the one-line not_comparable, without its "protocol:" prefix
    assert row.not_comparable is not None and row.not_comparable.startswith("published under")
    same = RunProtocol(
        metrics=frozenset({"judge_mem0_official"}),
        protocol="mem0",
        judge_style="mem0-official",
        judge_model="gpt-4o-mini",
        answerer="openai:gpt-4o-mini",
    )
    (row,) = mark_comparability(mem0, same)
    assert row.label == "comparable" and row.reasons == () and row.not_comparable is None
    other_model = RunProtocol(**{**same.__dict__, "answerer": "openai:gpt-4.1"})
    (row,) = mark_comparability(mem0, other_model)
    assert row.label == "reference"
    assert row.reasons == ("answerer: published answers by gpt-4o-mini, this run's by "
                           "openai:gpt-4.1",)  # fmt: skip


def test_nearest_published_prefers_comparable_then_same_metric() -> None:
    from dataclasses import replace

    from pytest_memeval.report.tables import nearest_published

    f1_far = replace(_by_name("locomo-gpt-3.5-16k"), reasons=())  # 0.378, comparable
    f1_near = replace(_by_name("locomo-rag-obs-top5"), reasons=("protocol: x",))  # 0.414
    judge = replace(_by_name("mem0-j-mem0"), reasons=("metric: y",))
    assert nearest_published(0.41, "f1", [judge, f1_near, f1_far]) is f1_far
    assert nearest_published(0.41, "f1", [judge, f1_near]) is f1_near
    assert nearest_published(0.41, "bleu1", [judge, f1_near]) is f1_near
    assert nearest_published(0.41, "f1", []) is None
