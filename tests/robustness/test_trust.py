"""Issue 26, round three: shard folders, run folders and LLM-cache files come from other machines
and are untrusted data. A merge imports nothing; stored rows are checked against the loaded
dataset and re-scored; a merge missing results fails; a hostile file is one line, never an
INTERNALERROR; an imported cache is tagged and its verdicts can be verified; export never
replaces what is not a regular file."""

from __future__ import annotations

import json
import os
import re
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
        # issue 38 item 1: a hand-written test's row (a flow) gets the same checks
        (
            {"benchmark": "locomo", "id": "conv-26_q0", "flow": "t"},
            "benchmark 'locomo' is not in this run",
        ),
        (
            {"conversation": "demo-9", "id": "demo-9-q1", "flow": "test_mine"},
            "question id 'demo-9-q1' is not a selected question",
        ),
        ({"flow": "t; rm"}, "flow 't; rm' is not the name of a test function"),
    ],
    ids=[
        "invented-id",
        "other-conversation",
        "other-system",
        "locomo-row",
        "locomo-case-row",
        "invented-case-row",
        "bad-flow",
    ],
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


def test_merge_rescores_a_hand_written_row_and_never_sets_it_beside_baselines(
    pytester: pytest.Pytester, demo_shards: list[Path]
) -> None:
    """Issue 38 item 1: a row with a flow (a hand-written test's) naming a real demo question,
    its f1 forged to 1.0, is re-scored from its prediction and shown as a hand-written case,
    with no published figure beside it."""
    dirs = _copies(demo_shards, pytester.path)
    rows = _rows(dirs[0])
    source = next(r for r in rows if r["status"] == "WRONG")
    case = json.loads(json.dumps(source)) | {"flow": "test_mine", "status": "CORRECT"}
    case["scores"]["f1"] = 1.0
    _write_rows(dirs[0], [*rows, case])
    out = pytester.path / "m.json"
    r = _merge(pytester, dirs, f"--memeval-json={out}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert f"{source['id']}" in r.stdout and "f1 1.0 -> " in r.stdout
    report = read_json(out)
    (run,) = [run for run in report["runs"] if run["flow"] == "test_mine"]
    (q,) = run["questions"]
    assert q["scores"]["f1"] == source["scores"]["f1"] and q["status"] == "WRONG"
    (line,) = [ln for ln in r.stdout.splitlines() if "demo       bm25 / test_mine  f1" in ln]
    assert line.rstrip().endswith("- (hand-written case)  hand-written"), line


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
    from pytest_memeval.llm._base import Completion
    from pytest_memeval.llm._cache import CACHE_FILENAME, LLMCache

    cache = LLMCache(folder)
    for i in range(n):
        cache.put(f"{i:064x}", Completion(text=f"v{i}", input_tokens=1, output_tokens=1, model="m"))
    cache.close()
    return folder / CACHE_FILENAME


def test_cache_import_line_nested_200k_deep_is_skipped(tmp_path: Path) -> None:
    from pytest_memeval.errors import MemevalError
    from pytest_memeval.llm._transfer import FORMAT, import_cache

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
    from pytest_memeval.llm._transfer import export_cache, main

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
    from pytest_memeval.llm._transfer import export_cache

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
    from pytest_memeval.llm._transfer import FORMAT, export_cache

    db = _cache_with_entries(tmp_path / "llm")
    target = tmp_path / "out.jsonl"
    target.write_text("old")
    before = os.stat(target).st_ino
    assert export_cache(db, target) == 3
    lines = target.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT} and len(lines) == 4
    assert os.stat(target).st_ino != before  # a new file moved into place, never written over
    assert sorted(p.name for p in tmp_path.iterdir()) == ["llm", "out.jsonl"]


# ---- issue 35, items 1, 2 and 6: a board you can trust ----------------------------------------


