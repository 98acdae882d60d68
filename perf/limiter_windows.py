"""The shared rate limiter's figure (issue 36): the demo's two shards side by side, each with a cache
folder of its own (as on two hosts), at ``--memeval-llm-rpm=120`` against the loopback LLM server,
first with one Redis limiter (``--memeval-llm-limiter=redis://...``, a throwaway
``redis-server`` on a free port), then with each shard's own file limiter: the most requests the
server received in any 10 s.

    python perf/limiter_windows.py                                # bm25, no -n
    python perf/limiter_windows.py --memsys=bm25,full-context -n 2

Needs Debian's redis-server and the redis package (``pip install -e '.[dev]'``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "plugin")]

from conftest import run_pytest  # noqa: E402
from llm_server import LLMServer, judge_reply  # noqa: E402
from redis_server import RedisServer, redis_server_missing  # noqa: E402
from test_ratelimit_runs import most_in_window  # noqa: E402


def _shards(folder: Path, server: LLMServer, common: list[str], extra: list[str]) -> list[int]:
    """Both shards at once, each on its own cache folder: their exit codes."""
    folder.mkdir(parents=True, exist_ok=True)
    server.reset()
    codes = [0, 0]

    def shard(i: int) -> None:
        result = run_pytest(
            folder,
            *common,
            f"--memeval-shard={i}/2",
            f"--memeval-cache-dir={folder / f'host{i}'}",
            *extra,
            env=server.env("sk-limiter-windows"),
        )
        codes[i - 1] = result.returncode

    threads = [threading.Thread(target=shard, args=(i,)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--memsys", default="bm25")
    parser.add_argument("--rpm", type=int, default=120)
    parser.add_argument("-n", dest="workers", default=None, help="xdist workers in each shard")
    args = parser.parse_args(argv)
    missing = redis_server_missing()
    if missing is not None:
        print(missing, file=sys.stderr)
        return 2
    common = [
        "--memeval=demo",
        f"--memsys={args.memsys}",
        "--memeval-answerer=openai:gpt-4o-mini",
        "--memeval-judge=openai:gpt-4o-mini",
        f"--memeval-llm-rpm={args.rpm}",
        *(["-n", args.workers] if args.workers else []),
    ]
    with (
        tempfile.TemporaryDirectory(prefix="limiter-windows-") as folder,
        LLMServer(reply=judge_reply, latency=0.02) as server,
        RedisServer(Path(folder)) as redis,
    ):
        tmp = Path(folder)
        for label, extra in (
            ("one Redis limiter", [f"--memeval-llm-limiter={redis.url}"]),
            ("each shard's own file limiter", []),
        ):
            codes = _shards(tmp / label.replace(" ", "-").replace("'", ""), server, common, extra)
            times = [r.time for r in server.requests]
            span = max(times) - min(times) if times else 0.0
            print(
                f"{label}: shards exited {codes[0]}, {codes[1]}; {len(times)} requests over "
                f"{span:.1f} s; most in any 10 s: {most_in_window(times, 10.0)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
