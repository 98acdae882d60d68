"""Security: no code from data (source scan), BEAM never opens pickles and parses Python literals
with ``ast.literal_eval`` under a size limit, a canary API key never leaks, downloads are https-only,
pinned and atomic, names never steer a path out of its folder, and replay files and baselines are
JSON with size limits."""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import read_json
from file_server import Reply, serve_files
from llm_server import LLMServer

import pytest_memeval
from pytest_memeval.analysis._regression import load_baseline
from pytest_memeval.benchmarks._base import LoadRequest
from pytest_memeval.benchmarks._download import download
from pytest_memeval.benchmarks.beam import _loader as beam
from pytest_memeval.errors import AdapterError, DatasetError, MemevalError
from pytest_memeval.systems import _builtin as builtin

pytestmark = pytest.mark.usefixtures("memeval_env")

PACKAGE = Path(pytest_memeval.__file__).resolve().parent
CANARY = "sk-canary-SECURITY-5e1d9a77c3b2"

# --------------------------------------------------------------------------- source scan

#: module -> attribute calls that execute or deserialise code
FORBIDDEN_CALLS = {
    "pickle": {"load", "loads", "Unpickler"},
    "cPickle": {"load", "loads"},
    "marshal": {"load", "loads"},
    "shelve": {"open"},
    "dill": {"load", "loads"},
    "yaml": {"unsafe_load", "full_load", "unsafe_load_all", "full_load_all"},
    "os": {"system", "popen", "execv", "execve", "execl", "execlp", "execvp", "spawnl"},
}
FORBIDDEN_NAMES = {"eval", "exec", "__import__"}
FORBIDDEN_IMPORTS = {"pickle", "cPickle", "marshal", "shelve", "dill", "jsonpickle"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _call_problem(node: ast.Call) -> str | None:
    name = _dotted(node.func)
    head, _, attr = name.rpartition(".")
    module = head.rsplit(".", 1)[-1]
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    if name in FORBIDDEN_NAMES or (head == "builtins" and attr in FORBIDDEN_NAMES):
        return f"{name}()"
    if module in FORBIDDEN_CALLS and attr in FORBIDDEN_CALLS[module]:
        return f"{name}()"
    if name in ("yaml.load", "yaml.load_all"):
        loader = keywords.get("Loader") or (node.args[1] if len(node.args) > 1 else None)
        if loader is None or "safe" not in _dotted(loader).lower():
            return f"{name}() without a Safe loader"
    if module == "subprocess" and "shell" in keywords:
        shell = keywords["shell"]
        if not (isinstance(shell, ast.Constant) and shell.value is False):
            return f"{name}(shell=...)"
    if name in ("numpy.load", "np.load"):
        allow = keywords.get("allow_pickle")
        if not (isinstance(allow, ast.Constant) and allow.value is False):
            return f"{name}() may unpickle"
    return None


def scan_source(source: str, filename: str) -> list[str]:
    """Every dangerous construct in one module, as ``file:line: what``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [
                f"{where}: import {a.name}" for a in node.names if a.name in FORBIDDEN_IMPORTS
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "") in FORBIDDEN_IMPORTS:
            found.append(f"{where}: from {node.module} import ...")
        elif isinstance(node, ast.Call) and (problem := _call_problem(node)) is not None:
            found.append(f"{where}: {problem}")
    return sorted(found)


def test_scanner_catches_every_pattern() -> None:
    bad = """
import pickle
import yaml, subprocess, marshal, os
eval("1")
exec("x = 1")
builtins.eval("1")
pickle.loads(b"")
marshal.loads(b"")
yaml.load(text)
yaml.load(text, Loader=yaml.Loader)
yaml.unsafe_load(text)
subprocess.run("ls", shell=True)
os.system("ls")
np.load("x.npy")
"""
    found = scan_source(bad, "bad.py")
    assert len(found) == 13, found
    good = """
import ast, json, yaml, subprocess
ast.literal_eval("[1]")
json.loads("[]")
yaml.load(text, Loader=yaml.SafeLoader)
yaml.load(text, Loader=_SAFE_LOADER)
yaml.safe_load(text)
subprocess.run(["git", "rev-parse", "HEAD"], shell=False)
subprocess.run(["git", "rev-parse", "HEAD"])
"""
    assert scan_source(good, "good.py") == []


def test_package_has_no_code_execution_on_data() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 30
    found = [hit for f in files for hit in scan_source(f.read_text(encoding="utf-8"), f.name)]
    assert found == []


def test_literal_eval_only_in_the_size_checked_helper() -> None:
    calls = []
    for f in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Call) and _dotted(node.func).endswith("literal_eval"):
                        calls.append((f.relative_to(PACKAGE).as_posix(), fn.name))
    # beam: user data, size-checked before parsing; word_tokenize: the Punkt tables of an
    # installed package, already parsed by ast.parse, evaluated node by node (no text parse), then
    # checked against pinned digests
    assert calls == [
        ("benchmarks/beam/_loader.py", "parse_python_literal"),
        ("metrics/_word_tokenize.py", "_literal"),
        ("metrics/_word_tokenize.py", "_literal"),
    ]


# --------------------------------------------------------------------------- BEAM literals, pickles


def test_python_literal_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    text = repr({"abstention": [{"question": "q?" * 50}]})
    assert beam.parse_python_literal(text, path="p", record="r", field="f")["abstention"]
    monkeypatch.setattr(beam, "MAX_LITERAL_CHARS", len(text) - 1)
    with pytest.raises(DatasetError, match="exceeds the limit") as info:
        beam.parse_python_literal(text, path="p", record="r", field="f")
    assert (info.value.path, info.value.record, info.value.field) == ("p", "r", "f")


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch PWNED')",
        "(lambda: 1)()",
        "open('/etc/passwd').read()",
        "[x for x in ().__class__.__bases__[0].__subclasses__()]",
        "{'a': 1}['a']",
        "(" * 300 + ")" * 300,
        "[" * 100_000 + "]" * 100_000,
    ],
    ids=["import", "lambda", "open", "subclasses", "subscript", "nested-300", "nested-100k"],
)
def test_python_literal_never_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatasetError, match="not a valid Python literal"):
        beam.parse_python_literal(text, path="p", record="r", field="probing_questions")
    assert not (tmp_path / "PWNED").exists()


def test_beam_never_opens_pickles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both layouts, questions and conversations: no ``.pickle`` path reaches open()."""
    marker = tmp_path / "MARKER"
    evil = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    conv = tmp_path / "beam" / "100K" / "1"
    (conv / "probing_questions").mkdir(parents=True)
    abilities = beam.GOLD_FIELDS
    probing = {
        a: [{"question": f"{a}?", g: "x", "rubric": ["LLM response should state: x"]}]
        for a, g in abilities.items()
    }
    (conv / "probing_questions" / "probing_questions.json").write_text(json.dumps(probing))
    chat = [{"batch_number": 1, "turns": [[{"role": "user", "id": 0, "content": "hi"}]]}]
    (conv / "chat.json").write_text(json.dumps(chat))
    for name in ("chat.pickle", "probing_questions/probing_questions.pickle", "x.pkl"):
        (conv / name).write_bytes(evil)
    row = {
        "conversation_id": 2,
        "chat": [[{"role": "user", "id": 0, "content": "hi"}]],
        "probing_questions": repr(probing),
    }
    rows_root = tmp_path / "rows"
    (rows_root / "beam").mkdir(parents=True)
    (rows_root / "beam" / "100K.jsonl").write_text(json.dumps(row) + "\n")
    (rows_root / "beam" / "100K.pickle").write_bytes(evil)

    opened: list[str] = []
    real_open, real_io_open = builtins.open, io.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_io(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_io_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy_io)
    for root in (tmp_path, rows_root):
        ds = beam.BENCHMARK.load(LoadRequest(root, tmp_path / "cache", "100K"))
        assert len(ds.questions) == 10
        for cid in ds.conversation_ids():
            assert ds.conversation(cid).sessions
    monkeypatch.undo()
    assert any(p.endswith("chat.json") for p in opened)
    assert not [p for p in opened if p.endswith((".pickle", ".pkl"))]
    assert not marker.exists()


# --------------------------------------------------------------------------- API keys


def _judge(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = "\n".join(m["content"] for m in messages)
    if "ANSWER:" in text or "short answer" in text.lower():
        return "ANSWER: beagle"
    return json.dumps({"reasoning": "ok", "label": "CORRECT" if "beagle" in text else "WRONG"})


def _all_outputs(root: Path, result: pytest.RunResult) -> dict[str, str]:
    texts = {"stdout": result.stdout.str(), "stderr": result.stderr.str()}
    for path in root.rglob("*"):
        if path.is_file() and path.suffix != ".py":
            texts[str(path.relative_to(root))] = path.read_bytes().decode("latin-1")
    return texts


@pytest.mark.parametrize("server_key", [None, "sk-the-right-key"], ids=["accepted", "401"])
def test_canary_key_never_written(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, server_key: str | None
) -> None:
    """Every output of a judged run (JSON, HTML, Markdown, JUnit XML, DEBUG log file, LLM cache,
    prediction store, results store, terminal) is free of the key, also when the server answers
    401 with a body that echoes the key it received."""
    with LLMServer(reply=_judge, api_key=server_key) as srv:
        for key, value in srv.env(CANARY).items():
            monkeypatch.setenv(key, value)
        out = pytester.path / "out"
        out.mkdir()  # report folders are never created by the plugin
        result = pytester.runpytest(
            "--memeval=demo",
            "--memsys=bm25",
            "--memeval-judge=openai:gpt-4o-mini",
            "--memeval-answerer=openai:gpt-4o-mini",
            "--memeval-llm-retries=0",
            f"--memeval-cache-dir={out / 'cache'}",
            f"--memeval-json={out / 'r.json'}",
            f"--memeval-html={out / 'r.html'}",
            f"--memeval-markdown={out / 'r.md'}",
            f"--junitxml={out / 'junit.xml'}",
            f"--log-file={out / 'log.txt'}",
            "--log-file-level=DEBUG",
            "-rA",
            "-n",
            "2",
        )
        requests = srv.requests
    assert requests and all(r.api_key == CANARY for r in requests)  # the key was really used
    texts = _all_outputs(out, result)
    assert {"r.json", "r.html", "r.md", "junit.xml", "log.txt"} <= set(texts)
    assert any(name.startswith("cache") for name in texts)
    leaks = [name for name, text in texts.items() if CANARY in text or CANARY[8:] in text]
    assert leaks == []
    if server_key is None:
        assert result.ret == 0
        assert read_json(out / "r.json")["runs"][0]["questions"][0]["prediction"] == "beagle"
    else:
        # the 401 produced error messages naming the problem (the server's echo is redacted)
        assert "Incorrect API key" in texts["stdout"] or "401" in texts["stdout"]
        assert int(result.parseoutcomes().get("errors", 0)) == 15


# --------------------------------------------------------------------------- downloads


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/locomo10.json",
        "ftp://example.com/locomo10.json",
        "file:///etc/passwd",
        "https:///no-host",
        "http://10.0.0.1/x.json",
        "HTTP://example.com/x.json",
    ],
)
def test_download_refuses_non_https(tmp_path: Path, url: str) -> None:
    dest = tmp_path / "d" / "f.json"
    with pytest.raises(DatasetError, match="only https URLs are allowed"):
        download(url, dest, None, timeout=1)
    assert not dest.parent.exists() or not any(dest.parent.iterdir())