def _board(*args: str) -> tuple[int, str, str]:
    """``memeval-board ARGS`` in this process: (exit status, stdout, stderr)."""
    import contextlib
    import io

    from pytest_memeval.board.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def _board_rows(index: Path) -> dict[str, dict[str, str]]:
    """run id -> {"tier", "where": "ranked" | "apart", "partial": "1" if marked, "rank"} of
    every result row on a board's index page."""
    import re

    text = index.read_text(encoding="utf-8")
    rows: dict[str, dict[str, str]] = {}
    for m in re.finditer(
        r'<tr (class="apart" )?data-system="[^"]*" data-tier="([^"]*)" data-entry="([^"]*)"[^>]*>'
        r"(.*?)</tr>",
        text,
        re.S,
    ):
        apart, tier, entry, cells = m.groups()
        rank = re.match(r'<td class="num">(\d+)</td>', cells)
        rows[entry.split("-demo-")[0]] = {
            "tier": tier,
            "where": "apart" if apart else "ranked",
            "partial": "1" if 'class="partial"' in cells else "",
            "rank": rank.group(1) if rank and not apart else "",
        }
    return rows


def _demo_report(pytester: pytest.Pytester, name: str, *args: str) -> dict[str, Any]:
    out = pytester.path / f"{name}.json"
    r = _run(pytester, "--memeval=demo", f"--memeval-json={out}", *args)
    assert out.is_file(), r.stdout[-3000:] + r.stderr[-2000:]
    report = read_json(out)
    report["provenance"]["run_id"] = name
    out.write_text(json.dumps(report), encoding="utf-8")
    return report


def _forge(pytester: pytest.Pytester, honest: dict[str, Any], name: str, edit: Any) -> Path:
    """``honest`` with each run's questions edited, its tables rebuilt from them with the board's
    own aggregation (so they add up), its provenance made to agree (questions run = selected =
    held) and its ``session`` dropped, as a careful forger would."""
    import copy

    from pytest_memeval.benchmarks import get_benchmark
    from pytest_memeval.board._load import summarize
    from pytest_memeval.records import QuestionResult

    data = copy.deepcopy(honest)
    data["provenance"]["run_id"] = name
    data["provenance"].pop("session", None)
    for run in data["runs"]:
        run["questions"] = edit(run["questions"])
        results = [QuestionResult.from_dict(q) for q in run["questions"]]
        names = (run["benchmark"], run["system"], run["flow"])
        metrics = ["f1", "set_f1", "bleu1", "evidence_recall"]
        run["summary"] = summarize(get_benchmark("demo"), names, results, metrics).summary_dict()
        held = len({q["id"] for q in run["questions"]})
        data["provenance"]["datasets"]["demo"] |= {
            "questions_run": held,
            "questions_selected": held,
        }
    path = pytester.path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _without_wrong(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in questions if q["status"] != "WRONG"]


