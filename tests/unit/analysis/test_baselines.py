"""Published baselines: keyed by category id, each with a protocol; checks from
docs/scoring.md#published-baselines."""

from __future__ import annotations

import ast

import pytest
from lme2_upstream import upstream_file_bytes

from pytest_memeval.analysis._baselines import (
    BASELINES,
    Baseline,
    RunProtocol,
    baselines_for,
    comparability_reasons,
)

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
    from pytest_memeval.analysis._baselines import RunProtocol, mark_comparability

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

    from pytest_memeval.report import nearest_published

    f1_far = replace(_by_name("locomo-gpt-3.5-16k"), reasons=())  # 0.378, comparable
    f1_near = replace(_by_name("locomo-rag-obs-top5"), reasons=("protocol: x",))  # 0.414
    judge = replace(_by_name("mem0-j-mem0"), reasons=("metric: y",))
    assert nearest_published(0.41, "f1", [judge, f1_near, f1_far]) is f1_far
    assert nearest_published(0.41, "f1", [judge, f1_near]) is f1_near
    # no figure of the run's metric: the one over the headline's selection (Mem0's categories
    # 1-4), not the LoCoMo paper's all-categories one
    assert nearest_published(0.41, "bleu1", [judge, f1_near]) is judge
    assert nearest_published(0.41, "f1", []) is None


def test_longmemeval_v2_rows_are_the_cited_upstream_frontier() -> None:
    """The eight LongMemEval-V2 rows are ``fixed_frontier_points`` of upstream's
    leaderboard/compute_lafs.py at the pinned commit (read with ast when the snapshot is here),
    labelled with the protocol, the reader and the judge model; a run measured that way is
    comparable, one without the protocol is a reference."""
    rows = {(b.variant, b.system): b.overall for b in BASELINES if b.benchmark == "longmemeval-v2"}
    assert len(rows) == 8
    raw = upstream_file_bytes("leaderboard/compute_lafs.py")
    if raw is not None:
        (node,) = [
            n
            for n in ast.parse(raw).body
            if isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name)
            and n.target.id == "fixed_frontier_points"
        ]
        assert isinstance(node.value, ast.Dict)
        cited = {}
        for key, points in zip(node.value.keys, node.value.values, strict=True):
            assert isinstance(key, ast.Constant) and isinstance(points, ast.List)
            for call in points.elts:
                assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.Constant)
                acc = next(k.value for k in call.keywords if k.arg == "acc")
                assert isinstance(acc, ast.Constant)
                cited[(key.value, call.args[0].value)] = acc.value / 100.0
        assert rows == cited
    b = _by_name("lme2-agentrunbook-c-small")
    assert b.overall == pytest.approx(0.749) and b.metric == "judge_lme2_official"
    assert "be15ea6e" in b.source and not b.verified
    same = RunProtocol(
        frozenset({"judge_lme2_official"}),
        "longmemeval-v2",
        "longmemeval-v2-official",
        "gpt-5.2",
        "openai-compatible:Qwen/Qwen3.5-9B",
    )
    assert comparability_reasons(b, same) == []
    other = RunProtocol(frozenset({"lme2_score"}), None, None, None, "extractive")
    reasons = [r.split(":")[0] for r in comparability_reasons(b, other)]
    assert reasons == ["protocol", "judge", "judge model", "answerer", "metric"]
    medium = {x.name for x in baselines_for("longmemeval-v2", variant="medium")}
    assert medium == {n for (tier, _), n in _names().items() if tier == "medium"}


def _names() -> dict[tuple[str | None, str], str]:
    return {(b.variant, b.system): b.name for b in BASELINES if b.benchmark == "longmemeval-v2"}


def test_answerer_is_who_answered() -> None:
    """The answerer a baseline is compared with is the one the results name: the system itself
    for replayed answers; two answerers (two systems) never pass for the published one."""
    from pytest_memeval.analysis._baselines import (
        SYSTEM_ANSWERED,
        RunProtocol,
        answerer_label,
        mark_comparability,
    )

    assert answerer_label(["system", "system"], "extractive") == SYSTEM_ANSWERED
    assert answerer_label(["", ""], "extractive") == "extractive"
    assert answerer_label([], None) is None
    mixed = answerer_label(["openai:gpt-4o-mini", "extractive"], "openai:gpt-4o-mini")
    assert mixed == "extractive and openai:gpt-4o-mini"
    mem0 = [_by_name("mem0-j-mem0")]
    run = RunProtocol(
        metrics=frozenset({"judge_mem0_official"}),
        protocol="mem0",
        judge_style="mem0-official",
        judge_model="gpt-4o-mini",
        answerer=mixed,
    )
    (row,) = mark_comparability(mem0, run)
    assert row.reasons == (
        "answerer: published answers by gpt-4o-mini, this run's by extractive and "
        "openai:gpt-4o-mini",
    )


def test_each_longmemeval_and_beam_baseline_needs_its_official_protocol() -> None:
    """What a run needs to stand beside a LongMemEval or BEAM figure (``_needs``, a lookup by
    suite since issue 40): the suite's official protocol, judge and judge model; Mem0's own
    LongMemEval harness is a protocol the plugin does not run."""
    from pytest_memeval.analysis._baselines import BASELINES

    expected = {
        "longmemeval": ("longmemeval", "longmemeval-official", "gpt-4o-2024-08-06"),
        "beam": ("beam", "beam-official", "gpt-4.1-mini"),
    }
    seen = set()
    for b in BASELINES:
        if b.benchmark not in expected:
            continue
        needs = (b.needs_protocol, b.needs_judge_style, b.needs_judge_model)
        if b.name.startswith("lme-mem0"):
            assert needs == ("mem0-memory-benchmarks", None, None), b.name
        else:
            assert needs == expected[b.benchmark], b.name
            seen.add(b.benchmark)
    assert seen == set(expected)


def test_the_figures_live_in_the_homes_and_the_registry_hands_them_in() -> None:
    """Each suite's published rows sit in its home's ``published.py`` (named by the registry,
    ``SUITE_PUBLISHED``); ``analysis.baselines`` holds none of its own and reads them in the
    registry's order, the defaults included."""
    import importlib
    import inspect

    from pytest_memeval.analysis import _baselines as baselines
    from pytest_memeval.benchmarks import SUITE_PUBLISHED

    rows: list[Baseline] = []
    defaults: list[str] = []
    for suite, module_name in SUITE_PUBLISHED.items():
        assert module_name.startswith("pytest_memeval.benchmarks.") and module_name.endswith(
            "._published"
        )
        module = importlib.import_module(module_name)
        assert module.BASELINES and {b.benchmark for b in module.BASELINES} == {suite}
        assert set(module.DEFAULTS) <= {b.name for b in module.BASELINES}
        rows.extend(module.BASELINES)
        defaults.extend(module.DEFAULTS)
    assert tuple(rows) == BASELINES
    assert tuple(defaults) == baselines.DEFAULT_BASELINES
    source = inspect.getsource(baselines)
    assert not any(f'"{b.name}"' in source for b in BASELINES)
