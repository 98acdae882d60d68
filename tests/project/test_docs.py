"""Every shell command in README.md blocks marked `<!-- runnable offline -->` runs and exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"<!-- runnable offline -->\s*```bash\n(.*?)```", re.S)


def _commands() -> list[str]:
    text = README.read_text(encoding="utf-8")
    commands = []
    for block in _BLOCK.findall(text):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if line:
                commands.append(line)
    return commands


def test_readme_has_runnable_commands() -> None:
    commands = _commands()
    assert len(commands) >= 5
    assert "pytest --memeval=demo --memsys=bm25" in commands


@pytest.mark.parametrize("command", _commands())
def test_readme_command_runs(command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMEVAL_"))}
    env["PYTEST_ADDOPTS"] = f"-p no:benchmark -p no:cacheprovider --memeval-cache-dir={tmp_path}/c"
    bindir = Path(sys.executable).parent
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "memeval summary" in proc.stdout
