"""JSON report snapshot: the demo run with bm25 is deterministic; volatile fields are dropped.

Regenerate after an intended change with: MEMEVAL_UPDATE_SNAPSHOTS=1 python -m pytest
tests/plugin/test_json_snapshot.py"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

SNAPSHOT = Path(__file__).parent / "snapshots" / "demo_bm25_report.json"
VOLATILE_PROVENANCE = {
    "created",
    "python",
    "pytest",
    "versions",
    "git_commit",
    "run_id",
    "plugin_version",
}


def _stable(report: dict[str, Any]) -> dict[str, Any]:
    from pytest_memeval.report.cards import protocol_card

    for run in report["runs"]:
        run["summary"].pop("latency", None)
        # the card's digest follows every pin of the suite: checked here, kept out of the snapshot
        card = protocol_card(run["benchmark"]).card_id
        assert run["protocol_card"] == card
        run["protocol_card"] = card.split("@")[0] + "@<digest>"
        for q in run["questions"]:
            q.pop("latency", None)
            q.pop("nodeid", None)
            for m in q["memories"]:
                m.pop("score", None)  # bm25s float32 sums: exact only on one BLAS build
    prov = report["provenance"]
    for key in VOLATILE_PROVENANCE:
        prov.pop(key, None)
    for ds in prov.get("datasets", {}).values():
        ds.pop("files", None)
    report.pop("extra", None)
    return report


def test_demo_json_report_matches_snapshot(pytester: pytest.Pytester) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25", f"--memeval-json={out}")
    assert result.ret == 0, result.stdout.str()
    current = _stable(read_json(out))
    if os.environ.get("MEMEVAL_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected
