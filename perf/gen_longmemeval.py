"""Generate a schema-faithful LongMemEval-S-size file and measure the loader's peak memory.

    python perf/gen_longmemeval.py --out /tmp/lme_s.json            # ~277 MB, 500 questions
    python perf/gen_longmemeval.py --out /tmp/small.json --size 20 --questions 50
    python perf/gen_longmemeval.py --measure /tmp/lme_s.json        # peak RSS vs file size

The generated items follow docs/scoring.md#longmemeval-records: question_id (8 hex chars or
``gpt4_`` + 8, 30 of 500 ending in ``_abs``), the six question types in the official proportions,
``question_date`` like ``2023/05/30 (Tue) 23:40``, parallel ``haystack_session_ids`` /
``haystack_dates`` / ``haystack_sessions`` (40-60 sessions, chronological, user/assistant turns with
``has_answer`` on the evidence turns), ``answer_session_ids`` (ids containing ``answer``). Text is
synthetic.

``--measure`` loads the file in a fresh subprocess with the real loader, rebuilds a few
conversations through ``Dataset.conversation_loader``, and prints peak RSS (``resource.getrusage``)
next to the file size, the interpreter's RSS before loading, and the load time. ``--naive`` adds
the same numbers for a plain ``json.load`` of the file, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

TYPES = (
    ("temporal-reasoning", 133),
    ("multi-session", 133),
    ("knowledge-update", 78),
    ("single-session-user", 70),
    ("single-session-assistant", 56),
    ("single-session-preference", 30),
)
ABSTENTION = {
    "multi-session": 12,
    "temporal-reasoning": 6,
    "knowledge-update": 6,
    "single-session-user": 6,
}
_WORD_TEXT = (
    "the a to and of I you my it for in is that with on can what have be this your me about "
    "help some how do are like would also could recipe trip garden budget project car dog "
    "weekend schedule meeting book movie running training plan work team python code data "
    "music concert guitar coffee paint bike apartment rent flight hotel museum photo camera "
    "yoga diet protein salad soup cake bread interview resume salary course exam library"
)
WORDS = _WORD_TEXT.split()
CHARS_PER_TOKEN = 4  # rough; S haystacks are ~115k tokens per question


def _sentence_pool(rng: random.Random, n: int = 4000) -> list[str]:
    pool = []
    for _ in range(n):
        words = rng.choices(WORDS, k=rng.randint(8, 24))
        pool.append(" ".join(words).capitalize() + rng.choice(".?!"))
    return pool


def _text(rng: random.Random, pool: list[str], n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        s = rng.choice(pool)
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


def _fmt_date(d: datetime) -> str:
    return d.strftime("%Y/%m/%d (%a) %H:%M")


def generate(out: Path, size_mb: float, n_questions: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    pool = _sentence_pool(rng)
    types: list[str] = []
    for qtype, count in TYPES:
        types += [qtype] * round(count * n_questions / 500)
    types = (types + [TYPES[0][0]] * n_questions)[:n_questions]
    rng.shuffle(types)
    abs_left = {k: round(v * n_questions / 500) for k, v in ABSTENTION.items()}
    # bytes of turn text per question so that the file reaches size_mb
    per_question = int(size_mb * 1_000_000 / n_questions * 0.93)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for qi, qtype in enumerate(types):
            hexid = f"{rng.getrandbits(32):08x}"
            qid = hexid if rng.random() < 0.786 else f"gpt4_{hexid}"
            if abs_left.get(qtype, 0) > 0:
                qid += "_abs"
                abs_left[qtype] -= 1
            n_sessions = rng.randint(40, 60)
            n_evidence = 1 if qtype.startswith("single") else rng.randint(2, 4)
            evidence_pos = sorted(rng.sample(range(n_sessions), n_evidence))
            start = datetime(2023, 1, 1) + timedelta(minutes=rng.randint(0, 200_000))
            dates = sorted(
                start + timedelta(minutes=rng.randint(0, 180_000)) for _ in range(n_sessions)
            )
            per_session = per_question // n_sessions
            sids: list[str] = []
            sessions: list[list[dict[str, object]]] = []
            answer_ids: list[str] = []
            for si in range(n_sessions):
                is_evidence = si in evidence_pos
                if is_evidence:
                    sid = f"answer_{rng.getrandbits(32):08x}_{si}"
                    answer_ids.append(sid)
                else:
                    sid = rng.choice(("sharegpt_", "ultrachat_", "")) + f"{rng.getrandbits(32):08x}"
                sids.append(sid)
                n_turns = rng.randrange(4, 14, 2)
                turns: list[dict[str, object]] = []
                answer_turn = rng.randrange(0, n_turns, 2)
                for ti in range(n_turns):
                    role = "user" if ti % 2 == 0 else "assistant"
                    share = 0.25 if role == "user" else 1.75
                    turn: dict[str, object] = {
                        "role": role,
                        "content": _text(rng, pool, int(per_session / n_turns * share)),
                    }
                    if is_evidence:
                        turn["has_answer"] = ti == answer_turn
                    turns.append(turn)
                sessions.append(turns)
            qdate = dates[-1] + timedelta(hours=rng.randint(1, 72))
            item = {
                "question_id": qid,
                "question_type": qtype,
                "question": _text(rng, pool, 60).rstrip(".!") + "?",
                "answer": _text(rng, pool, 30) if rng.random() < 0.9 else rng.randint(1, 99),
                "question_date": _fmt_date(qdate),
                "haystack_session_ids": sids,
                "haystack_dates": [_fmt_date(d) for d in dates],
                "haystack_sessions": sessions,
                "answer_session_ids": answer_ids,
            }
            if qi:
                fh.write(", ")
            json.dump(item, fh)
        fh.write("]")


_MEASURE = r"""
import json, resource, sys, time
from pathlib import Path
path = Path(sys.argv[1]); naive = sys.argv[2] == "1"
from pytest_memeval.benchmarks._base import LoadRequest
from pytest_memeval.benchmarks.longmemeval import BENCHMARK
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
if naive:
    with open(path, encoding="utf-8-sig") as fh:
        data = json.load(fh)
    n = len(data); turns = 0
