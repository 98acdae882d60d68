"""Official protocols (``--memeval-protocol``): pinned upstream files, ``ast`` extraction, and
judge requests identical to what the upstream code path sends.

The upstream files are stood in for by upstream-shaped files we wrote (``tests/fixtures/
protocols``: same paths, variable names and call shapes, our own wording). The real files are
checked outside the project. End-to-end runs go through the loopback OpenAI-compatible server
with the real SDK, without xdist and with ``-n 2``; the requests the plugin sends are compared
with the requests the fixture's own (upstream-shaped) code sends for the same inputs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import read_json
from llm_server import OPENAI_PATH, LLMServer

from pytest_memeval.benchmarks.download import file_sha256
from pytest_memeval.protocols import (
    PROFILES,
    ProtocolSourceError,
    StringRef,
    UpstreamFile,
    load_protocol,
)
from pytest_memeval.protocols.judges import mem0_official_label
from pytest_memeval.protocols.source import SourceText, extract, read_upstream

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "protocols"
KEY = "sk-loopback-protocols"
XDIST_MODES = {"no-xdist": ["-p", "no:xdist"], "n2": ["-n", "2"]}


@pytest.fixture(params=list(XDIST_MODES), ids=list(XDIST_MODES))
def xdist_mode(request: pytest.FixtureRequest) -> list[str]:
    return list(XDIST_MODES[request.param])


def _module(path: Path, name: str) -> ModuleType:
    """Import one of *our* upstream-shaped fixture files (test code, never the plugin)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _source(text: str, path: str = "x.py") -> SourceText:
    f = UpstreamFile("o/r", "0" * 40, path, "0" * 64)
    return SourceText(f, text, "memory", "0" * 64)


def _chat_bodies(srv: LLMServer) -> list[dict[str, Any]]:
    return [r.body for r in srv.requests if r.path == OPENAI_PATH]


def _request(body: dict[str, Any]) -> str:
    """The request fields a protocol fixes, canonical (``n=1`` is the API default)."""
    fields = {k: v for k, v in body.items() if k != "n" or v != 1}
    return json.dumps(fields, sort_keys=True, ensure_ascii=False)


# --------------------------------------------------------------------------- unit: extraction


def test_extracts_constants_locals_messages_and_fstrings() -> None:
    text = (
        'A = """one {x}"""\n'
        "def f(k):\n"
        "    if k:\n"
        '        t = "first"\n'
        "    else:\n"
        '        t = "second"\n'
        "    m = {'role': 'user', 'content': f\"p {k} q {k2}\"}\n"
    )
    src = _source(text)
    assert extract(src, StringRef("constant", "A")).text == "one {x}"
    assert extract(src, StringRef("local", "t", "f", 1, expect_count=2)).text == "second"
    t = extract(src, StringRef("message", "m", "f"))
    assert t.fields == ("k", "k2")
    assert t.fill({"k": "1", "k2": "2"}) == "p 1 q 2"
    with pytest.raises(ProtocolSourceError, match="expected 3 assignments, found 2"):
        extract(src, StringRef("local", "t", "f", 0, expect_count=3))
    with pytest.raises(ProtocolSourceError, match="no constant B"):
        extract(src, StringRef("constant", "B"))
    with pytest.raises(ProtocolSourceError, match="cannot parse it as Python"):
        extract(_source("def (:\n"), StringRef("constant", "A"))


