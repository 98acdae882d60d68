"""The shared category map: every category of every built-in benchmark is mapped, consistently."""

from __future__ import annotations

import pytest

from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS, get_benchmark
from pytest_memeval.benchmarks._categories import (
    SHARED_CATEGORIES,
    SHARED_CATEGORY,
    shared_category,
)
from pytest_memeval.errors import MemevalError


@pytest.mark.parametrize("name", sorted(BUILTIN_BENCHMARKS))
def test_every_category_of_every_loader_is_mapped(name: str) -> None:
    bench = get_benchmark(name)
    assert bench.categories, f"{name} declares no categories"
    for key, info in bench.categories.items():
        assert key == info.id
        mapped = shared_category(name, info.name)
        assert info.shared == mapped, (name, info.name)
        assert mapped in SHARED_CATEGORIES


def test_table_has_no_stale_entries() -> None:
    declared = {
        (name, info.name)
        for name in BUILTIN_BENCHMARKS
        for info in get_benchmark(name).categories.values()
    }
    assert set(SHARED_CATEGORY) == declared
    assert set(SHARED_CATEGORY.values()) <= set(SHARED_CATEGORIES)


def test_locomo_and_demo_mapping() -> None:
    expected = {
        "multi-hop": "multi-hop",
        "temporal": "temporal",
        "open-domain": "world-knowledge",
        "single-hop": "fact-recall",
        "adversarial": "abstention",
    }
    for bench in ("locomo", "demo"):
        assert {c: shared_category(bench, c) for c in expected} == expected


def test_selected_cross_benchmark_mappings() -> None:
    assert shared_category("longmemeval", "single-session-preference") == "preference"
    assert shared_category("beam", "preference_following") == "preference"
    assert shared_category("longmemeval", "knowledge-update") == "knowledge-update"
    assert shared_category("beam", "knowledge_update") == "knowledge-update"
    assert shared_category("beam", "event_ordering") == "ordering"
    assert shared_category("beam", "abstention") == "abstention"
    assert shared_category("locomo", "adversarial") == "abstention"
    assert shared_category("usermem", "layer3") == "synthesis"
    # the shared set stays small
    assert len(SHARED_CATEGORIES) <= 12


def test_unknown_pair_is_an_error_naming_the_fix() -> None:
    with pytest.raises(MemevalError, match="SHARED_CATEGORY"):
        shared_category("beam", "no-such-ability")
    with pytest.raises(MemevalError, match="'nope'"):
        shared_category("nope", "temporal")
