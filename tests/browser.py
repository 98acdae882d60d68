"""Headless Chromium for the browser tests (the HTML report's and the board's): find the binary
and run it on a page with a throw-away profile, no network and no proxy."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

#: the skip reason when no browser is installed
NO_CHROMIUM = "no chromium binary (install Debian's `chromium` to run the browser check)"


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def run_chromium(
    binary: str, tmp: Path, page: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{page.stem}-{len(extra)}"
    profile.mkdir()
    args = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *extra,
        page.as_uri(),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HTTP", "HTTPS"))}
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, check=False)
