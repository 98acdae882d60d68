"""The contract's conversations and its memory measure, pytest-free (split from
``contract_kit.py``): the demo's conversations and questions, the constructed ones (a marked pair
for isolation and dump, a unicode one, a LongMemEval-S-sized one) and :func:`peak_growth`, the
growth of this process's resident memory while a block runs."""

from __future__ import annotations

import os
import random
import resource
import sys
import threading
import tracemalloc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta

from ..records import Conversation, Memory, Question, Session, Turn

__all__ = [
    "MARKER",
    "SCALE_SESSIONS",
    "SCALE_TURNS_PER_SESSION",
    "conversation_ids",
    "demo_conversation",
    "demo_questions",
    "make_question",
    "marked_conversation",
    "memories_key",
    "peak_growth",
    "scale_conversation",
    "show",
    "unicode_conversation",
]

MARKER = "zephyrquill"
#: the sizes of the constructed LongMemEval-S-sized conversation
SCALE_SESSIONS = 50
SCALE_TURNS_PER_SESSION = 10
SCALE_WORDS_PER_TURN = 210  # ~115k tokens in all (cl100k_base: 1.09 tokens a word here)


def _demo() -> tuple[tuple[Conversation, ...], tuple[Question, ...]]:
    from ..benchmarks.locomo import load_demo

    parsed = load_demo()
    return tuple(parsed.conversations), tuple(parsed.questions)


def demo_questions(conversation_id: str) -> tuple[Question, ...]:
    return tuple(q for q in _demo()[1] if q.conversation_id == conversation_id)


def demo_conversation(conversation_id: str) -> Conversation:
    return next(c for c in _demo()[0] if c.id == conversation_id)


def make_question(conversation_id: str, qid: str, text: str) -> Question:
    return Question(
        id=qid, conversation_id=conversation_id, category="contract", question=text, gold=None
    )


def marked_conversation(conversation_id: str, *, marker: str | None) -> Conversation:
    """A demo conversation under a new id, with one more session whose turns mention ``marker``
    (None: an ordinary extra session), so what was ingested for it can be told apart."""
    base = demo_conversation("demo-1" if marker else "demo-2")
    last = base.sessions_by_date()[-1]
    date = last.date + timedelta(days=3) if last.date is not None else None
    word = marker or "lighthouse"
    speakers = base.speakers or ("Maya", "Jonas")
    n = len(base.sessions) + 1
    extra = Session(
        id=f"S{n}",
        date=date,
        date_raw=date.strftime("%I:%M %p on %d %B, %Y") if date else "",
        turns=(
            Turn(f"D{n}:1", speakers[0], f"The code word for the locker is {word}, remember it."),
            Turn(f"D{n}:2", speakers[-1], f"Got it: {word}. I wrote {word} in my notebook."),
        ),
    )
    return replace(base, id=conversation_id, sessions=(*base.sessions, extra))


def unicode_conversation() -> Conversation:
    """Accents, CJK, emoji, right-to-left and combining text."""
    texts = (
        ("Zoë", "Je suis allée au café à Montréal; crème brûlée délicieuse!"),
        ("Hiro", "東京の桜はとても綺麗でした。来年も行きたいです。"),
        ("Zoë", "My cat 🐈 knocked over the 🌵 again 😅"),
        ("Amir", "مرحبا! كيف حالك اليوم؟"),
        ("Hiro", "Ångström, naïve façade, São Paulo, Kraków, ẞ and e\u0301 (combining)."),
    )
    turns = tuple(Turn(f"D1:{i}", s, t) for i, (s, t) in enumerate(texts, 1))
    session = Session("S1", datetime(2024, 5, 1, 9, 30), turns, date_raw="9:30 am on 1 May, 2024")
    return Conversation("contract-unicode", (session,), speakers=("Zoë", "Hiro", "Amir"))


