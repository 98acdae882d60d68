"""Test-only: upstream LongMemEval-V2's scoring functions, executed from its own source.

``evaluation/qa_eval_metrics.py`` is read at the pinned commit from a local snapshot of
``xiaowu0162/LongMemEval-V2`` (``MEMEVAL_LME2_UPSTREAM``: a git directory or a checkout; default
the ``fetch`` mirror), its sha256 checked, and its module-level imports and constants plus the
non-LLM scoring functions taken out with ``ast`` and executed unchanged. ``upstream_verdict``
applies them as ``evaluation/harness.py`` ``score_prediction`` does. Nothing of it is copied into
the repository; ``make_vectors`` writes the outputs the unit tests compare with
(``python tests/lme2_upstream.py tests/fixtures/longmemeval_v2/upstream_vectors.json``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from mab_upstream import snapshot_file_bytes

from pytest_memeval.benchmarks.longmemeval_v2 import LLM_FUNCTIONS
from pytest_memeval.benchmarks.longmemeval_v2 import UPSTREAM as PINNED

SCORER = "evaluation/qa_eval_metrics.py"
DEFAULT = "/work/.mirror/xiaowu0162+LongMemEval-V2/repo"
ENV = "MEMEVAL_LME2_UPSTREAM"
FUNCTIONS = (
    "normalize_phrase",
    "split_phrases",
    "norm_phrase_set_match",
    "norm_phrase_set_match_ordered",
    "mc_choice_match",
    "_extract_multi_select_letters",
    "mc_choice_set_match",
    "extract_boxed_answer",
    "is_unknown",
    "eval_name",
    "score_to_bool",
    "_parse_eval_value",
    "parse_eval_function_spec",
    "eval_from_spec",
)
CONSTANTS = ("DEFAULT_SEPARATORS", "_MULTI_SELECT_FILLER_WORDS")


def upstream_file_bytes(path: str) -> bytes | None:
    """A file of the upstream snapshot at the pinned commit (None when there is no snapshot)."""
    return snapshot_file_bytes(Path(os.environ.get(ENV, DEFAULT)), PINNED.commit, path)


def load_upstream() -> dict[str, Any] | None:
    """Upstream's functions by name, or None when no snapshot is present."""
    raw = upstream_file_bytes(SCORER)
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PINNED.scorer[SCORER]:
        raise AssertionError(f"{SCORER}: sha256 {digest}, pinned {PINNED.scorer[SCORER]}")
    tree = ast.parse(raw)
    keep: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            keep.append(node)  # stdlib only (json, os, re, typing)
        elif isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS:
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in CONSTANTS for t in targets):
                keep.append(node)
    names = {n.name for n in keep if isinstance(n, ast.FunctionDef)}
    assert names == set(FUNCTIONS), set(FUNCTIONS) - names
    ns: dict[str, Any] = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), SCORER, "exec"), ns)  # tests only
    return ns


def load_upstream_module() -> dict[str, Any] | None:
    """The whole pinned ``qa_eval_metrics.py`` executed (stdlib imports; ``openai`` is imported
    by its ``_create_openai_client`` when a check runs), for its LLM checks: None when no
    snapshot is present. Test only; nothing of it is copied into the repository."""
    raw = upstream_file_bytes(SCORER)
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != PINNED.scorer[SCORER]:
        raise AssertionError(f"{SCORER}: sha256 {digest}, pinned {PINNED.scorer[SCORER]}")
    ns: dict[str, Any] = {"__name__": "lme2_qa_eval_metrics"}
    exec(compile(raw, SCORER, "exec"), ns)  # tests only
    return ns


def upstream_llm_check(
    ns: dict[str, Any], spec: str, question: str, reply: str, answer: str, **config: Any
) -> Any:
    """``harness.score_prediction`` for an LLM-checked question: ``eval_from_spec`` with the
    harness's ``eval_config`` (``config``: evaluator model, base URL, key, reasoning effort,
    max completion tokens, timeout), the question item, the boxed answer and the raw reply;
    the raw reply is the prediction. Returns the checker's bool (before UNKNOWN forces 0)."""
    kwargs = {
        **config,
        "question_item": {"question": question},
        "parsed_prediction": ns["extract_boxed_answer"](reply),
        "model_response": reply,
    }
    return ns["eval_from_spec"](spec, reply, answer, **kwargs)


def upstream_verdict(ns: dict[str, Any], spec: str, reply: str, answer: str) -> dict[str, float]:
    """``harness.score_prediction`` for one reply: the boxed answer scored by the spec's function,
    0 when it is UNKNOWN; an LLM check of a non-UNKNOWN reply is not run (no score)."""
    parsed = ns["extract_boxed_answer"](reply)
    unknown = ns["is_unknown"](parsed)
    out = {"lme2_unknown": 1.0 if unknown else 0.0}
    if ns["eval_name"](spec) in LLM_FUNCTIONS:
        if unknown:
            out["lme2_score"] = 0.0
        return out
    ok = ns["score_to_bool"](ns["eval_from_spec"](spec, parsed, answer))
    out["lme2_score"] = 1.0 if ok and not unknown else 0.0
    return out


