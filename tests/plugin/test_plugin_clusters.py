"""End to end: the cluster regression gate on LoCoMo-shaped data (issue 15, item 1).

Ten conversations of 20 questions. A conftest system answers every question with its gold answer
except where ``MEM_MODE`` says otherwise, so the outcomes of the baseline run and of the current
run differ only where the mode puts the differences:

- ``clustered``: 17 questions turn wrong, all in two conversations (9 and 8), one turns correct in
  a third: outcomes correlated within conversations. The question-level exact McNemar (17 vs 1)
  says "regression"; the sign-flip test over the 10 conversations (p = 0.5) does not, and the
  gate passes, saying that the question-level test would have failed it.
- ``spread``: 2 questions turn wrong in every conversation: both tests say "regression" and the
  gate fails (the cluster gate is not toothless).

Every run goes without xdist and with ``-n 2``; the cluster also survives the results store
(``--memeval-resume`` of the finished run) and ``--memeval-shard`` + ``--memeval-merge``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import INNER_ADDOPTS, read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}
CONVS = 10
PER_CONV = 20

SYSTEM = '''
import os
import pytest

#: (conversation number, question number) -> right answer? per mode; everything else is right
WRONG = {
    "base": {(2, 1)},
    "clustered": {(0, i) for i in range(1, 10)} | {(1, i) for i in range(1, 9)},
    "spread": {(c, i) for c in range(10) for i in (1, 2)} | {(2, 1)},
}


class Oracle:
    """Answers with the gold answer, or a wrong one where the mode says."""

    def ingest(self, conversation):
        pass

    def search(self, question, k):
        return []

    def answer(self, question):
        conv = int(question.conversation_id.removeprefix("conv-"))
        number = int(question.id.rsplit("-q", 1)[1])
        if (conv, number) in WRONG[os.environ.get("MEM_MODE", "base")]:
            return "xyzzy"
        return str(question.gold)


@pytest.fixture(scope="session")
def oracle():
    return Oracle()
'''


def _locomo(root: Path) -> Path:
    data = []
    for c in range(CONVS):
        sid = f"conv-{c}"
        turns = [
            {"speaker": "Ann", "dia_id": f"D1:{i + 1}", "text": f"My fact {i} is gold{c}x{i}."}
            for i in range(PER_CONV)
        ]
        data.append(
            {
                "sample_id": sid,
                "conversation": {
                    "speaker_a": "Ann",
                    "speaker_b": "Bob",
                    "session_1_date_time": "1:56 pm on 8 May, 2023",
                    "session_1": turns,
                },
                "qa": [
                    {
                        "question": f"What is fact {i}?",
                        "answer": f"gold{c}x{i}",
                        "category": 4,
                        "evidence": [f"D1:{i + 1}"],
                    }
                    for i in range(PER_CONV)
                ],
            }
        )
    path = root / "data" / "locomo" / "locomo10.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return root / "data"


def _args(data: Path, *extra: str) -> list[str]:
    return [
        "--memeval=locomo",
        f"--memeval-data={data}",
        "--memeval-accept-unpinned",  # a generated file at the release's path
        "--memsys=oracle",
        *extra,
    ]


def _subprocess(cwd: Path, *args: str, mode: str | None = None) -> subprocess.CompletedProcess[str]:
    """A pytest run in its own process (shards and merges: as the recipes run them); ``mode``
    sets ``MEM_MODE`` (by default the caller's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    if mode is not None:
        env["MEM_MODE"] = mode
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(data dir, saved baseline) of the base run: made once for the module's tests (the data
    and the baseline are only read), in its own process without xdist."""
    root = tmp_path_factory.mktemp("clusters-base")
    (root / "conftest.py").write_text(SYSTEM, encoding="utf-8")
    data = _locomo(root)
    base = root / "base.json"
    result = _subprocess(
        root, *_args(data, f"--memeval-save-baseline={base}", "-p", "no:xdist"), mode="base"
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    saved = read_json(base)["runs"][0]["questions"]
    assert saved["conv-3-q4"]["cluster"] == "conv-3"
    return data, base


@pytest.fixture
def project(pytester: pytest.Pytester, base_run: tuple[Path, Path]) -> tuple[Path, Path]:
    """The test's pytester folder holds the system's conftest; (data dir, saved baseline)."""
    pytester.makeconftest(SYSTEM)
    return base_run


def _regression(report: Path) -> dict[str, Any]:
    [reg] = read_json(report)["extra"]["regression"]
    assert isinstance(reg, dict)
    return reg


@pytest.mark.parametrize("mode", list(MODES), ids=list(MODES))
def test_correlated_drop_fails_per_question_but_not_per_conversation(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    project: tuple[Path, Path],
    mode: str,
) -> None:
    data, base = project
    monkeypatch.setenv("MEM_MODE", "clustered")
    out = pytester.path / "r.json"
    md = pytester.path / "r.md"
    cache = pytester.path / "cache"
    gate = [f"--memeval-baseline={base}", "--memeval-max-drop=correct:2"]
    result = pytester.runpytest(
        *_args(
            data,
            *gate,
            f"--memeval-cache-dir={cache}",
            f"--memeval-json={out}",
            f"--memeval-markdown={md}",
            *MODES[mode],
        )
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "memeval: regression passed: locomo (oracle) correct over category "
            "single-hop ?4? dropped 8.0 points "
            "(0.995 -> 0.915, delta -0.080, 95% CI *, exact sign-flip test over 10 "
            "conversations p = 0.5, 200 paired questions): more than the allowed 2.0 points but "
            "not significant at alpha 0.05; the question-level exact McNemar p = 0.000145 would "
            "have FAILED it, treating the 200 questions as independent although they come from "
            "10 conversations.",
            "    question-level test (questions as independent): exact McNemar over 200 "
            "questions, p = 0.000145: would fail (verdicts DIFFER)",
            "    power: this run detects a true drop of * points or more with 80% power at "
            "alpha 0.05 (from the observed cluster-robust spread of the paired differences over "
            "10 conversations)",
        ]
    )
    reg = _regression(out)
    assert reg["test"] == "sign-flip" and reg["clusters"] == {"unit": "conversation", "count": 10}
    assert reg["failed"] is False and reg["question_failed"] is True
    assert reg["p_value"] == 0.5 and reg["question_test"] == "mcnemar"
    report = read_json(out)
    assert {q["cluster"] for q in report["runs"][0]["questions"]} == {
        f"conv-{c}" for c in range(CONVS)
    }
    assert report["runs"][0]["summary"]["clusters"] == {"unit": "conversation", "count": 10}
    text = md.read_text(encoding="utf-8")
    assert "95% bootstrap CIs over 10 conversations" in text
    assert "would have FAILED it" in text
    assert "10 conversations. (power: this run detects a true drop of " in text

    # the cluster survives the results store: the stored lines name it, and a resume of the
    # finished run (the -n 2 run's store, resumed without xdist) reads it back
    if mode != "n2":
        return
    [run_dir] = (cache / "runs").iterdir()
    lines = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["cluster"] for line in lines} == {f"conv-{c}" for c in range(CONVS)}
    resumed_out = pytester.path / "resumed.json"
    resumed = pytester.runpytest(
        *_args(
            data,
            f"--memeval-cache-dir={cache}",
            "--memeval-resume",
            f"--memeval-json={resumed_out}",
        ),
        *gate,
    )
    assert resumed.ret == 0, resumed.stdout.str()
    reg = _regression(resumed_out)
    assert (reg["test"], reg["failed"], reg["question_failed"]) == ("sign-flip", False, True)


@pytest.mark.parametrize("mode", list(MODES), ids=list(MODES))
def test_a_drop_in_every_conversation_fails_the_cluster_gate(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    project: tuple[Path, Path],
    mode: str,
) -> None:
    data, base = project
    monkeypatch.setenv("MEM_MODE", "spread")
    result = pytester.runpytest(
        *_args(data, f"--memeval-baseline={base}", "--memeval-max-drop=correct:2", *MODES[mode])
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "memeval: regression FAILED: locomo (oracle) correct over category "
            "single-hop ?4? dropped 9.5 points (*exact sign-flip test over 10 conversations p = 0.00195, 200 "
            "paired questions): more than the allowed 2.0 points and significant at alpha 0.05.",
            "    question-level test (questions as independent): exact McNemar over 200 "
            "questions, p = *: would fail (same verdict)",
        ]
    )


def test_cluster_survives_shard_and_merge(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, project: tuple[Path, Path]
) -> None:
    """(The resume of a finished run: test_correlated_drop_fails_per_question_but_not_per_
    conversation[n2].)"""
    data, base = project
    monkeypatch.setenv("MEM_MODE", "clustered")
    gate = [f"--memeval-baseline={base}", "--memeval-max-drop=correct:2"]
    # two shards, merged: the merge reads the stored lines back
    dirs = []
    for i in (1, 2):
        shard_cache = pytester.path / f"shard{i}"
        proc = _subprocess(
            pytester.path,
            *_args(data, f"--memeval-shard={i}/2", f"--memeval-cache-dir={shard_cache}"),
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        dirs += [str(p) for p in (shard_cache / "runs").iterdir()]
    merged = pytester.path / "merged.json"
    proc = _subprocess(
        pytester.path,
        f"--memeval-merge={','.join(dirs)}",
        f"--memeval-cache-dir={pytester.path / 'mcache'}",
        f"--memeval-json={merged}",
        *gate,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    reg = _regression(merged)
    assert (reg["test"], reg["failed"], reg["question_failed"]) == ("sign-flip", False, True)
    assert reg["clusters"] == {"unit": "conversation", "count": 10}