@dataclass
class _Redirect:
    target: str = ""  # where every path but /file.json redirects to


@pytest.fixture
def redirector() -> Iterator[tuple[str, _Redirect]]:
    redirect = _Redirect()

    def to_target(path: str) -> Reply:
        return Reply(status=302, headers={"Location": redirect.target})

    with serve_files({"/file.json": b"[]"}, fallback=to_target) as srv:
        yield srv.base, redirect


def test_download_refuses_redirect_off_https(
    tmp_path: Path, redirector: tuple[str, _Redirect]
) -> None:
    base, handler = redirector
    handler.target = "http://192.0.2.1/evil.json"  # TEST-NET: never contacted
    dest = tmp_path / "f.json"
    with pytest.raises(DatasetError, match=r"refusing to download from 'http://192\.0\.2\.1"):
        download(f"{base}/go", dest, None, timeout=5)
    assert list(tmp_path.iterdir()) == []  # no partial file left
    handler.target = f"{base}/file.json"  # a loopback redirect is followed
    assert download(f"{base}/go", dest, hashlib.sha256(b"[]").hexdigest(), timeout=5) == dest
    assert dest.read_bytes() == b"[]"


def test_download_checks_sha256_and_keeps_old_file(
    tmp_path: Path, redirector: tuple[str, _Redirect]
) -> None:
    base, _ = redirector
    dest = tmp_path / "f.json"
    dest.write_bytes(b"old")
    with pytest.raises(DatasetError, match="sha256 mismatch"):
        download(f"{base}/file.json", dest, "0" * 64, timeout=5)
    assert dest.read_bytes() == b"old"  # atomic: the pinned file is never replaced by a wrong one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


