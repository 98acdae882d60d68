"""Malformed judge replies (our own text) for BEAM's reply reading, and a runner that prints, for
the installed ``json_repair``, what each reply reads as under BEAM's rule (BEAM's parse, then
``json.loads(repair_json(reply))`` on any exception).

    python tests/unit/benchmarks/beam_reply_corpus.py            # one JSON line per reply

Run it under two ``json_repair`` releases and compare the lines to see whether the repair
behaviour differs (docs/scoring.md#beam-official-protocol). No pytest import: the unit tests
import ``CORPUS`` from here.
"""

from __future__ import annotations

import json
import sys

#: (name, reply) pairs: well-formed, truncated objects, single quotes, trailing commas, prose
#: around JSON, fences, no JSON at all
CORPUS: tuple[tuple[str, str], ...] = (
    ("plain", '{"score": 1, "reason": "covers the point"}'),
    ("fenced", '```json\n{"score": 0.5, "reason": "partly"}\n```'),
    ("fenced-other-language", '```python\n{"score": 1, "reason": "yes"}\n```'),
    ("prose-before", 'Here is my verdict: {"score": 0, "reason": "missing"}'),
    ("prose-around", 'Verdict follows.\n{"score": 1, "reason": "ok"}\nThanks for asking.'),
    ("nested-braces", 'Sure: {"score": 1, "reason": {"detail": "fine"}} done'),
    ("truncated-after-score", '{"score": 1, "reason": "the response names the'),
    ("truncated-mid-key", '{"score": 0.5, "rea'),
    ("truncated-before-value", '{"score": '),
    ("single-quotes", "{'score': 1, 'reason': 'matches'}"),
    ("single-quotes-prose", "My answer: {'score': 0.5, 'reason': 'half'}"),
    ("trailing-comma", '{"score": 1, "reason": "ok",}'),
    ("trailing-comma-fenced", '```json\n{"score": 0, "reason": "no",}\n```'),
    ("unquoted-keys", "{score: 1, reason: ok}"),
    ("string-score", '{"score": "0.5", "reason": "quoted number"}'),
    ("python-literals", "{'score': 1, 'reason': None, 'ok': True}"),
    ("comment-inside", '{"score": 1, // sure\n "reason": "ok"}'),
    ("two-objects", '{"score": 0} {"score": 1}'),
    ("array", '[{"score": 1, "reason": "list"}]'),
    ("no-json-words", "The response satisfies the rubric item."),
    ("no-json-number", "1"),
    ("empty", ""),
    ("only-brace", "{"),
    ("score-word", "score: 1"),
)


def read_official(reply: str) -> object:
    """BEAM's reading of one reply, raising where BEAM raises (here: via our own
    implementation in :mod:`pytest_memeval.judges._beam`)."""
    from pytest_memeval.judges import read_beam_reply

    return read_beam_reply(reply)


def item_score(reply: str) -> object:
    """The rubric item's score as BEAM's loop reads it (``int()``), or "raises"."""
    from pytest_memeval.benchmarks.beam._judge import beam_official_item

    value, problem = beam_official_item(reply, event_ordering=False)
    return "raises" if problem is not None else value


def outcomes() -> list[dict[str, object]]:
    """Per reply: what BEAM's reading returns (``value``) or the exception it raises
    (``raises``), and the item score (``score``)."""
    out: list[dict[str, object]] = []
    for name, reply in CORPUS:
        row: dict[str, object] = {"name": name, "score": item_score(reply)}
        try:
            row["value"] = read_official(reply)
        except Exception as exc:
            row["raises"] = type(exc).__name__
        out.append(row)
    return out


def main() -> int:
    import json_repair

    version = getattr(json_repair, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("json_repair")
    print(json.dumps({"json_repair": version}))
    for row in outcomes():
        print(json.dumps(row, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
