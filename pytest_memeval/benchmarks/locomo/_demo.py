"""The demo benchmark: two short conversations in the LoCoMo schema, shipped as package data.

Same parser, categories and scoring rules as LoCoMo (:mod:`._loader`); it needs no download and
ignores ``--memeval-data``, so ``pytest --memeval=demo`` works offline in seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from ...records import Prediction, Question
from .._base import CategoryInfo, Dataset, Deviation, LoadRequest
from ._loader import CATEGORIES, METRICS, ParsedLocomo, build_dataset, parse_locomo, score_locomo

__all__ = ["BENCHMARK", "DEMO_FILE", "DEVIATIONS", "DemoBenchmark", "load_demo"]

DEMO_FILE = "demo.json"


def _resource() -> tuple[bytes, str]:
    res = files("pytest_memeval.benchmarks").joinpath("data", DEMO_FILE)
    return res.read_bytes(), str(res)


@functools.lru_cache(maxsize=1)
def load_demo() -> ParsedLocomo:
    """The parsed demo file (parsed once per process)."""
    data, source = _resource()
    return parse_locomo(data, source)


@dataclass(frozen=True, eq=False)
class DemoBenchmark:
    """Two conversations (``demo-1``, ``demo-2``), 15 questions over all five LoCoMo categories."""

    name: str = "demo"
    categories: Mapping[int | str, CategoryInfo] = field(default_factory=lambda: CATEGORIES)
    metrics: Sequence[str] = METRICS
    pass_metric: str = "f1"
    round3_metrics: tuple[str, ...] = ("f1",)  # LoCoMo's rules
    cluster_unit: str = "conversation"

    def load(self, request: LoadRequest) -> Dataset:
        del request  # package data: no download, --memeval-data is ignored
        parsed = load_demo()
        path = Path(str(files("pytest_memeval.benchmarks").joinpath("data", DEMO_FILE)))
        return build_dataset(self.name, parsed, path, DEMO_FILE, {"source": "package"})

    def score(self, question: Question, prediction: Prediction) -> dict[str, float]:
        return score_locomo(question, prediction)

    def packaged_files(self) -> dict[str, tuple[str, bytes]]:
        """The suite's files shipped as package data (no download; it needs no --memeval-data
        folder): file name -> (its path in the source tree, its bytes). The protocol card pins
        them by sha256; the board re-scores the suite without a data folder."""
        data, _ = _resource()
        return {DEMO_FILE: (f"pytest_memeval/benchmarks/data/{DEMO_FILE}", data)}


BENCHMARK = DemoBenchmark()


#: the demo is two LoCoMo-shaped conversations written for the project: LoCoMo's rules apply
DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "not-upstream-data",
        "no upstream release: the file is the project's own package data",
        "scored with LoCoMo's parser, categories and rules (category 5 included); its figures "
        "compare with no published number",
        "locomo",
    ),
)