# --------------------------------------------------------------------------- names and paths


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_hostile_names_never_leave_their_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay file reached through ``..`` whose systems are named like paths, and LoCoMo ids
    that look like paths: every file the run writes stays in the cache or report folders."""
    sandbox = pytester.path / "sandbox"
    work = sandbox / "work"
    (work / "sub").mkdir(parents=True)
    data = work / "data" / "locomo"
    data.mkdir(parents=True)
    sample = "../../../evil"
    locomo = [
        {
            "sample_id": sample,
            "conversation": {
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "My dog is a beagle."}]
            },
            "qa": [{"question": "What breed?", "answer": "beagle", "category": 4}],
        }
    ]
    (data / "locomo10.json").write_text(json.dumps(locomo))
    qid = f"{sample}-q1"
    replay = {"../../evil": {qid: "beagle"}, "..\\..\\evil2": {qid: "poodle"}, "/abs/x": {}}
    replay["/abs/x"] = {qid: "beagle"}
    (work / "x.json").write_text(json.dumps(replay))
    outside_before = _tree(pytester.path)
    monkeypatch.chdir(work / "sub")
    result = pytester.runpytest(
        "--memeval=locomo",
        f"--memeval-data={work / 'data'}",
        "--memeval-accept-unpinned",  # a small file at the release's path
        "--memsys=replay:../x.json",
        "--memeval-cache-dir=.cache",
        "--memeval-json=../report.json",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(work / "report.json")
    assert sorted(r["system"] for r in report["runs"]) == ["../../evil", "..\\..\\evil2", "/abs/x"]
    assert {q["id"] for r in report["runs"] for q in r["questions"]} == {qid}
    created = _tree(pytester.path) - outside_before
    allowed = ("sandbox/work/sub/.cache", "sandbox/work/report.json")
    assert "sandbox/work/report.json" in created
    assert [c for c in created if not c.startswith(allowed)] == []
    assert not (pytester.path / "evil").exists() and not Path("/abs/x").exists()


def test_run_names_cannot_escape_runs_folder(tmp_path: Path) -> None:
    results = pytest.importorskip("pytest_memeval.run._store")
    (tmp_path / "runs" / "ok").mkdir(parents=True)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "results.jsonl").write_text("")
    for name in ("../x", "..", "/etc", "a/b", "ok/../../x", "\x00"):
        with pytest.raises(MemevalError, match="not a run id"):
            results.find_run(tmp_path, name)


# --------------------------------------------------------------------------- replay and baselines


def test_replay_json_only_with_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"q1": "beagle"}))
    assert builtin.load_replay(path) == {"": {"q1": "beagle"}}
    monkeypatch.setattr(builtin, "REPLAY_MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(AdapterError, match="byte limit"):
        builtin.load_replay(path)
    monkeypatch.undo()
    for name, raw in {
        "pickle": b"cos\nsystem\n(S'echo pwned'\ntR.",
        "deep": b"[" * 100_000 + b"]" * 100_000,
        "bigint": b'{"q1": ' + b"1" * 5000 + b"}",
        "yaml": b"q1: beagle\n",
    }.items():
        path.write_bytes(raw)
        with pytest.raises(AdapterError, match=r"replay file .*answers\.json") as info:
            builtin.load_replay(path)
        assert "Traceback" not in str(info.value), name


def test_baseline_json_only_with_size_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_memeval.analysis._regression as regression

    path = tmp_path / "baseline.json"
    path.write_text("{}")
    monkeypatch.setattr(regression, "MAX_BASELINE_BYTES", 1)
    with pytest.raises(MemevalError, match="limit"):
        load_baseline(path)
    monkeypatch.undo()
    for raw in (
        b"cos\nsystem\n(S'echo pwned'\ntR.",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a": NaN}',
        b'{"a": ' + b"1" * 5000 + b"}",
    ):
        path.write_bytes(raw)
        with pytest.raises(MemevalError, match=r"baseline\.json"):
            load_baseline(path)
