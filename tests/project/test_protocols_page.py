"""docs/protocols.md is generated (``python -m pytest_memeval.report.cards``): the committed page
equals what the code generates now."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_memeval.report.cards import render_protocols_page

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "protocols.md"
REGENERATE = "python -m pytest_memeval.report.cards > docs/protocols.md"


def test_committed_page_is_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == render_protocols_page(), (
        f"docs/protocols.md is stale: regenerate it with `{REGENERATE}`"
    )


def test_the_command_prints_the_page() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_memeval.report.cards"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == PAGE.read_text(encoding="utf-8")