SPECS = (
    "norm_phrase_set_match",
    "norm_phrase_set_match|separators=,",
    "norm_phrase_set_match|separators=",
    'norm_phrase_set_match|separators=[";", " or "]',
    "norm_phrase_set_match|lower=false|strip_punct=false",
    "norm_phrase_set_match|normalize_hyphen=False|require_non_empty=false",
    "norm_phrase_set_match_ordered",
    "norm_phrase_set_match_ordered|separators=,;|strip_punct=False",
    "norm_phrase_set_match_ordered|require_non_empty=0",
    "mc_choice_match",
    "mc_choice_match|strip_chars=.)",
    "mc_choice_match|strip_chars=|require_non_empty=false",
    "mc_choice_match|lower=true",
    "mc_choice_set_match",
    "mc_choice_set_match|require_non_empty=false",
    "llm_abstention_checker",
    "llm_gotchas_checker|evaluator_model=x",
)
REPLIES = (
    "",
    "   ",
    "B",
    "b.",
    "(B)",
    "Option B",
    "choice: c",
    "\\boxed{B}",
    "\\boxed{ b. }",
    "\\boxed{Option B.}",
    "The answer is \\boxed{A, C}",
    "\\boxed{A and C}",
    "Final answer: \\boxed{ANSWER: C, A}",
    "\\boxed{ACD}",
    "\\boxed{UNKNOWN}",
    "unknown",
    " Unknown ",
    "\\boxed{unknown.}",
    "\\boxed{}",
    "\\boxed{ }",
    "\\boxed{x} then \\boxed{Sales Report}",
    "\\boxed{\\text{Sales {Report}}}",
    "\\boxed{unclosed Sales Report",
    "Sales Report",
    "sales-report",
    "Sales_Report, Q3; Admin",
    "Go to Admin, then Sales Report, then Export",
    "Export, then Sales Report, then Admin",
    "Reports > Sales > Orders",
    "Café München — Zoë's Ürün",
    "cafe munchen",
    "日本語 の 答え",
    "日本語の答え",
    "Marketing!!! (Newsletter) #2",
    "The premise is wrong: there is no such page.",
    "yes",
    "ß",
    "ﬁ",
    "A;B;C",
)
ANSWERS = (
    "",
    "B",
    "b",
    "A, C",
    "C;A",
    "ACD",
    "Sales Report",
    "sales-report",
    "Admin, Sales Report, Export",
    "Admin; Sales Report",
    "Reports > Sales",
    "Café München",
    "Zoë",
    "日本語の答え",
    "Marketing (Newsletter)",
    "#2",
    "yes",
    "SS",
    "FI",
    " , ; ",
    "no such page or menu",
)


def make_vectors() -> dict[str, Any]:
    """Upstream's verdicts on every (spec, reply, answer) of the lists above, in that nesting
    order, as two strings: ``score`` (``1`` / ``0`` / ``-`` for no score) and ``unknown``."""
    ns = load_upstream()
    if ns is None:
        raise SystemExit(f"no upstream snapshot (set {ENV}; default {DEFAULT})")
    score, unknown = [], []
    for s in SPECS:
        for r in REPLIES:
            for a in ANSWERS:
                v = upstream_verdict(ns, s, r, a)
                score.append("-" if "lme2_score" not in v else str(int(v["lme2_score"])))
                unknown.append(str(int(v["lme2_unknown"])))
    return {
        "commit": PINNED.commit,
        "specs": list(SPECS),
        "replies": list(REPLIES),
        "answers": list(ANSWERS),
        "score": "".join(score),
        "unknown": "".join(unknown),
    }


def expand(vectors: dict[str, Any]) -> list[tuple[str, str, str, dict[str, float]]]:
    """The recorded file as (spec, reply, answer, upstream scores) rows."""
    rows = []
    n = 0
    for s in vectors["specs"]:
        for r in vectors["replies"]:
            for a in vectors["answers"]:
                scores = {"lme2_unknown": float(vectors["unknown"][n])}
                if vectors["score"][n] != "-":
                    scores["lme2_score"] = float(vectors["score"][n])
                rows.append((s, r, a, scores))
                n += 1
    assert n == len(vectors["score"]) == len(vectors["unknown"])
    return rows


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.write_text(json.dumps(make_vectors(), ensure_ascii=False, indent=1) + "\n", "utf-8")
