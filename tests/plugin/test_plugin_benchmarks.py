"""LongMemEval, BEAM, user-memory and third-party benchmarks through the plugin."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")


def test_usermem_replay_reproduces_published_comparison(
    pytester: pytest.Pytester, real_data: Callable[..., Path], run_mode: list[str]
) -> None:
    replay = real_data("usermem", "fixtures", "system_responses.example.json")
    data_dir = replay.parents[2]
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=usermem",
        f"--memeval-data={data_dir}",
        f"--memsys=replay:{replay}",
        f"--memeval-json={out}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    runs = {r["system"]: r["summary"] for r in read_json(out)["runs"]}
    overall = {name: round(s["overall"]["keyword_recall"], 3) for name, s in runs.items()}
    assert overall == {
        "full_context": 1.0,
        "json_cards": 1.0,
        "simple_notes": 0.323,
        "no_memory": 0.0,
    }
    layers = {
        k: round(v["keyword_recall"], 3) for k, v in runs["simple_notes"]["by_category"].items()
    }
    assert layers == {"layer1": 0.417, "layer2": 0.333, "layer3": 0.125}
    # the 52 cases without a replayed answer are skipped, not errors
    assert result.parseoutcomes()["skipped"] == 4 * 52


def test_longmemeval_item_file(pytester: pytest.Pytester, real_data: Callable[..., Path]) -> None:
    path = real_data("longmemeval", "longmemeval_s_items.json")
    data_dir = path.parents[1]
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=longmemeval",
        f"--memeval-data={data_dir}",
        f"--memeval-variant={path}",
        "--memsys=bm25,full-context",
        f"--memeval-json={out}",
        "-n",
        "2",
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    for run in report["runs"]:
        (q,) = run["questions"]
        assert q["id"] == "e47becba"
        assert "recall_all@5" in q["scores"] and "ndcg_any@10" in q["scores"]


def test_beam_100k_subset(
    pytester: pytest.Pytester, real_data: Callable[..., Path], run_mode: list[str]
) -> None:
    data_dir = real_data("beam", "100K").parents[1]
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=beam",
        f"--memeval-data={data_dir}",
        "--memeval-variant=100K",
        "--memsys=bm25",
        "--memeval-limit=3",
        "-k",
        "beam-100K-1- or beam-100K-2-",
        f"--memeval-json={out}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    (run,) = report["runs"]
    assert len(run["questions"]) == 6
    assert report["provenance"]["ingests"] == {"bm25": 2}


ENTRY_POINT_BENCH = """
from __future__ import annotations
from dataclasses import dataclass, field
from datetime import datetime
from pytest_memeval.benchmarks import CategoryInfo, Dataset
from pytest_memeval.records import Conversation, Question, Session, Turn


@dataclass(frozen=True)
class Tiny:
    name: str = "tiny"
    categories: dict = field(default_factory=lambda: {
        "recall": CategoryInfo("recall", "recall", "fact-recall")})
    metrics: tuple = ("exact",)
    pass_metric: str = "exact"

    def load(self, request):
        conv = Conversation("t1", (Session("S1", datetime(2024, 1, 1), (
            Turn("T1", "user", "My cat is called Miso."),)),))
        q = Question("t1-q1", "t1", "recall", "What is my cat called?", "Miso", index=1)
        return Dataset("tiny", [q], [], {"tiny": "0" * 64}, conversations={"t1": conv})

    def score(self, question, prediction):
        return {"exact": float(question.gold.lower() in prediction.text.lower())}


BENCHMARK = Tiny()
"""


def test_benchmark_from_entry_point(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = pytester.path / "site"
    site.mkdir()
    (site / "tinybench.py").write_text(ENTRY_POINT_BENCH)
    dist = site / "tinybench-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinybench\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[pytest_memeval.benchmarks]\ntiny = tinybench:BENCHMARK\n"
    )
    monkeypatch.syspath_prepend(str(site))  # an installed package, as far as entry points go
    out = pytester.path / "r.json"
    result = pytester.runpytest("--memeval=tiny", "--memsys=full-context", f"--memeval-json={out}")
    assert result.ret == 0, result.stdout.str()
    (run,) = read_json(out)["runs"]
    (q,) = run["questions"]
    assert q["scores"]["exact"] == 1.0 and q["status"] == "CORRECT"
    result.stdout.fnmatch_lines(["tiny · full-context — 1 questions"])
    listed = pytester.runpytest("--memeval=nope", "--memsys=bm25")
    listed.stderr.fnmatch_lines(["*unknown benchmark 'nope'*tiny*"])


def test_entry_point_benchmark_with_repeated_question_ids_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, run_mode: list[str]
) -> None:
    """Every benchmark, an entry point's too, gets its question ids checked after ``load``: two
    questions with one id (two items, one result) are a usage error naming the record."""
    site = pytester.path / "site"
    site.mkdir()
    source = ENTRY_POINT_BENCH.replace(
        'return Dataset("tiny", [q], [],', 'return Dataset("tiny", [q, q], [Path("tiny.json")],'
    ).replace(
        "from datetime import datetime", "from datetime import datetime\nfrom pathlib import Path"
    )
    assert source.count("[q, q]") == 1
    (site / "tinybench.py").write_text(source)
    dist = site / "tinybench-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinybench\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[pytest_memeval.benchmarks]\ntiny = tinybench:BENCHMARK\n"
    )
    monkeypatch.syspath_prepend(str(site))
    # the xdist workers' sys.path too
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest("--memeval=tiny", "--memsys=full-context", *run_mode)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    (line,) = [ln for ln in result.stderr.str().splitlines() if ln.startswith("ERROR:")]
    assert "--memeval=tiny: tiny.json, record t1-q1: duplicate question id 't1-q1'" in line, line
    assert "(questions #1 and #2)" in line, line
