"""Test-only: upstream MemoryAgentBench's scoring functions, executed from its own source.

``utils/eval_other_utils.py`` is read at the pinned commit from a local snapshot of
``HUST-AI-HYZ/MemoryAgentBench`` (``MEMEVAL_MAB_UPSTREAM``: a git directory or a checkout; default
the ``fetch`` mirror), its sha256 checked, and the scoring functions taken out with ``ast`` and
executed unchanged. Only the module's top-level imports (nltk, tiktoken, editdistance, numpy: not
needed by these functions) are left out; ``rouge_scorer_instance`` is built by upstream's own
assignment statement, run against rouge-score (a stub with no ROUGE types when rouge-score is not
installed: ``load_upstream(rouge=False)`` too). Nothing of it is copied into the repository;
``make_vectors`` writes the outputs the unit tests compare with (``python tests/mab_upstream.py
tests/fixtures/memoryagentbench/upstream_vectors.jsonl``, with rouge-score installed).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import re
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_memeval.benchmarks.memoryagentbench import UPSTREAM

SCORER = "utils/eval_other_utils.py"
DEFAULT = "/work/.mirror/HUST-AI-HYZ+MemoryAgentBench/repo"
FUNCTIONS = (
    "normalize_answer",
    "f1_score",
    "drqa_exact_match_score",
    "substring_exact_match_score",
    "drqa_metric_max_over_ground_truths",
    "parse_output",
    "calculate_metrics",
    "post_process",
    "_process_icl_dataset",
    "_process_eventqa_dataset",
    "_process_infbench_longmemeval_dataset",
    "_process_choice_eng_dataset",
    "_process_ruler_memory_merging_dataset",
    "default_post_process",
)


def snapshot_file_bytes(root: Path, commit: str, path: str) -> bytes | None:
    """``path`` of an upstream snapshot ``root`` (a checkout, or a git directory read at
    ``commit``); None when there is no snapshot or no such file. Shared by the upstream helpers
    of every suite (tests/halumem_upstream.py)."""
    if (root / path).is_file():
        return (root / path).read_bytes()
    if not root.is_dir():
        return None
    done = subprocess.run(
        ["git", f"--git-dir={root}", "show", f"{commit}:{path}"],
        capture_output=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def upstream_file_bytes(path: str) -> bytes | None:
    """A file of the upstream snapshot at the pinned commit (None when there is no snapshot)."""
    root = Path(os.environ.get("MEMEVAL_MAB_UPSTREAM", DEFAULT))
    return snapshot_file_bytes(root, UPSTREAM.commit, path)


def _source() -> bytes | None:
    return upstream_file_bytes(SCORER)


class _NoRouge:
    rouge_types: tuple[str, ...] = ()

    def score(self, target: str, prediction: str) -> dict[str, Any]:
        return {}


def _rouge_assignment(tree: ast.Module) -> ast.stmt:
    """Upstream's ``rouge_scorer_instance = rouge_scorer.RougeScorer(...)`` statement."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "rouge_scorer_instance" for t in node.targets
        ):
            return node
    raise AssertionError(f"{SCORER}: no rouge_scorer_instance assignment")


def load_upstream(rouge: bool = True) -> dict[str, Any] | None:
    """Upstream's functions by name, or None when no snapshot is present. ``rouge``: build
    upstream's ROUGE scorer with rouge-score when it is installed (else the stub)."""
    raw = _source()
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != UPSTREAM.scorer[SCORER]:
        raise AssertionError(f"{SCORER}: sha256 {digest}, pinned {UPSTREAM.scorer[SCORER]}")
    tree = ast.parse(raw)
    keep: list[ast.stmt] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS
    ]
    assert {n.name for n in keep if isinstance(n, ast.FunctionDef)} == set(FUNCTIONS)
    ns: dict[str, Any] = {
        "re": re,
        "string": string,
        "Counter": Counter,
        "rouge_scorer_instance": _NoRouge(),
    }
    try:
        from rouge_score import rouge_scorer
    except ImportError:
        rouge = False
    if rouge:
        ns["rouge_scorer"] = rouge_scorer
        keep.insert(0, _rouge_assignment(tree))
    module = ast.Module(body=keep, type_ignores=[])
    exec(compile(module, SCORER, "exec"), ns)  # pinned upstream source, tests only
    return ns


def upstream_scores(ns: dict[str, Any], source: str, output: str, answer: Any) -> dict[str, float]:
    """``post_process`` of upstream for one reply, values as floats (bools -> 0 / 1)."""
    metrics, _ = ns["post_process"]({"output": output}, answer, {"sub_dataset": source})
    return {k: float(v) for k, v in metrics.items()}