else:
    ds = BENCHMARK.load(LoadRequest(data_dir=None, cache_dir=Path("."), variant=str(path)))
    n = len(ds.questions)
    t1 = time.perf_counter()
    turns = 0
    for q in ds.questions[:5]:
        turns += sum(len(s.turns) for s in ds.conversation(q.id).sessions)
t_load = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"questions": n, "turns_in_5": turns, "rss_before": before, "peak_rss": peak,
                  "seconds": t_load}))
"""


def measure(path: Path, naive: bool) -> dict[str, float]:
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), "1" if naive else "0"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _report(label: str, path: Path, r: dict[str, float]) -> None:
    size = path.stat().st_size
    mb = 1 / 1_000_000
    print(
        f"{label}: file {size * mb:.1f} MB, {int(r['questions'])} questions; "
        f"RSS before load {r['rss_before'] * mb:.1f} MB, peak {r['peak_rss'] * mb:.1f} MB "
        f"(peak - before = {(r['peak_rss'] - r['rss_before']) * mb:.1f} MB = "
        f"{(r['peak_rss'] - r['rss_before']) / size:.3f} x file); {r['seconds']:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, help="write a generated file here")
    ap.add_argument("--size", type=float, default=277.0, help="target size in MB (default 277)")
    ap.add_argument("--questions", type=int, default=500, help="number of questions (500)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--measure", type=Path, metavar="FILE", help="measure loading FILE")
    ap.add_argument("--naive", action="store_true", help="with --measure: also plain json.load")
    args = ap.parse_args(argv)
    if args.out is None and args.measure is None:
        ap.error("give --out FILE to generate and/or --measure FILE")
    if args.out is not None:
        t0 = time.perf_counter()
        generate(args.out, args.size, args.questions, args.seed)
        took = time.perf_counter() - t0
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB) in {took:.1f} s")
    if args.measure is not None:
        _report("indexed loader", args.measure, measure(args.measure, naive=False))
        if args.naive:
            _report("plain json.load", args.measure, measure(args.measure, naive=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
