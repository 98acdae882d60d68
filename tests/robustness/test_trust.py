"""Issue 26, round three: shard folders, run folders and LLM-cache files come from other machines
and are untrusted data. A merge imports nothing; stored rows are checked against the loaded
dataset and re-scored; a merge missing results fails; a hostile file is one line, never an
INTERNALERROR; an imported cache is tagged and its verdicts can be verified; export never
replaces what is not a regular file."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import read_json, shared_pytester
from conftest import run_pytest as _pytest
from llm_server import OPENAI_PATH, LLMServer

pytestmark = pytest.mark.usefixtures("memeval_env")


def _run(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    """An inner run in this process (as ``_pytest`` reports one): 0.1-0.4 CPU-s where a process
    of its own costs 0.7-2.4 (its interpreter, pytest, the package and the SDKs imported again).
    Only :func:`test_merge_never_imports_a_system` needs a fresh process (below)."""
    result = pytester.runpytest("-p", "no:cacheprovider", *args)
    return subprocess.CompletedProcess(
        list(args), int(result.ret), result.stdout.str(), result.stderr.str()
    )


@pytest.fixture(scope="module")
def demo_shards(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[Path]:
    """The two run folders of a 2-shard demo run (made once; tests work on copies)."""
    dirs = []
    with shared_pytester(request, tmp_path_factory) as tester:
        root = tester.path
        for i in (1, 2):
            r = _run(
                tester,
                "--memeval=demo",
                "--memsys=bm25",
                f"--memeval-shard={i}/2",
                f"--memeval-cache-dir={root / f'c{i}'}",
            )
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            (run,) = (root / f"c{i}" / "runs").iterdir()
            dirs.append(run)
    return dirs


def _copies(demo_shards: list[Path], where: Path) -> list[Path]:
    out = []
    for i, folder in enumerate(demo_shards, 1):
        target = where / f"shard{i}" / folder.name
        shutil.copytree(folder, target)
        out.append(target)
    return out


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def _write_rows(folder: Path, rows: list[dict[str, Any]]) -> None:
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _merge(
    pytester: pytest.Pytester, dirs: list[Path], *args: str, own_process: bool = False
) -> subprocess.CompletedProcess[str]:
    merge = [
        f"--memeval-merge={','.join(str(d) for d in dirs)}",
        f"--memeval-cache-dir={pytester.path / 'merged'}",
        *args,
    ]
    return _pytest(pytester.path, *merge) if own_process else _run(pytester, *merge)


def _one_line_error(r: subprocess.CompletedProcess[str], *needles: str) -> None:
    out = r.stdout + r.stderr
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert r.returncode != 0, out[-2000:]
    for needle in needles:
        assert needle in out, out[-3000:]


# ---- 1: a merge never imports a system ------------------------------------------------------


def test_merge_never_imports_a_system(pytester: pytest.Pytester, demo_shards: list[Path]) -> None:
    dirs = _copies(demo_shards, pytester.path)
    config = json.loads((dirs[0] / "config.json").read_text())
    config["options"]["memsys"] = "s2.evil:make"
    config["system_bases"] = {"s2.evil:make": ["bm25"], "bm25": ["bm25"]}
    (dirs[0] / "config.json").write_text(json.dumps(config))
    evil = pytester.path / "s2"
    evil.mkdir()
    (evil / "__init__.py").write_text("")
    marker = pytester.path / "EVIL_RAN"
    (evil / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\ndef make(): pass\n")
    # a process of its own, started in the folder holding s2/ (on its sys.path, as a user's run
    # has it): an import the merge should not do would succeed there, and be seen
    r = _merge(pytester, dirs, own_process=True)
    assert not marker.exists(), "the merge imported s2/evil.py"
    _one_line_error(r, "differs from the shards'", "memsys")
    # the system name alone, unrecorded: still nothing is imported
    config["system_bases"] = {}
    (dirs[0] / "config.json").write_text(json.dumps(config))
    r = _merge(pytester, dirs, own_process=True)
    assert not marker.exists(), "the merge imported s2/evil.py"
    _one_line_error(r, "memsys")


# ---- 2: stored rows are checked against the dataset and re-scored ----------------------------


def test_merge_rescores_a_forged_row(pytester: pytest.Pytester, demo_shards: list[Path]) -> None:
    dirs = _copies(demo_shards, pytester.path)
    rows = _rows(dirs[0])
    forged = next(r for r in rows if r["status"] == "WRONG")
    truth = dict(forged["scores"])
    forged["status"], forged["scores"]["f1"] = "CORRECT", 1.0
    forged["gold"] = forged["prediction"]  # the gold comes from the dataset, never the row
    _write_rows(dirs[0], rows)
    out = pytester.path / "m.json"
    r = _merge(pytester, dirs, f"--memeval-json={out}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "re-scored" in r.stdout and forged["id"] in r.stdout and "f1 1.0 -> 0.0" in r.stdout
    report = read_json(out)
    (q,) = [q for run in report["runs"] for q in run["questions"] if q["id"] == forged["id"]]
    assert q["status"] == "WRONG" and q["scores"]["f1"] == truth["f1"]
    assert q["gold"] != forged["prediction"]
    assert any(forged["id"] in line for line in report["provenance"]["rescored"])


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({"id": "demo-1-q99"}, "question id 'demo-1-q99' is not a selected question"),
        ({"conversation": "demo-2"}, "conversation 'demo-2' is not the question's"),
        ({"system": "oracle"}, "system 'oracle' is not one of this run's"),
        ({"benchmark": "locomo", "id": "conv-26_q0"}, "benchmark 'locomo' is not in this run"),
    ],
    ids=["invented-id", "other-conversation", "other-system", "locomo-row"],
)
def test_merge_refuses_rows_of_another_dataset(
    pytester: pytest.Pytester, demo_shards: list[Path], edit: dict[str, str], named: str
) -> None:
    """An invented id would raise the score under a header still saying 15/15; a LoCoMo shard
    with the demo fingerprint copied into its config.json holds rows of another dataset."""
    dirs = _copies(demo_shards, pytester.path)
    rows = _rows(dirs[0])
    extra = dict(rows[0]) | edit | {"status": "CORRECT"}
    _write_rows(dirs[0], [*rows, extra])
    r = _merge(pytester, dirs)
    _one_line_error(r, named, str(dirs[0]))


class _FirstRuns:
    """The first run of the resume and rejudge tests below (the same command: the demo, bm25,
    ``--memeval-limit=1``), made once for each xdist mode and copied into each test's folder (five
    runs became two; each test still starts from a run of its own mode)."""

    def __init__(self, request: pytest.FixtureRequest, factory: pytest.TempPathFactory) -> None:
        self._request = request
        self._factory = factory
        self._made: dict[tuple[str, ...], Path] = {}

    def cache(self, pytester: pytest.Pytester, mode: list[str]) -> Path:
        """A copy of the cache folder of ``mode``'s first run, in the test's folder."""
        key = tuple(mode)
        if key not in self._made:
            with shared_pytester(self._request, self._factory) as tester:
                made = tester.path / "cache"
                args = ["--memeval=demo", "--memsys=bm25", "--memeval-limit=1"]
                r = _run(tester, *args, f"--memeval-cache-dir={made}", *mode)
                assert r.returncode == 0, r.stdout[-2000:]
            self._made[key] = made
        cache = pytester.path / "cache"
        shutil.copytree(self._made[key], cache)
        return cache


@pytest.fixture(scope="module")
def first_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> _FirstRuns:
    return _FirstRuns(request, tmp_path_factory)


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_resume_rescores_a_forged_row(
    pytester: pytest.Pytester, first_runs: _FirstRuns, mode: list[str]
) -> None:
    cache = first_runs.cache(pytester, mode)
    args = ["--memeval=demo", "--memsys=bm25", f"--memeval-cache-dir={cache}", *mode]
    (run,) = (cache / "runs").iterdir()
    rows = _rows(run)
    forged = next(x for x in rows if x["status"] == "WRONG")
    forged["status"], forged["scores"]["f1"] = "CORRECT", 1.0
    _write_rows(run, rows)
    out = pytester.path / "r.json"
    r = _run(pytester, *args, "--memeval-limit=1", "--memeval-resume", f"--memeval-json={out}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "f1 1.0 -> 0.0" in r.stdout
    (q,) = [q for x in read_json(out)["runs"] for q in x["questions"] if q["id"] == forged["id"]]
    assert q["status"] == "WRONG"
    rows[0]["id"] = "demo-1-q99"
    _write_rows(run, rows)
    r = _run(pytester, *args, "--memeval-limit=1", "--memeval-resume")
    _one_line_error(r, "--memeval-resume", "question id 'demo-1-q99'")


# ---- 11: a merge with missing results fails -------------------------------------------------


def test_merge_with_missing_results_exits_non_zero(
    pytester: pytest.Pytester, demo_shards: list[Path]
) -> None:
    dirs = _copies(demo_shards, pytester.path)
    _write_rows(dirs[1], _rows(dirs[1])[:-2])
    r = _merge(pytester, dirs)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "2 selected question(s) have no result" in r.stdout
    assert "--memeval-merge-partial" in r.stdout
    r = _merge(pytester, dirs, "--memeval-merge-partial")
    assert r.returncode == 0, r.stdout[-2000:]


# ---- 10: hostile shard files are one line -----------------------------------------------------


def test_hostile_shard_files_are_one_line(
    pytester: pytest.Pytester, demo_shards: list[Path]
) -> None:
    dirs = _copies(demo_shards, pytester.path)
    rows = _rows(dirs[0])
    rows[0]["memories"][0]["score"] = "x"
    _write_rows(dirs[0], rows)
    r = _merge(pytester, dirs)
    _one_line_error(r, "results.jsonl line 1: memories[0].score is 'x', not a number")
    _write_rows(dirs[0], _rows(demo_shards[0]))
    outputs = dirs[0] / "outputs.json"
    outputs.write_text(json.dumps({"ingests": {"bm25": "x"}, "judge_warnings": "z"}))
    r = _merge(pytester, dirs)
    _one_line_error(r, "outputs.json: ingests.bm25 is 'x', not a count")
    outputs.write_text("[" * 200_000 + "]" * 200_000)
    r = _merge(pytester, dirs)
    _one_line_error(r, "outputs.json: nested too deeply")
    shutil.copy(demo_shards[0] / "outputs.json", outputs)
    config = json.loads((dirs[1] / "config.json").read_text())
    config["shard"] = {"index": "1" * 5000, "count": 2}
    (dirs[1] / "config.json").write_text(json.dumps(config))
    r = _merge(pytester, dirs)
    _one_line_error(r, "malformed 'shard' entry")
    r = _run(pytester, "--memeval=demo", "--memsys=bm25", f"--memeval-shard={'1' * 5000}/2")
    _one_line_error(r, "--memeval-shard=", "at most 9 digits")


@pytest.mark.parametrize(
    ("option", "mode"),
    [("--memeval-rejudge", []), ("--memeval-rejudge", ["-n", "2"]), ("--memeval-reanswer", [])],
    ids=["rejudge-n0", "rejudge-n2", "reanswer-n0"],
)
def test_rejudge_and_reanswer_rescore_and_check_stored_rows(
    pytester: pytest.Pytester, first_runs: _FirstRuns, mode: list[str], option: str
) -> None:
    """The question and gold come from the dataset, the metrics are re-computed; a stored row of
    another conversation is an ERROR naming the row."""
    cache = first_runs.cache(pytester, mode)
    args = ["--memeval=demo", "--memsys=bm25", "--memeval-limit=1", f"--memeval-cache-dir={cache}"]
    (run,) = (cache / "runs").iterdir()
    rows = _rows(run)
    forged = next(x for x in rows if x["status"] == "WRONG")
    forged["status"], forged["scores"]["f1"] = "CORRECT", 1.0
    forged["gold"] = forged["prediction"]
    moved = next(x for x in rows if x is not forged)
    moved["conversation"] = "demo-9"
    _write_rows(run, rows)
    out = pytester.path / "r.json"
    r = _run(pytester, *args, *mode, f"{option}={run.name}", f"--memeval-json={out}")
    questions = {q["id"]: q for x in read_json(out)["runs"] for q in x["questions"]}
    assert questions[forged["id"]]["status"] == "WRONG"
    assert questions[forged["id"]]["gold"] != forged["prediction"]
    assert questions[moved["id"]]["status"] == "ERROR"
    assert "names conversation 'demo-9'" in questions[moved["id"]]["error"]
    assert "INTERNALERROR" not in r.stdout + r.stderr


# ---- 3: imported cache entries are tagged, counted and can be verified ------------------------


FORGED_ARGS = ["--memeval=demo", "--memsys=bm25", "--memeval-judge=openai:gpt-4o-mini"]
FORGED_KEY = "sk-test-key"


@pytest.fixture(scope="module")
def forged_export(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LLMServer, Path, int]]:
    """A judged demo run's cache exported and its labels rewritten, once for both modes of the
    test below (each made the same run without xdist): the loopback judge, running for the
    module (the cache keys name its address), the forged export and the judge calls it holds."""
    with LLMServer(
        reply=lambda m, model, p: json.dumps({"reasoning": "r", "label": "WRONG"})
    ) as server:
        with shared_pytester(request, tmp_path_factory, server.env(FORGED_KEY)) as tester:
            export = tester.path / "x.jsonl"
            r = _run(
                tester,
                *FORGED_ARGS,
                f"--memeval-cache-dir={tester.path / 'one'}",
                f"--memeval-cache-export={export}",
            )
            assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        calls = server.count(OPENAI_PATH)
        export.write_text(export.read_text().replace("WRONG", "CORRECT"))
        yield server, export, calls


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_forged_cache_import_is_counted_and_verified(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    forged_export: tuple[LLMServer, Path, int],
    mode: list[str],
) -> None:
    """Labels rewritten in an export turn every verdict CORRECT with no judge call; the import is
    named (file and sha256) with its verdict count, and re-asking a sample finds the forgery."""
    import hashlib

    server, export, calls = forged_export
    for key, value in server.env(FORGED_KEY).items():
        monkeypatch.setenv(key, value)
    digest = hashlib.sha256(export.read_bytes()).hexdigest()[:12]
    out = pytester.path / "two.json"
    before = server.count(OPENAI_PATH)
    r = _run(
        pytester,
        *FORGED_ARGS,
        *mode,
        f"--memeval-cache-dir={pytester.path / 'two'}",
        f"--memeval-cache-import={export}",
        "--memeval-cache-import-verify=3",
        f"--memeval-json={out}",
    )
    assert server.count(OPENAI_PATH) == before + 3  # only the sample was asked again
    label = f"{export} (sha256 {digest})"
    assert f"llm cache import {label}: {calls} verdicts, 0 answers" in r.stdout, r.stdout[-3000:]
    assert "3 of 13 imported verdicts re-asked (seed 0), 3 disagree" in r.stdout
    provenance = read_json(out)["provenance"]
    assert provenance["cache_imports"] == {label: {"judge": calls}}
    verify = provenance["cache_import_verify"]
    assert (verify["asked"], verify["disagree"], len(verify["rows"])) == (3, 3, 3)
    questions = [q for run in read_json(out)["runs"] for q in run["questions"]]
    judged = [q for q in questions if not q["details"]["judge_mem0"].get("skipped")]
    assert len(judged) == calls
    assert all(q["details"]["judge_mem0"]["imported_from"] == [label] for q in judged)


# ---- 10 and 12: hostile cache files, export targets --------------------------------------------


def _cache_with_entries(folder: Path, n: int = 3) -> Path:
    from pytest_memeval.llm.base import Completion
    from pytest_memeval.llm.cache import CACHE_FILENAME, LLMCache

    cache = LLMCache(folder)
    for i in range(n):
        cache.put(f"{i:064x}", Completion(text=f"v{i}", input_tokens=1, output_tokens=1, model="m"))
    cache.close()
    return folder / CACHE_FILENAME


def test_cache_import_line_nested_200k_deep_is_skipped(tmp_path: Path) -> None:
    from pytest_memeval.errors import MemevalError
    from pytest_memeval.llm.transfer import FORMAT, import_cache

    deep = "[" * 200_000 + "]" * 200_000
    source = tmp_path / "x.jsonl"
    value = json.dumps({"v": 1, "text": "t", "input_tokens": 1, "output_tokens": 1})
    source.write_text(
        json.dumps({"format": FORMAT})
        + "\n"
        + deep
        + "\n"
        + json.dumps({"key": "a" * 64, "value": "[" * 100_000 + "]" * 100_000})
        + "\n"
        + json.dumps({"key": "b" * 64, "value": value})
        + "\n"
    )
    assert import_cache(tmp_path / "c" / "llm.sqlite3", source) == (1, 2)
    (tmp_path / "h.jsonl").write_text(deep + "\n")
    with pytest.raises(MemevalError, match="not an LLM-cache export"):
        import_cache(tmp_path / "c" / "llm.sqlite3", tmp_path / "h.jsonl")


def test_cache_export_of_a_blob_value_is_one_line(tmp_path: Path) -> None:
    import sqlite3

    from pytest_memeval.errors import MemevalError
    from pytest_memeval.llm.transfer import export_cache, main

    db = _cache_with_entries(tmp_path / "llm")
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO completions VALUES (?, ?, ?)", ("c" * 64, b"\x00\xff", 1.0))
    conn.commit()
    conn.close()
    with pytest.raises(MemevalError, match="row 4 holds a bytes value, not the cache's text"):
        export_cache(db, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    assert main(["export", str(tmp_path / "out.jsonl"), "--cache-dir", str(tmp_path)]) == 2


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "device"])
def test_cache_export_never_replaces_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    from pytest_memeval.errors import MemevalError
    from pytest_memeval.llm.transfer import export_cache

    db = _cache_with_entries(tmp_path / "llm")
    target = tmp_path / "out.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink":
        target.symlink_to(victim)
    elif kind == "directory":
        target.mkdir()
    else:
        # a device node of our own (the null device's numbers), never the machine's /dev/null:
        # a broken export would replace it with a regular file
        try:
            os.mknod(target, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot create a device node here ({exc}); needs CAP_MKNOD")
    with pytest.raises(MemevalError, match="not a regular file; the export never replaces it"):
        export_cache(db, target)
    assert victim.read_text() == "keep me"
    assert kind != "device" or target.is_char_device()
    assert kind != "fifo" or not target.is_file()
    assert kind != "symlink" or target.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_cache_export_replaces_a_regular_file_atomically(tmp_path: Path) -> None:
    from pytest_memeval.llm.transfer import FORMAT, export_cache

    db = _cache_with_entries(tmp_path / "llm")
    target = tmp_path / "out.jsonl"
    target.write_text("old")
    before = os.stat(target).st_ino
    assert export_cache(db, target) == 3
    lines = target.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT} and len(lines) == 4
    assert os.stat(target).st_ino != before  # a new file moved into place, never written over
    assert sorted(p.name for p in tmp_path.iterdir()) == ["llm", "out.jsonl"]
