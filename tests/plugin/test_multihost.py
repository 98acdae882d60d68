"""Multi-host runs through pytest-xdist gateways, tested on one machine: a socket gateway on
127.0.0.1 (execnet's socket server, as on a remote host) plus local popen workers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from conftest import INNER_ADDOPTS, question_scores, read_json

pytestmark = pytest.mark.usefixtures("memeval_env")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def socket_gateway(pytester: pytest.Pytester) -> Iterator[str]:
    port = _free_port()
    env = dict(os.environ, PYTEST_ADDOPTS=INNER_ADDOPTS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "execnet.script.socketserver", f"127.0.0.1:{port}"],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 20
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("execnet socket server did not start")
    try:
        yield f"socket=127.0.0.1:{port}//chdir={pytester.path}"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_socket_and_popen_gateways_match_a_local_run(
    pytester: pytest.Pytester, socket_gateway: str
) -> None:
    local = pytester.path / "local.json"
    result = pytester.runpytest(
        "--memeval=demo", "--memsys=bm25,full-context", f"--memeval-json={local}"
    )
    assert result.ret == 0, result.stdout.str()
    remote = pytester.path / "remote.json"
    # In a child process: execnet leaves the socket gateway's client socket to the garbage
    # collector, and its ResourceWarning would land on whichever later test triggers a collection.
    result = pytester.runpytest_subprocess(
        "--memeval=demo",
        "--memsys=bm25,full-context",
        f"--memeval-json={remote}",
        "--tx",
        socket_gateway,
        "--tx",
        "popen",
        "--dist",
        "load",
    )
    assert result.ret == 0, result.stdout.str()
    a, b = read_json(local), read_json(remote)
    assert question_scores(a) == question_scores(b)
    # results aggregated on the controller; each conversation ingested once per system overall
    assert b["provenance"]["ingests"] == {"bm25": 2, "full-context": 2}
    for run_a, run_b in zip(a["runs"], b["runs"], strict=True):
        assert run_a["summary"]["by_category"] == run_b["summary"]["by_category"]


def test_two_popen_gateways(pytester: pytest.Pytester) -> None:
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        "--memeval=demo",
        "--memsys=bm25",
        f"--memeval-json={out}",
        "--tx",
        "2*popen",
        "--dist",
        "load",
    )
    assert result.ret == 0, result.stdout.str()
    assert read_json(out)["provenance"]["ingests"] == {"bm25": 2}
