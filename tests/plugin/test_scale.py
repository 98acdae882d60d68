"""Running beyond one machine: shards + merge, the three recipes, LLM-cache sharing, reanswer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INNER_ADDOPTS, REPO, question_scores, read_json
from conftest import run_pytest as _pytest

from pytest_memeval.errors import MemevalError
from pytest_memeval.llm import CACHE_FILENAME, Completion, LLMCache, export_cache, import_cache
from pytest_memeval.records import Question
from pytest_memeval.run import Shard, assign_shards, parse_shard, shard_loads, shard_questions

pytestmark = pytest.mark.usefixtures("memeval_env")

EXAMPLES = REPO / "examples"


# ---- pure parts ------------------------------------------------------------------------------


def test_parse_shard() -> None:
    assert parse_shard("2/4") == Shard(2, 4)
    for bad in ("0/4", "5/4", "1/0", "x", "1-4", ""):
        with pytest.raises(MemevalError, match="--memeval-shard"):
            parse_shard(bad)


def test_assignment_is_greedy_balanced_and_deterministic() -> None:
    sizes = {("b", f"c{i}"): n for i, n in enumerate([10, 9, 8, 7, 3, 3, 2, 1])}
    owner = assign_shards(sizes, 3)
    # longest first onto the lightest shard, ties by id then by lowest shard number
    assert owner[("b", "c0")] == 1 and owner[("b", "c1")] == 2 and owner[("b", "c2")] == 3
    loads = [sum(n for k, n in sizes.items() if owner[k] == s) for s in (1, 2, 3)]
    assert sorted(loads) == [14, 14, 15]
    shuffled = dict(reversed(list(sizes.items())))
    assert assign_shards(shuffled, 3) == owner  # independent of input order


def test_every_question_in_exactly_one_shard() -> None:
    qs = [Question(f"q{i}", f"c{i % 7}", "x", "?", "g") for i in range(40)]
    parts = [shard_questions({"b": qs}, Shard(i, 3))["b"] for i in (1, 2, 3)]
    assert sorted(q.id for p in parts for q in p) == sorted(q.id for q in qs)
    for p in parts:  # a conversation never straddles shards
        convs = {q.conversation_id for q in p}
        assert all(
            q.conversation_id not in convs for other in parts if other is not p for q in other
        )


def test_locomo_shard_balance(data_dir: Path) -> None:
    from pytest_memeval.benchmarks import LoadRequest, get_benchmark

    ds = get_benchmark("locomo").load(LoadRequest(data_dir, None, None))
    loads = shard_loads({"locomo": ds.questions}, 4)
    assert sum(loads) == 1986
    print("LoCoMo 1986 questions over 4 shards:", loads)
    assert max(loads) - min(loads) <= 200  # 10 conversations of 105..260 questions


# ---- end to end ------------------------------------------------------------------------------


def _tables(report: dict[str, Any]) -> list[Any]:
    """Every run's tables without the timings (which differ run to run)."""
    out = []
    for run in report["runs"]:
        summary = {k: v for k, v in run["summary"].items() if k != "latency"}
        out.append((run["benchmark"], run["system"], run["flow"], summary))
    return out


def _run_dirs(cache: Path) -> list[str]:
    return [str(p) for p in sorted((cache / "runs").iterdir())]


COUNTING = """
import os, pytest
from pytest_memeval.systems._builtin import BM25System

LOG = os.path.join(os.path.dirname(__file__), "calls.log")

class Counting(BM25System):
    def ingest(self, conversation):
        with open(LOG, "a") as fh:
            fh.write(f"ingest {conversation.id}\\n")
        return super().ingest(conversation)

    def search(self, question, k):
        with open(LOG, "a") as fh:
            fh.write(f"search {question.id}\\n")
        return super().search(question, k)

@pytest.fixture(scope="session")
def counting():
    return Counting()
"""


def _calls(path: Path) -> list[str]:
    log = path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.slow
