"""What the hosted-service adapters (``zep``, ``letta``, ``supermemory``) share: settings from the
environment, the official SDK imported on demand, SDK errors turned into AdapterErrors that never
show the API key, turn text, source ids, the top-k cut and dates (pure Python; no pytest).

Each adapter is a class whose constructor takes no required argument (the entry-point factory the
plugin calls once per conversation); its SDK is an optional extra (``pytest-memeval[zep]`` ...).
"""

from __future__ import annotations

import importlib
import os
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from ..errors import AdapterError
from ..llm import REDACTED, redact
from ..records import Memory, Session

__all__ = [
    "ServiceSettings",
    "call_service",
    "cut_top_k",
    "import_sdk",
    "parse_date",
    "release_on_drop",
    "session_date_iso",
    "settings_from_env",
    "source_ids",
    "store_name",
]

T = TypeVar("T")


@dataclass(frozen=True)
class ServiceSettings:
    """Where a hosted service is and its key (``repr`` never shows the key)."""

    service: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    #: seconds one HTTP request may take before the SDK gives up
    timeout: float = 60.0


def settings_from_env(
    service: str,
    *,
    url_var: str,
    key_var: str,
    default_url: str,
    key_required: bool = True,
    environ: Mapping[str, str] | None = None,
) -> ServiceSettings:
    """``url_var`` (default ``default_url``) and ``key_var`` from the environment; a missing
    required key is an AdapterError naming the variable (never a value)."""
    env = os.environ if environ is None else environ
    base_url = (env.get(url_var) or "").strip() or default_url
    api_key = (env.get(key_var) or "").strip() or None
    if api_key is None and key_required:
        raise AdapterError(
            f"memory system {service!r}: set {key_var} to the service's API key "
            f"(and {url_var} for another endpoint than {default_url})"
        )
    timeout_text = (env.get("MEMEVAL_HOSTED_TIMEOUT") or "").strip()
    try:
        timeout = float(timeout_text) if timeout_text else 60.0
    except ValueError:
        raise AdapterError(
            f"memory system {service!r}: MEMEVAL_HOSTED_TIMEOUT={timeout_text!r} is not a number "
            "of seconds"
        ) from None
    return ServiceSettings(service=service, base_url=base_url, api_key=api_key, timeout=timeout)


def import_sdk(service: str, module: str, distribution: str) -> Any:
    """The SDK module, or an AdapterError that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise AdapterError(
            f"memory system {service!r} needs the official {distribution} SDK: "
            f"pip install 'pytest-memeval[{service}]' ({exc})"
        ) from None


def _scrub(text: str, secrets: Iterable[str | None]) -> str:
    text = redact(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def call_service(settings: ServiceSettings, what: str, fn: Callable[[], T]) -> T:
    """``fn()``; whatever it raises becomes one AdapterError naming the service and the call, with
    the API key removed from the message (an error body may echo it)."""
    try:
        return fn()
    except AdapterError:
        raise
    except Exception as exc:
        detail = _scrub(f"{type(exc).__name__}: {exc}", [settings.api_key])
        if len(detail) > 500:
            detail = detail[:500] + "..."
        raise AdapterError(
            f"{settings.service} ({settings.base_url}): {what} failed: {detail}"
        ) from None


def release_on_drop(
    owner: object, delete: Callable[[], object], close: Callable[[], object]
) -> weakref.finalize[Any, Any]:
    """Delete the conversation's store on the service and close the connection when ``owner`` is
    dropped: the run makes one instance per conversation and drops it when it moves on, without
    a ``reset()`` (that is for one instance serving several conversations). ``delete`` and
    ``close`` must not refer to ``owner``. A failure to delete at that point is not raised (a
    garbage collection must not raise): the store stays on the service. ``reset()`` detaches the
    finalizer and deletes with errors shown."""

    def run() -> None:
        try:
            delete()
        except Exception:
            pass
        finally:
            close()

    return weakref.finalize(owner, run)


def store_name(conversation_id: str) -> str:
    """A fresh name for one conversation's store on the service: the conversation id plus a random
    suffix, so reruns, xdist workers and several machines never share a store."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in conversation_id)[:80]
    return f"memeval-{safe}-{uuid.uuid4().hex[:12]}"


def session_date_iso(session: Session) -> str | None:
    """The session's date in ISO 8601 (None when it has no parsed date)."""
    return session.date.isoformat() if session.date is not None else None


def parse_date(value: object) -> datetime | str | None:
    """A service's date field as a ``datetime`` when it is ISO 8601, else the text (or None)."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value


def source_ids(ids: Iterable[object], known: frozenset[str]) -> tuple[str, ...]:
    """The turn / session ids among ``ids`` that this instance ingested (in order, each once):
    an id the service returns but this conversation never had is dropped, not reported."""
    out: list[str] = []
    for value in ids:
        text = str(value) if value is not None else ""
        if text in known and text not in out:
            out.append(text)
    return tuple(out)


def cut_top_k(memories: Sequence[Memory], k: int) -> list[Memory]:
    """At most ``k`` memories, in the service's order (the same top-k as the built-ins: the
    service is asked for ``k`` and whatever more it returns is cut here)."""
    return list(memories[: max(k, 0)])