SOURCES = (
    "icl_banking77_5900shot_balance",
    "eventqa_full",
    "infbench_qa_eng_shots2",
    "infbench_choice_eng_shots2",
    "longmemeval_s_-1_500",
    "ruler_qa1_197K",
    "ruler_niah_mq_131k",
    "factconsolidation_sh_6k",
    "detective_qa",
    "infbench_sum_eng_shots2",
)
OUTPUTS = (
    "",
    "Paris",
    "Answer: Paris",
    "answer:  the Paris.\nmore",
    "I think the answer is Paris, France!",
    "Answer: Answer: yes",
    "no",
    "NoAnswer",
    "B. Mary Smith",
    "Zoë went to São Paulo — café",
    "The  Eiffel   Tower\n\nAnswer: an eiffel tower",
    "label: 42\nAnswer: 17",
    "42",
    "first line\nsecond line",
    "   \n  ",
    "a an the",
    "Smith, Mary; Jones, Bob",
    "日本語の答え",
    "Answer:\nParis",
    # ROUGE-L against ROUGE-Lsum (newline-split summaries) and the Porter stemmer
    "The cats were running to the stores.\nThey bought milk and eggs.",
    "They bought eggs\n\nthe cats ran quickly to a store",
)
ANSWERS: tuple[Any, ...] = (
    ["Paris"],
    ["Paris", "Paris, France"],
    [["Paris", "City of Light"], ["France"]],
    "Paris",
    ["yes"],
    ["no"],
    ["A", "Mary Smith"],
    ["Mary", "Smith"],
    ["São Paulo", "cafe"],
    ["the eiffel tower"],
    ["17"],
    ["42", "17"],
    ["日本語の答え"],
    ["?!"],
    ["Zoë"],
    ["The cat ran to the store.\nIt bought eggs and milk."],
    "running cats buying milk",
)


def make_vectors() -> list[dict[str, Any]]:
    ns = load_upstream()
    if ns is None:
        raise SystemExit(f"no upstream snapshot (set MEMEVAL_MAB_UPSTREAM; default {DEFAULT})")
    rows = []
    for source in SOURCES:
        for output in OUTPUTS:
            for answer in ANSWERS:
                try:
                    scores = upstream_scores(ns, source, output, answer)
                except (IndexError, AttributeError, ZeroDivisionError) as exc:
                    scores = {"error": type(exc).__name__}  # type: ignore[dict-item]
                rows.append(
                    {"source": source, "output": output, "answer": answer, "scores": scores}
                )
    return rows


# --------------------------------------------------------------------------- LongMemEval judge

#: upstream's LongMemEval judge script (its reference loader and prompt builder)
LONGMEM_EVAL = "llm_based_eval/longmem_qa_evaluate.py"


class _Split(list[dict[str, Any]]):
    """What ``load_dataset(..., split=...)`` returns, as far as upstream uses it (``filter``)."""

    def filter(self, keep: Any) -> _Split:
        return _Split(r for r in self if keep(r))


def upstream_references(records: list[dict[str, Any]], source: str) -> list[dict[str, Any]] | None:
    """``load_references_from_huggingface`` of the pinned ``longmem_qa_evaluate.py``, executed
    unchanged on ``records`` (``load_dataset`` returns them; its prints are dropped): the
    (question, answer, question_id, question_type) entries its judge loop sends, records with
    mismatched counts skipped as upstream skips them. None without a snapshot."""
    from pytest_memeval.protocols import MAB_LONGMEM_FILE

    raw = upstream_file_bytes(LONGMEM_EVAL)
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != MAB_LONGMEM_FILE.sha256:
        raise AssertionError(f"{LONGMEM_EVAL}: sha256 {digest}, pinned {MAB_LONGMEM_FILE.sha256}")
    tree = ast.parse(raw)
    keep = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "load_references_from_huggingface"
    ]
    ns: dict[str, Any] = {
        "load_dataset": lambda *a, **k: _Split(records),
        "print": lambda *a, **k: None,
    }
    exec(compile(ast.Module(body=keep, type_ignores=[]), LONGMEM_EVAL, "exec"), ns)
    refs: list[dict[str, Any]] = ns["load_references_from_huggingface"]("hf", source)
    return refs


# --------------------------------------------------------------------------- recommendation

