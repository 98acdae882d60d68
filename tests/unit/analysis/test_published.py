"""memeval-check-published: stored per-question scores of published result files recomputed and
compared exactly. The files are built from the shared scorer vectors (values computed by the
official scorers), in the shapes Mem0's evals.py and LoCoMo's task_eval write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_memeval.analysis.check_published import check_published, main
from pytest_memeval.errors import MemevalError

VECTORS = Path(__file__).resolve().parents[3].parent / "shared" / "vectors"


def _vectors(name: str) -> list[dict[str, Any]]:
    path = VECTORS / name
    if not path.is_file():
        pytest.skip(f"golden vectors not found at {path}")
    rows: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return rows


def _mem0_file(tmp_path: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """evaluation_metrics.json as Mem0's evals.py writes it: conversation key -> items."""
    rows = _vectors("amem_vectors.json")
    data: dict[str, list[dict[str, Any]]] = {"0": [], "1": []}
    for i, row in enumerate(rows):
        data[str(i % 2)].append(
            {
                "question": f"q{i}?",
                "answer": str(row["gold"]),
                "response": str(row["pred"]),
                "category": str(1 + i % 4),
                "bleu_score": row["bleu1"],
                "f1_score": row["f1"],
                "llm_score": int(i % 3 != 0),  # evals.py stores the judge's 0/1
            }
        )
    path = tmp_path / "evaluation_metrics.json"
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return path, data


def test_mem0_file_from_official_values_is_all_equal(tmp_path: Path) -> None:
    path, data = _mem0_file(tmp_path)
    check = check_published(path)
    assert check.format == "mem0" and check.ok
    assert check.questions == 36 and not check.skipped
    bleu, f1, judge = check.metrics
    assert (bleu.name, bleu.compared, bleu.equal) == ("bleu_score", 36, 36)
    assert (f1.name, f1.compared, f1.equal) == ("f1_score", 36, 36)
    assert not judge.recomputed and judge.compared == 0
    every = [item["llm_score"] for items in data.values() for item in items]
    assert judge.means()["overall"] == (round(sum(every) / len(every), 4), 36)
    cat1 = [it["llm_score"] for its in data.values() for it in its if it["category"] == "1"]
    assert judge.means()["1"] == (round(sum(cat1) / len(cat1), 4), len(cat1))


def test_a_changed_value_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, data = _mem0_file(tmp_path)
    item = data["1"][3]
    item["bleu_score"] = item["bleu_score"] + 1e-9  # the last digits differ
    path.write_text(json.dumps(data), encoding="utf-8")
    check = check_published(path)
    assert not check.ok
    (mismatch,) = check.metrics[0].mismatches
    assert mismatch.record == "conversation 1, item 3" and mismatch.stored == item["bleu_score"]
    assert check.metrics[1].equal == 36
    assert main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "bleu_score vs our bleu1: 35/36 equal" in out and "conversation 1, item 3" in out


def test_locomo_scores_file(tmp_path: Path) -> None:
    rows = _vectors("locomo_f1_vectors.json")
    qa = [
        {
            "question": f"q{i}?",
            "answer": row["gold"],
            "category": row["category"],
            "gpt-4-turbo_prediction": row["pred"],
            "gpt-4-turbo_f1": row["f1"],
        }
        for i, row in enumerate(rows)
    ]
    path = tmp_path / "41_post_qa_post_clean_adv_scores.json"
    path.write_text(json.dumps({"sample_id": "conv-41", "qa": qa}), encoding="utf-8")
    check = check_published(path)
    assert check.format == "locomo" and check.ok
    (metric,) = check.metrics
    assert (metric.name, metric.compared, metric.equal) == ("gpt-4-turbo_f1", len(rows), len(rows))
    qa[0]["gpt-4-turbo_f1"] = 0.5 if qa[0]["gpt-4-turbo_f1"] != 0.5 else 0.25
    path.write_text(json.dumps([{"qa": qa}]), encoding="utf-8")  # a list of samples
    assert check_published(path).metrics[0].mismatches[0].record == "sample 0, qa 0"


def test_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(MemevalError, match=r"odd\.json: neither Mem0's evals\.py output"):
        check_published(odd)
    cut = tmp_path / "cut.json"
    cut.write_text('{"0": [{"answer": ', encoding="utf-8")
    assert main([str(cut), str(tmp_path / "missing.json")]) == 2
    out = capsys.readouterr().out
    assert "cut.json: invalid or truncated JSON at line 1" in out
    assert "missing.json: file not found" in out


def test_command_line(tmp_path: Path) -> None:
    path, _ = _mem0_file(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "pytest_memeval.analysis.check_published", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "36 questions" in run.stdout and "f1_score vs our set_f1: 36/36 equal" in run.stdout