def test_extraction_never_executes_the_file(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f'import pathlib\npathlib.Path({str(marker)!r}).write_text("x")\nP = "prompt"\n'
    assert extract(_source(text), StringRef("constant", "P")).text == "prompt"
    assert not marker.exists()


def test_every_profile_pins_full_commits_and_hashes() -> None:
    for profile in PROFILES.values():
        assert len(profile.commit) == 40
        for file in profile.files:
            assert len(file.commit) == 40 and len(file.sha256) == 64
            assert file.url == (
                f"https://raw.githubusercontent.com/{file.repo}/{file.commit}/{file.path}"
            )


def test_local_checkout_is_checked_against_the_pin(tmp_path: Path) -> None:
    path = "evaluation/x.py"
    (tmp_path / "evaluation").mkdir()
    (tmp_path / path).write_text('P = "p"\n')
    pinned = UpstreamFile("o/r", "1" * 40, path, file_sha256(tmp_path / path))
    got = read_upstream(pinned, protocol="mem0", source_dir=tmp_path, cache_dir=tmp_path)
    assert got.matches_pin and got.text == 'P = "p"\n'
    other = UpstreamFile("o/r", "1" * 40, path, "f" * 64)
    assert not read_upstream(
        other, protocol="mem0", source_dir=tmp_path, cache_dir=tmp_path
    ).matches_pin
    with pytest.raises(ProtocolSourceError, match=r"does not exist; give a checkout of o/r"):
        read_upstream(
            UpstreamFile("o/r", "1" * 40, "nope.py", "f" * 64),
            protocol="mem0",
            source_dir=tmp_path,
            cache_dir=tmp_path,
        )


def test_download_is_cached_and_sha_checked(tmp_path: Path) -> None:
    import http.server
    import threading

    body = b'P = "served"\n'
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host = f"http://127.0.0.1:{server.server_address[1]}"
        import hashlib

        good = UpstreamFile("o/r", "2" * 40, "src/p.py", hashlib.sha256(body).hexdigest(), host)
        got = read_upstream(good, protocol="beam", source_dir=None, cache_dir=tmp_path)
        assert got.text == body.decode() and got.matches_pin
        read_upstream(good, protocol="beam", source_dir=None, cache_dir=tmp_path)
        assert hits == [f"/o/r/{'2' * 40}/src/p.py"]  # the second read is the cached file
        bad = UpstreamFile("o/r", "3" * 40, "src/p.py", "0" * 64, host)
        with pytest.raises(ProtocolSourceError, match="sha256 mismatch"):
            read_upstream(bad, protocol="beam", source_dir=None, cache_dir=tmp_path)
    finally:
        server.shutdown()
        server.server_close()


def test_offline_message_names_the_url_and_the_option(tmp_path: Path) -> None:
    file = UpstreamFile("o/r", "4" * 40, "src/p.py", "0" * 64, "http://127.0.0.1:9")
    with pytest.raises(ProtocolSourceError) as info:
        read_upstream(file, protocol="mem0", source_dir=None, cache_dir=tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert file.url in message and "--memeval-protocol-source=DIR" in message
    assert f"commit {'4' * 40}" in message and "DIR/src/p.py" in message


def test_mem0_official_label_reads_like_mem0() -> None:
    assert mem0_official_label('{"label": "CORRECT"}') == 1.0
    assert mem0_official_label('```json\n{"label": "WRONG"}\n```') == 0.0
    assert mem0_official_label('Reason. {"label": "correct"}') == 0.0  # case-sensitive
    assert mem0_official_label("CORRECT") is None  # upstream raises
    assert mem0_official_label('{"verdict": "CORRECT"}') is None


def test_all_fixture_profiles_load() -> None:
    for name in PROFILES:
        loaded = load_protocol(name, source_dir=FIXTURES / name, cache_dir=Path("/nonexistent"))
        assert set(loaded.templates) == set(PROFILES[name].prompts)
        assert all(not s.matches_pin for s in loaded.sources.values())


# --------------------------------------------------------------------------- end to end


def _mem0_reply(messages: list[dict[str, str]], model: str, params: dict[str, Any]) -> str:
    text = messages[-1]["content"]
    if "Generated answer: " not in text:
        return "ANSWER: beagle"
    generated = text.split("Generated answer: ", 1)[1].split("\n", 1)[0]
    if not generated.strip():
        return "I cannot say"  # not JSON: Mem0's parser would raise; counted 0
    words = set(generated.lower().split())
    return json.dumps({"label": "CORRECT" if len(words) % 2 else "WRONG"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer(reply=_mem0_reply) as srv:
        for key, value in srv.env(KEY).items():
            monkeypatch.setenv(key, value)
        yield srv


pytestmark = pytest.mark.usefixtures("memeval_env")


def test_mem0_protocol_requests_match_mem0s_code_path(
    pytester: pytest.Pytester, server: LLMServer, xdist_mode: list[str]
) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={FIXTURES / 'mem0'}",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-json={out}",
        *xdist_mode,
    )
    assert result.ret == 0, result.stdout.str()
    report = read_json(out)
    questions = report["runs"][0]["questions"]
    judged = [q for q in questions if q["category"] != "adversarial"]
    assert len(judged) < len(questions)  # the demo has category-5 questions
    for q in questions:
        if q["category"] == "adversarial":
            assert "judge" not in q["scores"]
    plugin_requests = sorted(_request(b) for b in _chat_bodies(server))
    assert len(plugin_requests) == len(judged)  # one call per judged question, none for cat 5

    # what Mem0's (upstream-shaped) evaluate_llm_judge sends for the same inputs
    server.reset()
    module = _module(FIXTURES / "mem0" / "evaluation" / "metrics" / "llm_judge.py", "m0_judge")
    labels = []
    for q in judged:
        try:
            labels.append(module.evaluate_llm_judge(q["question"], q["gold"], q["prediction"]))
        except json.JSONDecodeError:
            labels.append(False)  # Mem0's script would stop here; the plugin counts it 0
    upstream_requests = sorted(_request(b) for b in _chat_bodies(server))
    assert plugin_requests == upstream_requests
    body = _chat_bodies(server)[0]
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0 and body["model"] == "gpt-4o-mini"
    assert "max_tokens" not in body and "max_completion_tokens" not in body
    assert [m["role"] for m in body["messages"]] == ["user"]

    # J = fraction of CORRECT labels over the judged questions
    overall = report["runs"][0]["summary"]["overall"]["judge"]
    assert overall == pytest.approx(sum(labels) / len(labels))
    assert {q["id"]: q["scores"]["judge"] for q in judged} == {
        q["id"]: float(label) for q, label in zip(judged, labels, strict=True)
    }

    prov = report["provenance"]
    assert prov["judge_style"] == {"demo": "mem0-official"}
    protocol = prov["protocol"]
    assert protocol["name"] == "mem0" and protocol["commit"] == PROFILES["mem0"].commit
    files = {f["path"]: f for f in protocol["files"]}
    judge_file = files["evaluation/metrics/llm_judge.py"]
    assert judge_file["sha256"] == PROFILES["mem0"].prompts["judge"][0].sha256
    assert judge_file["file_sha256"] == file_sha256(
        FIXTURES / "mem0" / "evaluation" / "metrics" / "llm_judge.py"
    )
    assert judge_file["matches_pin"] is False
    assert len(protocol["prompt_sha256"]["judge"]) == 64
    assert protocol["judge_models"] == ["openai:gpt-4o-mini"]
    result.stdout.fnmatch_lines(["*demo: judge >= * (mem0-official judge decides*"])
    if "-n" not in xdist_mode:
        result.stdout.fnmatch_lines(["*ProtocolWarning*not the mem0 protocol's pinned*"])


def test_protocol_offline_is_a_usage_error_before_any_call(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={pytester.path}",
        "--memeval-judge=openai:gpt-4o-mini",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*llm_judge.py does not exist; give a checkout of mem0ai/mem0*"])
    assert server.request_count == 0


def test_protocol_for_another_benchmark_and_model_mismatch(
    pytester: pytest.Pytester, server: LLMServer
) -> None:
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        "--memeval-protocol=longmemeval",
        f"--memeval-protocol-source={FIXTURES / 'longmemeval'}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-protocol=longmemeval applies to longmemeval*"])
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-protocol=mem0",
        f"--memeval-protocol-source={FIXTURES / 'mem0'}",
        "--memeval-judge=openai:gpt-4.1",
        "-p",
        "no:xdist",
    )
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*judges with gpt-4o-mini; gpt-4.1 gives numbers that are not*"])


def test_bad_judge_prompt_fails_at_configure(pytester: pytest.Pytester, server: LLMServer) -> None:
    bad = pytester.path / "bad.txt"
    bad.write_text("Judge {question} against {nope}")
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        "--memeval-answerer=openai:gpt-4o-mini",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-judge-prompt={bad}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--memeval-judge-prompt*placeholder {nope} is not allowed*"])
    assert server.request_count == 0  # no answerer call was paid for