RECSYS_FUNCTIONS = (
    "clean_text_elements",
    "clean_parentheses",
    "normalize_whitespace",
    "remove_numbering",
    "extract_movie_name",
    "find_nearest_movie",
    "extract_recommendation_list",
    "_process_recsys_dataset",
)
#: the constructed movie table (our own, in upstream's entity2id.json shape)
MOVIE_TABLE = (
    Path(__file__).resolve().parent
    / "fixtures"
    / "memoryagentbench"
    / "data"
    / "memoryagentbench"
    / "entity2id.json"
)


def _ordered_set(items: Any) -> dict[Any, None]:
    """``set`` with insertion order: upstream's ``list(set(candidates))`` in table order."""
    return dict.fromkeys(items)


def load_upstream_recsys(ordered: bool = True) -> dict[str, Any] | None:
    """Upstream's recommendation scorer, executed from the pinned file with numpy and
    editdistance (None without a snapshot). ``ordered``: ``set`` inside those functions keeps
    insertion order, so nearest-name ties resolve in table order (upstream's own order depends
    on the string hash seed)."""
    raw = _source()
    if raw is None:
        return None
    import editdistance
    import numpy as np

    tree = ast.parse(raw)
    keep: list[ast.stmt] = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in RECSYS_FUNCTIONS
    ]
    assert {n.name for n in keep if isinstance(n, ast.FunctionDef)} == set(RECSYS_FUNCTIONS)
    ns: dict[str, Any] = {
        "re": re,
        "os": os,
        "json": json,
        "np": np,
        "edit_distance": editdistance.eval,
        "print": lambda *a, **k: None,  # upstream prints the split's exception
        # upstream's json.load(open(path)) leaves the file open (a ResourceWarning here)
        "open": lambda path: io.StringIO(Path(path).read_text("utf-8")),
    }
    if ordered:
        ns["set"] = _ordered_set
    exec(compile(ast.Module(body=keep, type_ignores=[]), SCORER, "exec"), ns)
    return ns


def upstream_recsys(ns: dict[str, Any], table_dir: Path, output: str, answer: Any) -> Any:
    """``_process_recsys_dataset`` run in ``table_dir`` (which holds
    ``processed_data/Recsys_Redial/entity2id.json``, the relative path upstream opens)."""
    here = Path.cwd()
    os.chdir(table_dir)
    try:
        metrics, _ = ns["_process_recsys_dataset"]({"output": output}, answer)
    finally:
        os.chdir(here)
    return {k: float(v) for k, v in metrics.items()}


RECSYS_OUTPUTS = (
    "",
    "1. Blade Runner 2049\n2. Moon\n3. Her",
    "Based on your taste: 1. blade runner 2049 (2017)\n2) Ex Machina - great\n3、Moon",
    "Arrival, Interstellar, Dune, Moon, Gravity",
    "You like quiet sci-fi.\n1. Dune\n2. Up\n3. Us\n4. Amelie\n5. Spider-Man Into the Spider-Verse\n6. The Martian\n7. Interstellar\n8. Gravity\n9. Her\n10. Moon\n11. Ex Machina",
    "1.Moon 2.Arrival",
    "I recommend:\n\n1. Bladerunner\n2. Ex-Machina\n3. The Martian (2015)",
    "Zoë's pick: 1. Amélie",
    "no list here",
    "1. 10\n2. 3",
)
RECSYS_ANSWERS: tuple[Any, ...] = (
    ["3", "10"],
    ["5"],
    [" 8 ", "9"],
    ["11", "14", "4"],
    ["12"],
    "13",
    ["1", "1"],
    ["99"],  # no such id: upstream raises KeyError
    ["x"],  # not an id: upstream raises ValueError
)


def make_recsys_vectors() -> list[dict[str, Any]]:
    ns = load_upstream_recsys()
    if ns is None:
        raise SystemExit(f"no upstream snapshot (set MEMEVAL_MAB_UPSTREAM; default {DEFAULT})")
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "processed_data" / "Recsys_Redial"
        folder.mkdir(parents=True)
        (folder / "entity2id.json").write_bytes(MOVIE_TABLE.read_bytes())
        for output in RECSYS_OUTPUTS:
            for answer in RECSYS_ANSWERS:
                try:
                    scores = upstream_recsys(ns, Path(tmp), output, answer)
                except (KeyError, ValueError) as exc:
                    scores = {"error": type(exc).__name__}
                rows.append(
                    {
                        "source": "recsys_redial_full",
                        "output": output,
                        "answer": answer,
                        "scores": scores,
                    }
                )
    return rows


if __name__ == "__main__":
    out = Path(sys.argv[1])
    make = make_recsys_vectors if "recsys" in out.name else make_vectors
    lines = [json.dumps(row, ensure_ascii=False) for row in make()]
    out.write_text("\n".join(lines) + "\n", "utf-8")
