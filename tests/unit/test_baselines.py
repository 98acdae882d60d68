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