def _invented(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pytest_memeval.benchmarks import get_benchmark
    from pytest_memeval.records import Prediction, Question

    base = next(q for q in questions if q["status"] == "WRONG" and q["category_id"] != 5)
    extra = []
    for i in range(20):
        q = json.loads(json.dumps(base)) | {"id": f"{base['conversation']}-q9{i:02d}"}
        q["gold"], q["status"] = q["prediction"], "CORRECT"
        asked = Question(
            id=q["id"],
            conversation_id=q["conversation"],
            category=q["category"],
            question=q["question"],
            gold=q["gold"],
            category_id=q["category_id"],
        )
        q["scores"] = dict(get_benchmark("demo").score(asked, Prediction(q["prediction"], ())))
        extra.append(q)
    return questions + extra


def _duplicated(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    good = next(q for q in questions if q["status"] == "CORRECT" and q["category_id"] != 5)
    return questions + [dict(good) for _ in range(30)]


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_board_shows_forged_question_sets_apart(pytester: pytest.Pytester, mode: list[str]) -> None:
    """Issue 35's three forged reports, made from a real demo run: every WRONG question deleted,
    20 invented ids with gold = prediction, one CORRECT question held 30 times. Each re-scores
    clean and its tables add up, so the board ranked them re-scored above the honest run (f1
    1.000, 0.742, 0.802 against 0.344); their question sets are not the selection's."""
    honest = _demo_report(pytester, "honest", "--memsys=bm25", *mode)
    forged = [
        _forge(pytester, honest, "nowrong", _without_wrong),
        _forge(pytester, honest, "invented", _invented),
        _forge(pytester, honest, "duplicated", _duplicated),
    ]
    site = pytester.path / "site"
    status, _, err = _board(str(pytester.path / "honest.json"), *map(str, forged), "-o", str(site))
    assert status == 0, err
    rows = _board_rows(site / "index.html")
    assert rows["honest"] == {"tier": "re-scored", "where": "ranked", "partial": "", "rank": "1"}
    assert {
        name: (rows[name]["tier"], rows[name]["where"]) for name in rows if name != "honest"
    } == {
        "nowrong": ("incomplete", "apart"),
        "invented": ("invalid", "apart"),
        "duplicated": ("invalid", "apart"),
    }
    wrong = [q["id"] for q in honest["runs"][0]["questions"] if q["status"] == "WRONG"]
    page = (site / "run-nowrong-demo-bm25-.html").read_text(encoding="utf-8")
    assert f"{len(wrong)} selected question(s) missing: {', '.join(wrong[:5])}" in page
    page = (site / "run-invented-demo-bm25-.html").read_text(encoding="utf-8")
    assert "20 question id(s) not in the selection: demo-1-q900" in page
    page = (site / "run-duplicated-demo-bm25-.html").read_text(encoding="utf-8")
    assert "30 duplicate record(s) of 1 question(s)" in page
    # --show-partial ranks partial runs, never a forged question set
    status, _, err = _board(
        str(pytester.path / "honest.json"), *map(str, forged), "-o", str(site), "--show-partial"
    )
    assert status == 0, err
    assert [
        n for n, row in _board_rows(site / "index.html").items() if row["where"] == "ranked"
    ] == ["honest"]


ERRORING_CONFTEST = """
import pytest
from pytest_memeval.systems import BM25System

class Erroring(BM25System):
    def search(self, question, k):
        if not question.id.endswith(("q1", "q2")):
            raise RuntimeError("index lost for " + question.id)
        return super().search(question, k)

@pytest.fixture
def erroring():
    return Erroring()
"""


@pytest.mark.parametrize("mode", [[], ["-n", "2"]], ids=["n0", "n2"])
def test_board_shows_partial_runs_apart(pytester: pytest.Pytester, mode: list[str]) -> None:
    """A run stopped by -x (--memeval-strict fails a WRONG answer), one narrowed by -k and one
    whose system errors on most questions are partial: shown apart, not ranked beside the full
    run; --show-partial ranks them, marked. The report records how its session ended."""
    pytester.makeconftest(ERRORING_CONFTEST)
    _demo_report(pytester, "full", "--memsys=bm25", *mode)
    stopped = _demo_report(pytester, "stopped", "--memsys=bm25", "-x", "--memeval-strict", *mode)
    narrowed = _demo_report(pytester, "narrowed", "--memsys=bm25", "-k", "demo-1", *mode)
    _demo_report(pytester, "erroring", "--memsys=erroring", *mode)
    session = stopped["provenance"]["session"]
    assert session["stopped"] == f"stopping after {session['stopped'].split()[2]} failures"
    assert session["maxfail"] == 1 and session["exit_status"] in (1, 2)
    assert narrowed["provenance"]["session"]["keyword"] == "demo-1"
    reports = [
        str(pytester.path / f"{n}.json") for n in ("full", "stopped", "narrowed", "erroring")
    ]
    site = pytester.path / "site"
    status, _, err = _board(*reports, "-o", str(site))
    assert status == 0, err
    rows = _board_rows(site / "index.html")
    assert rows["full"]["where"] == "ranked" and rows["full"]["tier"] == "re-scored"
    assert {n: rows[n]["where"] for n in ("stopped", "narrowed", "erroring")} == dict.fromkeys(
        ("stopped", "narrowed", "erroring"), "apart"
    )
    page = (site / "run-stopped-demo-bm25-.html").read_text(encoding="utf-8")
    assert "partial run: stopped early (stopping after" in page
    page = (site / "run-narrowed-demo-bm25-.html").read_text(encoding="utf-8")
    assert "partial run: questions selected by -k &#x27;demo-1&#x27;" in page
    page = (site / "run-erroring-demo-erroring-.html").read_text(encoding="utf-8")
    assert "partial run: 11 of its 15 questions are ERROR (more than half)" in page
    # --show-partial ranks them, marked, one row per system: bm25's row is its latest run (the
    # stopped one; the full run is in bm25's history), the -k run in a key of its own
    status, _, err = _board(*reports, "-o", str(site), "--show-partial")
    assert status == 0, err
    rows = _board_rows(site / "index.html")
    assert set(rows) == {"stopped", "narrowed", "erroring"}
    assert all(rows[n]["where"] == "ranked" and rows[n]["partial"] for n in rows)
    assert rows["narrowed"]["rank"] == "1"
    index = (site / "index.html").read_text(encoding="utf-8")
    history = index.split("History: bm25</h4>")[1].split("</table>")[0]
    assert '<a href="run-full-demo-bm25-.html">' in history
    shown = re.search(r'<tr class="shown">(.*?)</tr>', history)
    assert shown is not None and "run-stopped-demo-bm25-.html" in shown.group(1)
    # --pick best: bm25's row is its full run, not marked partial
    status, _, err = _board(*reports, "-o", str(site), "--show-partial", "--pick", "best")
    assert status == 0, err
    rows = _board_rows(site / "index.html")
    assert rows["full"]["where"] == "ranked" and not rows["full"]["partial"]
    assert "stopped" not in rows


def test_question_set_check_names_missing_invented_duplicated() -> None:
    from pytest_memeval.run._question import check_question_set

    check = check_question_set(["a", "b", "c", "d"], ["a", "x", "c", "c", "y", "c"])
    assert (check.missing, check.invented, check.duplicated) == (
        ("b", "d"),
        ("x", "y"),
        (("c", 3),),
    )
    assert not check.complete and (check.expected, check.held) == (4, 6)
    assert check.problems(named=1) == [
        "2 selected question(s) missing: b, ... (1 more)",
        "2 question id(s) not in the selection: x, ... (1 more)",
        "2 duplicate record(s) of 1 question(s): c x3",
    ]
    assert check_question_set(["a", "b"], ["b", "a"]).complete


def test_partial_reasons_from_provenance_and_statuses() -> None:
    from pytest_memeval.board._verify import partial_reasons

    full = {
        "session": {"exit_status": 0},
        "datasets": {"demo": {"questions_run": 15, "questions_selected": 15}},
    }
    assert partial_reasons(full, "demo", ["CORRECT"] * 8 + ["ERROR"] * 7) == []
    assert partial_reasons(full, "demo", ["CORRECT"] * 7 + ["ERROR"] * 8) == [
        "8 of its 15 questions are ERROR (more than half)"
    ]
    interrupted = {"session": {"exit_status": 2, "exit_name": "INTERRUPTED", "markexpr": "slow"}}
    assert partial_reasons(interrupted, "demo", ["WRONG"]) == [
        "the session ended with exit status 2 (INTERRUPTED)",
        "questions selected by -m 'slow'",
    ]
    old = {"datasets": {"demo": {"questions_run": 1, "questions_selected": 15}}}
    assert partial_reasons(old, "demo", ["WRONG"]) == ["1 of the 15 selected questions ran"]


@pytest.fixture
def demo_report(tmp_path: Path) -> Path:
    """A small valid report (the demo's questions, scored by its own scorer)."""
    from pytest_memeval.benchmarks import get_benchmark
    from pytest_memeval.benchmarks._base import LoadRequest
    from pytest_memeval.records import Prediction, QuestionResult

    bench = get_benchmark("demo")
    questions = bench.load(LoadRequest(None, tmp_path)).questions
    rows = []
    for q in questions:
        scores = bench.score(q, Prediction("no idea", ()))
        rows.append(
            QuestionResult(
                benchmark="demo", system="bm25", question_id=q.id, conversation_id=q.conversation_id,
                category=q.category, category_id=q.category_id, question=q.question, gold=q.gold,
                prediction="no idea", status="WRONG", scores=dict(scores), cluster=q.conversation_id,
                details={"pass_metric": "f1"},
            ).to_dict()
        )  # fmt: skip
    path = tmp_path / "r.json"
    report = {"schema": "pytest-memeval/1", "provenance": {"run_id": "r"}, "runs": [
        {"benchmark": "demo", "system": "bm25", "flow": "", "summary": {}, "questions": rows}
    ]}  # fmt: skip
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def _one_board_line(status: int, out: str, err: str, *needles: str) -> None:
    assert status == 2, out + err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize("depth", [100_000, 500], ids=["past-the-decoder", "past-the-bound"])
def test_board_deep_report_is_one_line(tmp_path: Path, depth: int) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"schema": "pytest-memeval/1", "runs": ' + "[" * depth + "]" * depth + "}")
    _one_board_line(*_board(str(deep), "-o", str(tmp_path / "site")), str(deep), "nested")
    assert not (tmp_path / "site").exists()


def test_board_deep_gold_in_a_report_is_one_line(tmp_path: Path, demo_report: Path) -> None:
    """A gold nested 900 deep passes the decoder; the board's readers must never meet it."""
    data = json.loads(demo_report.read_text())
    data["runs"][0]["questions"][0]["gold"] = json.loads("[" * 900 + "]" * 900)
    demo_report.write_text(json.dumps(data), encoding="utf-8")
    _one_board_line(*_board(str(demo_report), "-o", str(tmp_path / "s")), str(demo_report), "64")


def test_board_huge_report_is_one_line(
    tmp_path: Path, demo_report: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_memeval.board import _load as load

    bound = demo_report.stat().st_size - 1
    monkeypatch.setattr(load, "MAX_REPORT_BYTES", bound)
    status, out, err = _board(str(demo_report), "-o", str(tmp_path / "s"))
    # the file named once, the bound with it, the command's name once
    _one_board_line(status, out, err, f"larger than {bound:,} bytes, the board's bound")
    assert (
        err.startswith(f"memeval-board: {demo_report}: larger") and err.count("memeval-board") == 1
    )


@pytest.mark.parametrize("kind", ["file", "symlink-to-folder", "symlink-to-file"])
def test_board_output_file_or_symlink_is_refused(
    tmp_path: Path, demo_report: Path, kind: str
) -> None:
    target = tmp_path / "target"
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("keep me")
    else:
        target.mkdir() if kind == "symlink-to-folder" else target.write_text("keep me")
        out.symlink_to(target)
    status, stdout, err = _board(str(demo_report), "-o", str(out))
    needle = "exists and is not a folder" if kind == "file" else "--follow-symlinks"
    _one_board_line(status, stdout, err, f"-o {out}", needle)
    assert kind != "file" or out.read_text() == "keep me"
    assert kind != "symlink-to-folder" or list(target.iterdir()) == []
    assert kind != "symlink-to-file" or target.read_text() == "keep me"
    if kind == "symlink-to-folder":  # followed only when asked
        status, _, err = _board(str(demo_report), "-o", str(out), "--follow-symlinks")
        assert status == 0, err
        assert (target / "index.html").is_file() and out.is_symlink()


def test_board_writes_nothing_outside_its_folder(tmp_path: Path, demo_report: Path) -> None:
    """Every page, and the demo loader's temporary folder, inside -o; a page name taken by a
    folder is one line."""
    import tempfile

    before = set(Path(tempfile.gettempdir()).iterdir())
    site = tmp_path / "site"
    status, _, err = _board(str(demo_report), "-o", str(site))
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "site"]
    assert {p.name for p in site.iterdir()} == {"index.html", "run-r-demo-bm25-.html"}
    assert {
        p for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("memeval-board-")
    } <= before
    (site / "index.html").unlink()
    (site / "index.html").mkdir()
    _one_board_line(*_board(str(demo_report), "-o", str(site)), "cannot write the site")


@pytest.mark.parametrize("case", ["locomo-without-data", "hand-written-flow"])
def test_board_unverifiable_question_set_is_apart(
    tmp_path: Path, demo_report: Path, case: str
) -> None:
    """A real benchmark's report without its dataset here (no --data, no MEMEVAL_DATA_DIR: the
    memeval_env fixture clears it), and a hand-written test's questions, cannot have their
    question set checked: unverified, shown apart, the reason on the run page."""
    data = json.loads(demo_report.read_text())
    run = data["runs"][0]
    if case == "locomo-without-data":
        run["benchmark"] = "locomo"
        for q in run["questions"]:
            q["benchmark"] = "locomo"
        reason = "question set not verified: dataset not loaded (FileNotFoundError: no --data"
        page = "run-r-locomo-bm25-.html"
    else:
        run["flow"] = "test_mine"
        for q in run["questions"]:
            q["flow"] = "test_mine"
        reason = "question set not verified: a hand-written test (test_mine) chooses its own"
        page = "run-r-demo-bm25-test_mine.html"
    demo_report.write_text(json.dumps(data), encoding="utf-8")
    site = tmp_path / "site"
    status, _, err = _board(str(demo_report), "-o", str(site))
    assert status == 0, err
    (row,) = _board_rows(site / "index.html").values()
    assert (row["tier"], row["where"]) == ("unverified", "apart")
    assert reason in (site / page).read_text(encoding="utf-8")