_VOCABULARY = (
    "garden kitchen weekend project meeting travel recipe piano bicycle library museum concert "
    "budget doctor sister brother neighbour market coffee mountain river morning evening winter "
    "summer holiday train airport ticket camera painting novel chapter puppy kitten yoga "
    "marathon deadline promotion apartment furniture lamp window curtain bakery bread cheese "
    "tomato basil pasta soup salad birthday anniversary wedding gift letter email phone laptop "
    "software update backup password printer office colleague manager client invoice report"
)
_WORDS = tuple(_VOCABULARY.split())


def scale_conversation() -> Conversation:
    """A LongMemEval-S-sized conversation: 50 sessions of 10 turns, ~115k tokens, made of
    seeded pseudo-random sentences (the same on every run and machine)."""
    rng = random.Random(39)
    start = datetime(2023, 1, 2, 9, 0)
    sessions = []
    for s in range(1, SCALE_SESSIONS + 1):
        date = start + timedelta(days=7 * s)
        turns = []
        for t in range(1, SCALE_TURNS_PER_SESSION + 1):
            words = rng.choices(_WORDS, k=SCALE_WORDS_PER_TURN)
            text = " ".join(
                " ".join(words[i : i + 12]).capitalize() + "." for i in range(0, len(words), 12)
            )
            turns.append(Turn(f"D{s}:{t}", "user" if t % 2 else "assistant", text))
        sessions.append(
            Session(f"S{s}", date, tuple(turns), date_raw=date.strftime("%Y/%m/%d (%a) %H:%M"))
        )
    return Conversation("contract-scale", tuple(sessions), speakers=("user", "assistant"))


def conversation_ids(conversation: Conversation) -> frozenset[str]:
    return frozenset(
        {s.id for s in conversation.sessions} | {t.id for _, t in conversation.turns()}
    )


def show(memories: Sequence[Memory]) -> str:
    """The first three memories, shortly: ``['Maya: The code word…' D4:1 S4, ...]``."""

    def one(m: Memory) -> str:
        text = m.text if len(m.text) <= 40 else m.text[:39] + "…"
        return " ".join([repr(text), *m.source_ids])

    more = f", … {len(memories) - 3} more" if len(memories) > 3 else ""
    return "[" + ", ".join(one(m) for m in memories[:3]) + more + "]"


def memories_key(memories: Sequence[Memory]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple((m.text, m.source_ids) for m in memories)


def _rss_bytes() -> int | None:
    """The process's resident memory now (Linux ``/proc``), else None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def peak_growth() -> Iterator[list[float]]:
    """The largest growth of the process's memory while the block runs, in MiB (the list's one
    element, filled on exit): the larger of the resident size's growth (sampled every 20 ms from
    ``/proc/self/statm``; where that is missing, the growth of ``getrusage``'s ``ru_maxrss``) and
    the peak of Python's own allocations (``tracemalloc``)."""
    out = [0.0]
    with _traced_peak() as traced, _rss_growth() as rss:
        yield out
    out[0] = max(rss[0], traced[0])


@contextmanager
def _traced_peak() -> Iterator[list[float]]:
    """The peak of Python's own allocations while the block runs, in MiB (``tracemalloc``): a
    long-lived process reuses memory it freed earlier without its resident size growing, so the
    resident size alone can miss what an ingest keeps."""
    out = [0.0]
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        yield out
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        if started:
            tracemalloc.stop()
        out[0] = max(0, peak - base) / 2**20


@contextmanager
def _rss_growth() -> Iterator[list[float]]:
    out = [0.0]
    start = _rss_bytes()
    if start is None:
        scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        yield out
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        out[0] = max(0, after - before) / 2**20
        return
    peak = [start]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            now = _rss_bytes()
            if now is not None and now > peak[0]:
                peak[0] = now

    sampler = threading.Thread(target=sample, name="memeval-contract-rss", daemon=True)
    sampler.start()
    try:
        yield out
    finally:
        done.set()
        sampler.join()
        end = _rss_bytes() or start
        out[0] = max(0, max(peak[0], end) - start) / 2**20