def test_four_locomo_shards_merge_to_a_single_run(
    pytester: pytest.Pytester, data_dir: Path
) -> None:
    """The done-criterion: 4 shards (each -n 2) merged == one -n 0 run, one ingest per
    conversation in all."""
    pytester.makeconftest(COUNTING)
    common = ["--memeval=locomo", f"--memeval-data={data_dir}", "--memsys=counting"]
    common.append("--memeval-limit=3")
    dirs = []
    for i in range(1, 5):
        cache = pytester.path / f"shard{i}"
        r = _pytest(
            pytester.path,
            *common,
            f"--memeval-shard={i}/4",
            "-n",
            "2",
            f"--memeval-cache-dir={cache}",
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        dirs += _run_dirs(cache)
    ingests = [c for c in _calls(pytester.path) if c.startswith("ingest")]
    assert sorted(ingests) == sorted(set(ingests)) and len(ingests) == 10
    merged = pytester.path / "merged.json"
    r = _pytest(
        pytester.path,
        f"--memeval-merge={','.join(dirs)}",
        f"--memeval-cache-dir={pytester.path / 'mcache'}",
        f"--memeval-json={merged}",
        env={"MEMEVAL_DATA_DIR": str(data_dir)},
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "30 deselected" in r.stdout
    single = pytester.path / "single.json"
    r = _pytest(
        pytester.path,
        *common,
        "-n",
        "0",
        f"--memeval-cache-dir={pytester.path / 's'}",
        f"--memeval-json={single}",
    )
    assert r.returncode == 0, r.stdout[-2000:]
    a, b = read_json(merged), read_json(single)
    assert question_scores(a) == question_scores(b) and len(question_scores(a)) == 30
    assert _tables(a) == _tables(b)
    assert a["provenance"]["ingests"] == {"counting": 10} == b["provenance"]["ingests"]
    memories = {q["id"]: q["memories"] for run in a["runs"] for q in run["questions"]}
    assert memories == {q["id"]: q["memories"] for run in b["runs"] for q in run["questions"]}


def _demo_shards(pytester: pytest.Pytester, n: int, *extra: str) -> list[str]:
    dirs = []
    for i in range(1, n + 1):
        cache = pytester.path / f"c{i}"
        r = _pytest(
            pytester.path,
            "--memeval=demo",
            "--memsys=bm25",
            f"--memeval-shard={i}/{n}",
            f"--memeval-cache-dir={cache}",
            *extra,
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        dirs += _run_dirs(cache)
    return dirs


def test_merge_refuses_missing_duplicated_and_different_shards(pytester: pytest.Pytester) -> None:
    dirs = _demo_shards(pytester, 3)
    merge_cache = f"--memeval-cache-dir={pytester.path / 'm'}"
    r = _pytest(pytester.path, f"--memeval-merge={dirs[0]},{dirs[2]}", merge_cache)
    assert r.returncode == 4 and "missing shard(s) 2/3" in r.stderr, r.stderr
    r = _pytest(
        pytester.path, f"--memeval-merge={dirs[0]},{dirs[1]},{dirs[2]},{dirs[1]}", merge_cache
    )
    assert r.returncode == 4 and "shard 2/3 is given twice" in r.stderr, r.stderr
    # a shard of another configuration (top-k 5): the differing field is named
    other = pytester.path / "other"
    r = _pytest(
        pytester.path,
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-shard=2/3",
        "--memeval-top-k=5",
        f"--memeval-cache-dir={other}",
    )
    assert r.returncode == 0
    r = _pytest(
        pytester.path, f"--memeval-merge={dirs[0]},{_run_dirs(other)[0]},{dirs[2]}", merge_cache
    )
    assert r.returncode == 4 and "different configuration" in r.stderr and "top_k" in r.stderr, (
        r.stderr
    )
    # this session's own option differing from the shards'
    r = _pytest(
        pytester.path, f"--memeval-merge={','.join(dirs)}", "--memeval-limit=2", merge_cache
    )
    assert r.returncode == 4 and "limit" in r.stderr, r.stderr
    r = _pytest(pytester.path, f"--memeval-merge={pytester.path}", merge_cache)
    assert r.returncode == 4 and "each RUN_DIR is a run folder" in r.stderr
    r = _pytest(pytester.path, "--memeval=demo", "--memsys=bm25", "--memeval-shard=5/4")
    assert r.returncode == 4 and "--memeval-shard='5/4'" in r.stderr


def test_empty_shard_succeeds_and_merges(
    pytester: pytest.Pytester, run_mode: list[str], single_demo: dict[str, Any]
) -> None:
    """demo has 2 conversations: 2 of 4 shards are empty, still exit 0, still merge; the merge
    equals the unsharded run."""
    dirs = _demo_shards(pytester, 4, *run_mode)
    merged = pytester.path / "merged.json"
    r = _pytest(
        pytester.path,
        f"--memeval-merge={','.join(dirs)}",
        f"--memeval-json={merged}",
        f"--memeval-cache-dir={pytester.path / 'm'}",
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    _assert_same(merged, single_demo)


# ---- recipes ---------------------------------------------------------------------------------


def _demoize(script: str) -> str:
    """The recipe's own commands, on the offline demo benchmark."""
    return script.replace("--memeval=locomo", "--memeval=demo")


def _bash(script: str, cwd: Path, env: dict[str, str]) -> None:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    full.pop("MEMEVAL_DATA_DIR", None)
    full["PYTEST_ADDOPTS"] = f"{INNER_ADDOPTS} -p no:cacheprovider"
    full["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{full.get('PATH', '')}"
    full.update(env)
    r = subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=full, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


@pytest.fixture(scope="session")
def single_demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The report of one unsharded demo run (bm25, -n 0): what every merge of demo shards must
    equal, in every mode (the scores and tables are the same with and without xdist:
    test_plugin.py). Made once for the recipes and the shard tests."""
    tmp = tmp_path_factory.mktemp("single-demo")
    out = tmp / "single.json"
    r = _pytest(
        tmp,
        "--memeval=demo",
        "--memsys=bm25",
        "-n",
        "0",
        f"--memeval-json={out}",
        f"--memeval-cache-dir={tmp / 'single'}",
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return read_json(out)


def _assert_same(merged: Path, single: dict[str, Any]) -> None:
    report = read_json(merged)
    assert question_scores(report) == question_scores(single)
    assert len(question_scores(report)) == 15
    assert _tables(report) == _tables(single)


@pytest.mark.slow
def test_github_actions_sharded_recipe(
    pytester: pytest.Pytester, single_demo: dict[str, Any]
) -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions" / "memeval-sharded.yml").read_text())
    shard_job, merge_job = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert merge_job["needs"] == "shard"
    shards = shard_job["strategy"]["matrix"]["shard"]
    run = next(s["run"] for s in shard_job["steps"] if s.get("name") == "Run this shard")
    upload = next(s for s in shard_job["steps"] if "upload-artifact" in str(s.get("uses")))
    assert "--memeval-shard=${{ matrix.shard }}/4" in run and len(shards) == 4
    tmp = pytester.path
    for shard in shards:
        _bash(_demoize(run.replace("${{ matrix.shard }}", str(shard))), tmp, {})
        # what actions/upload-artifact + download-artifact (pattern) leave in the merge job
        artifact = tmp / "shards" / f"memeval-shard-{shard}"
        for path in upload["with"]["path"].replace("${{ matrix.shard }}", str(shard)).split():
            src = tmp / path
            dest = artifact / src.relative_to(tmp / f"shard-{shard}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dest)
    merge = next(s["run"] for s in merge_job["steps"] if s.get("name", "").startswith("Merge"))
    _bash(merge, tmp, {})
    _assert_same(tmp / "memeval-report" / "report.json", single_demo)
    assert (tmp / "llm-cache.jsonl").is_file() and (
        tmp / "memeval-report" / "report.html"
    ).is_file()


@pytest.mark.slow
def test_kubernetes_indexed_job_recipe(
    pytester: pytest.Pytester, single_demo: dict[str, Any]
) -> None:
    docs = list(
        yaml.safe_load_all((EXAMPLES / "kubernetes" / "memeval-indexed-job.yaml").read_text())
    )
    jobs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}
    shards = jobs["memeval-shards"]["spec"]
    assert shards["completionMode"] == "Indexed" and shards["completions"] == 4
    (container,) = shards["template"]["spec"]["containers"]
    script = container["args"][0]
    tmp = pytester.path
    results = tmp / "results"
    for index in range(shards["completions"]):
        _bash(
            _demoize(script),
            tmp,
            {"JOB_COMPLETION_INDEX": str(index), "MEMEVAL_RESULTS": str(results)},
        )
    (merge,) = jobs["memeval-merge"]["spec"]["template"]["spec"]["containers"]
    _bash(merge["args"][0], tmp, {"MEMEVAL_RESULTS": str(results)})
    _assert_same(results / "report.json", single_demo)


@pytest.mark.slow
def test_slurm_array_recipe(pytester: pytest.Pytester, single_demo: dict[str, Any]) -> None:
    array = (EXAMPLES / "slurm" / "memeval-array.sbatch").read_text()
    match = re.search(r"^#SBATCH --array=(\d+)-(\d+)$", array, re.M)
    assert match is not None
    tmp = pytester.path
    for task in range(int(match[1]), int(match[2]) + 1):
        _bash(
            _demoize(array), tmp, {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_SUBMIT_DIR": str(tmp)}
        )
    merge = (EXAMPLES / "slurm" / "memeval-merge.sbatch").read_text()
    _bash(merge, tmp, {"SLURM_SUBMIT_DIR": str(tmp)})
    _assert_same(tmp / "memeval-results" / "report.json", single_demo)


# ---- LLM cache sharing -----------------------------------------------------------------------


def test_cache_export_import_roundtrip(tmp_path: Path) -> None:
    a = LLMCache(tmp_path / "a")
    for i in range(5):
        a.put(
            f"{i:064x}", Completion(text=f"verdict {i}", input_tokens=3, output_tokens=1, model="m")
        )
    a.close()
    out = tmp_path / "export.jsonl"
    assert export_cache(tmp_path / "a" / CACHE_FILENAME, out) == 5
    with open(out, "a", encoding="utf-8") as fh:  # hostile lines are skipped, never evaluated
        fh.write(
            '{"key": "../../x", "value": "v"}\nnot json\n{"key": "'
            + "f" * 64
            + '", "value": "{}"}\n'
        )
    b_db = tmp_path / "b" / CACHE_FILENAME
    b = LLMCache(tmp_path / "b")
    b.put(f"{0:064x}", Completion(text="local wins", input_tokens=1, output_tokens=1, model="m"))
    b.close()
    assert import_cache(b_db, out) == (4, 4)
    b = LLMCache(tmp_path / "b")
    assert len(b) == 5
    got = b.get(f"{0:064x}")
    assert got is not None and got.text == "local wins"
    got = b.get(f"{3:064x}")
    assert got is not None and got.text == "verdict 3"
    assert b.integrity_check() == "ok"
    b.close()
    (tmp_path / "bad.jsonl").write_text('{"format": "something else"}\n')
    with pytest.raises(MemevalError, match="not an LLM-cache export"):
        import_cache(b_db, tmp_path / "bad.jsonl")


def test_cache_console_script(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "llm")  # where a run keeps it under --memeval-cache-dir
    cache.put("a" * 64, Completion(text="x", input_tokens=1, output_tokens=1, model="m"))
    cache.close()
    # the function the installed `memeval-cache` command runs, found as pip's script finds it
    (script,) = entry_points(group="console_scripts", name="memeval-cache")
    main = script.load()

    assert main(["export", str(tmp_path / "e.jsonl"), "--cache-dir", str(tmp_path)]) == 0
    assert main(["import", str(tmp_path / "e.jsonl"), "--cache-dir", str(tmp_path / "d")]) == 0
    assert len(LLMCache(tmp_path / "d" / "llm")) == 1


def test_shards_share_judge_calls(pytester: pytest.Pytester) -> None:
    """A shard that imports another machine's export makes no LLM request for cached calls."""
    from llm_server import OPENAI_PATH, LLMServer

    with LLMServer(
        reply=lambda m, model, p: json.dumps({"reasoning": "r", "label": "CORRECT"})
    ) as server:
        env = server.env("sk-test-key")
        args = ["--memeval=demo", "--memsys=bm25", "--memeval-judge=openai:gpt-4o-mini"]
        first = pytester.path / "one"
        export = pytester.path / "x.jsonl"
        r = _pytest(
            pytester.path,
            *args,
            f"--memeval-cache-dir={first}",
            f"--memeval-cache-export={export}",
            env=env,
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert server.count(OPENAI_PATH) == 13
        r = _pytest(
            pytester.path,
            *args,
            "-n",
            "2",
            f"--memeval-cache-dir={pytester.path / 'two'}",
            f"--memeval-cache-import={export}",
            env=env,
        )
        assert r.returncode == 0, r.stdout[-2000:]
        assert server.count(OPENAI_PATH) == 13  # every judge call came from the imported cache
        assert "llm cache: 13 hits, 0 misses" in r.stdout


# ---- reanswer --------------------------------------------------------------------------------

ANSWER_COUNTER = """
import os
from pytest_memeval.answerers import ExtractiveAnswerer

_ANSWER = ExtractiveAnswerer.answer
ANSWERS = os.path.join(os.path.dirname(__file__), "answers.log")

def _counted(self, question, memories):
    with open(ANSWERS, "a") as fh:
        fh.write(question.id + "\\n")
    return _ANSWER(self, question, memories)

ExtractiveAnswerer.answer = _counted
"""


def test_reanswer_makes_no_memory_system_call(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    pytester.makeconftest(COUNTING + ANSWER_COUNTER)
    cache = pytester.path / "cache"
    first, second = pytester.path / "a.json", pytester.path / "b.json"
    args = [
        "--memeval=demo",
        "--memsys=counting",
        f"--memeval-cache-dir={cache}",
        "--memeval-top-k=12",
    ]
    r = _pytest(pytester.path, *args, f"--memeval-json={first}", *run_mode)
    assert r.returncode == 0, r.stdout[-2000:]
    calls = _calls(pytester.path)
    assert len([c for c in calls if c.startswith("search")]) == 15
    (pytester.path / "calls.log").unlink()
    (pytester.path / "answers.log").unlink()
    stored = [
        json.loads(line)
        for line in next((cache / "runs").iterdir())
        .joinpath("results.jsonl")
        .read_text()
        .splitlines()
    ]
    # the full retrieval up to k (bm25 drops turns sharing no word with the question), not 10
    assert max(len(s["memories"]) for s in stored) == 12
    r = _pytest(pytester.path, *args, "--memeval-reanswer", f"--memeval-json={second}", *run_mode)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert _calls(pytester.path) == []  # no ingest, no search
    answers = (pytester.path / "answers.log").read_text().split()
    assert sorted(answers) == sorted(q["id"] for q in read_json(first)["runs"][0]["questions"])
    assert len(answers) == 15
    a, b = read_json(first), read_json(second)
    assert question_scores(a) == question_scores(b)  # the same answerer gives the same answers
    qs = b["runs"][0]["questions"]
    assert all(q["details"]["reanswered_from"] for q in qs)
    assert max(len(q["memories"]) for q in qs) == 10  # reports show the top 10


def test_reanswer_without_a_run_and_with_an_answering_system(pytester: pytest.Pytester) -> None:
    cache = pytester.path / "cache"
    r = _pytest(
        pytester.path,
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={cache}",
        "--memeval-reanswer",
    )
    assert r.returncode == 4 and "--memeval-reanswer: no earlier run" in r.stderr
    pytester.makeconftest(
        """
import pytest
class Own:
    def ingest(self, c): pass
    def search(self, q, k): return []
    def answer(self, q): return "x"
@pytest.fixture(scope="session")
def own():
    return Own()
"""
    )
    assert (
        _pytest(
            pytester.path, "--memeval=demo", "--memsys=own", f"--memeval-cache-dir={cache}"
        ).returncode
        == 0
    )
    r = _pytest(
        pytester.path,
        "--memeval=demo",
        "--memsys=own",
        f"--memeval-cache-dir={cache}",
        "--memeval-reanswer",
    )
    assert "answered demo-1-q1 with its own answer()" in r.stdout
    r = _pytest(
        pytester.path, "--memeval=demo", "--memsys=bm25", "--memeval-reanswer", "--memeval-rejudge"
    )
    assert r.returncode == 4 and "drop --memeval-rejudge" in r.stderr
