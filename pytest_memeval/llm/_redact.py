"""Removal of API keys from any text that could leave the process (errors, logs, reports)."""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["KNOWN_KEY_ENVS", "REDACTED", "redact"]

#: Environment variables that may hold an API key; their current values are never shown.
KNOWN_KEY_ENVS: tuple[str, ...] = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
REDACTED = "[REDACTED]"

# Values shorter than this are not treated as secrets: replacing e.g. "x" or "1" (a dummy key for a
# local server) everywhere would mangle text without protecting anything.
_MIN_SECRET_LEN = 6


def redact(text: str, extra_env: Iterable[str | None] = ()) -> str:
    """``text`` with every current value of the known key variables, of every ``*_API_KEY``
    variable and of ``extra_env`` (e.g. the configured ``--memeval-api-key-env``) replaced by
    ``[REDACTED]``. Longest values first, so
    a key that contains another key is removed whole."""
    names = list(KNOWN_KEY_ENVS)
    names.extend(name for name in extra_env if name)
    # Any other *_API_KEY variable too: covers a configured --memeval-api-key-env that the caller
    # did not pass down (e.g. TOGETHER_API_KEY) without keeping module-level state.
    names.extend(name for name in os.environ if name.upper().endswith("_API_KEY"))
    values = {os.environ.get(name, "").strip() for name in names}
    for value in sorted((v for v in values if len(v) >= _MIN_SECRET_LEN), key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text
