"""Providers on the official SDKs: ``openai``, ``anthropic`` and ``openai-compatible``.

* ``openai``: OpenAI chat completions. Key from ``OPENAI_API_KEY``; base URL from the explicit
  ``base_url`` argument, else ``OPENAI_BASE_URL``, else the SDK default.
* ``anthropic``: the messages API; system messages go into ``system=``. Key from
  ``ANTHROPIC_API_KEY``; base URL from ``base_url``, else ``ANTHROPIC_BASE_URL``, else the default.
* ``openai-compatible``: the OpenAI SDK against an explicit ``base_url`` (vLLM, Ollama, OpenRouter,
  Kimi, ...); key from the variable named by ``api_key_env`` (default ``OPENROUTER_API_KEY``).
  A local server that needs no key still needs the variable set to any value.

Keys are read from the environment only and handed straight to the SDK; they never appear in a
message, a log line or the cache. The SDKs' own retries are off (``max_retries=0``): the policy in
:mod:`._retry` is the only one. Every SDK exception is translated here into a
:class:`~.retry.TransientError` or :class:`~.retry.PermanentError` with a one-line, redacted
message.
"""

from __future__ import annotations

import contextlib
import http
import importlib
import os
import re
import sys
import threading
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import JudgeError
from ._base import ChatMessage, Completion, Request
from ._redact import redact
from ._retry import PermanentError, TransientError, parse_retry_after

# The SDKs are imported when a client is built, not with this module: importing both costs
# seconds, and a run without LLM options (or one served entirely from the cache) needs neither.

__all__ = [
    "BATCH_PROVIDERS",
    "DEFAULT_BASE_URLS",
    "DEFAULT_KEY_ENVS",
    "PROVIDERS",
    "AnthropicProvider",
    "OpenAIProvider",
    "Provider",
    "ProviderConfig",
    "build_provider",
    "check_credentials",
    "has_batch_api",
    "parse_model_spec",
    "resolve_config",
]

PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "openai-compatible")
DEFAULT_KEY_ENVS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-compatible": "OPENROUTER_API_KEY",
}
_BASE_URL_ENVS: dict[str, str] = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
#: the providers with a batch API (``--memeval-llm-batch``): OpenAI's Batch API, Anthropic's
#: Message Batches (``llm.batch.backend_for``); an OpenAI-compatible endpoint has none
BATCH_PROVIDERS: tuple[str, ...] = ("openai", "anthropic")
_ROLES = frozenset({"system", "user", "assistant"})


def has_batch_api(spec: str) -> bool:
    """Whether the model ``spec`` (``PROVIDER:MODEL``) names a provider of
    :data:`BATCH_PROVIDERS`; False for anything else (a malformed spec too: its own check names
    the fix)."""
    provider, colon, _ = spec.partition(":")
    return bool(colon) and provider in BATCH_PROVIDERS


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` -> ``("openai", "gpt-4o-mini")``. Splits at the first colon, so
    model names with colons (``openai-compatible:llama3.1:8b``) survive."""
    text = (spec or "").strip()
    example = "e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-6 or openai-compatible:MODEL"
    if ":" not in text:
        raise JudgeError(redact(f"model {text!r}: expected PROVIDER:MODEL ({example})"))
    provider, model = (part.strip() for part in text.split(":", 1))
    if provider not in PROVIDERS:
        raise JudgeError(
            redact(
                f"model {text!r}: unknown provider {provider!r}. Available: {', '.join(PROVIDERS)}"
            )
        )
    if not model:
        raise JudgeError(
            redact(f"model {text!r}: the model name after {provider + ':'!r} is empty")
        )
    return provider, model


@dataclass(frozen=True)
class ProviderConfig:
    """A resolved model: everything but the key (which stays in the environment)."""

    provider: str
    model: str
    base_url: str  # effective base URL (part of the cache key)
    key_env: str  # name of the variable holding the key (never its value)

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"


def resolve_config(
    spec: str, *, base_url: str | None = None, api_key_env: str | None = None
) -> ProviderConfig:
    """Resolve provider, model, effective base URL and key variable; no network, no key check.
    ``api_key_env`` applies to ``openai-compatible`` only (the SDK variables are fixed)."""
    provider, model = parse_model_spec(spec)
    if provider == "openai-compatible":
        if not base_url:
            raise JudgeError(
                redact(
                    f"{provider}:{model}: the openai-compatible provider needs "
                    "--memeval-base-url (e.g. http://localhost:11434/v1 for Ollama, "
                    "https://openrouter.ai/api/v1)"
                )
            )
        key_env = api_key_env or DEFAULT_KEY_ENVS[provider]
        effective = base_url
    else:
        key_env = DEFAULT_KEY_ENVS[provider]
        effective = (
            base_url or os.environ.get(_BASE_URL_ENVS[provider]) or DEFAULT_BASE_URLS[provider]
        )
    if not re.match(r"^https?://", effective):
        raise JudgeError(
            redact(
                f"{provider}:{model}: base URL {effective!r} must start with http:// or https://"
            )
        )
    return ProviderConfig(provider, model, effective.rstrip("/"), key_env)


def _api_key(config: ProviderConfig) -> str:
    key = os.environ.get(config.key_env, "").strip()
    if not key:
        hint = (
            " (any non-empty value will do for a local server that needs no key)"
            if config.provider == "openai-compatible"
            else ""
        )
        raise JudgeError(
            redact(
                f"{config.label}: no API key: set the environment variable {config.key_env}{hint}"
            )
        )
    return key


def check_credentials(
    spec: str, *, base_url: str | None = None, api_key_env: str | None = None
) -> ProviderConfig:
    """Fail early (before collection) with a :class:`JudgeError` naming the missing variable."""
    config = resolve_config(spec, base_url=base_url, api_key_env=api_key_env)
    _api_key(config)
    return config


class Provider(Protocol):
    config: ProviderConfig

    def send(self, request: Request) -> Completion:
        """One HTTP request; raises TransientError / PermanentError on failure."""
        ...

    def close(self) -> None: ...


# -- error translation ------------------------------------------------------------------------


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _server_message(body: object, fallback: str) -> str:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])
        if isinstance(err, str):
            return err
    return fallback


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "HTTP error"


def _status_error(
    config: ProviderConfig, status: int, headers: Any, body: object, msg: str
) -> Exception:
    head = f"{status} {_reason(status)}"
    if status in (408, 409, 429) or status >= 500:
        retry_after = parse_retry_after(dict(headers) if headers is not None else None)
        return TransientError(head, status=status, retry_after=retry_after)
    if status == 401:
        text = f"{head} — check {config.key_env}"
    elif status == 403:
        text = f"{head} — the key in {config.key_env} may not use model {config.model!r}"
    elif status == 404:
        text = f"{head} — check the model name {config.model!r} and the base URL {config.base_url}"
    else:
        text = f"{head} — {_one_line(_server_message(body, msg))}"
    return PermanentError(redact(text, (config.key_env,)), status=status)


def _translate(exc: Exception, config: ProviderConfig, timeout: float) -> Exception:
    """Map an openai/anthropic SDK exception onto TransientError / PermanentError. An SDK's
    exception comes from an SDK already imported: the other one is not imported for the check
    (anthropic's import alone costs ~1.8 CPU-s, paid by every process whose calls failed)."""
    for name in ("openai", "anthropic"):
        sdk = sys.modules.get(name)
        if sdk is None:
            continue
        if isinstance(exc, sdk.APIStatusError):
            return _status_error(
                config, exc.status_code, exc.response.headers, exc.body, exc.message
            )
        if isinstance(exc, sdk.APITimeoutError):
            return TransientError(f"request timed out after {timeout:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__})" if cause is not None else ""
            return TransientError(f"connection failed{detail}", connection=True)
        if isinstance(exc, sdk.APIResponseValidationError):
            return TransientError("unreadable reply from the server")
    if isinstance(exc, ValueError | KeyError | IndexError):
        # e.g. a 200 reply whose body is not JSON or lacks the expected fields
        return TransientError(f"unreadable reply from the server ({type(exc).__name__})")
    return exc


def _check_messages(messages: Sequence[ChatMessage]) -> None:
    if not messages:
        raise PermanentError("no messages to send")
    for m in messages:
        if m.role not in _ROLES:
            raise PermanentError(f"unknown message role {m.role!r} (use system, user, assistant)")


def _int(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


# -- providers --------------------------------------------------------------------------------


#: the resource each provider calls, by SDK: the client makes it (importing its module) at the
#: first attribute access, behind a lock every thread of the window would queue on
_RESOURCES = {"openai": ("chat", "completions"), "anthropic": ("messages",)}

#: the reply types the providers parse, by SDK: their pydantic models (and those nested in them)
#: are built once, under the client's lock, before any thread parses a reply
_REPLY_MODELS = {
    "openai": ("openai.types.chat", "ChatCompletion"),
    "anthropic": ("anthropic.types", "Message"),
}


def _model_classes(annotation: object) -> Iterator[type]:
    """The pydantic model classes named in a field's annotation (``list[Choice] | None`` ...)."""
    if isinstance(annotation, type) and hasattr(annotation, "model_rebuild"):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _model_classes(arg)


def _build_reply_models(module: str) -> int:
    """Build the SDK's reply models now; returns how many classes were looked at.

    The SDKs define their models with pydantic's ``defer_build``: each class is built at its first
    use. That build is not thread-safe: a process whose first replies arrive on several threads
    at once (the LLM window) raised ``PydanticUserError: ... BaseModel cannot be instantiated
    directly`` or ``AttributeError: ... __pydantic_core_schema__`` for some of them
    (openai/openai-python#3079 is the same failure in worker processes). Built here, from the
    caller's thread under the client's lock, every later parse finds them complete."""
    where = _REPLY_MODELS.get(module)
    if where is None:
        return 0
    root = getattr(importlib.import_module(where[0]), where[1], None)
    if root is None or not hasattr(root, "model_rebuild"):  # pydantic 1 builds at definition
        return 0
    seen: set[type] = set()
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        # a no-op once built; a model this SDK version cannot build yet stays lazy, as before
        cls.model_rebuild(raise_errors=False)
        for field in cls.model_fields.values():
            todo.extend(_model_classes(field.annotation))
    return len(seen)


class LazySDK:
    """An SDK client built at the first request: a run answered from the cache never imports the
    SDK. The key is checked when the holder is made, so a missing key still fails up front."""

    def __init__(self, config: ProviderConfig, timeout: float, module: str, cls: str) -> None:
        _api_key(config)
        self._config = config
        self._timeout = timeout
        self._module = module
        self._cls = cls
        self._lock = threading.Lock()
        self._client: Any = None

    def get(self) -> Any:
        with self._lock:
            if self._client is None:
                sdk = importlib.import_module(self._module)
                self._client = getattr(sdk, self._cls)(
                    api_key=_api_key(self._config),
                    base_url=self._config.base_url,
                    timeout=self._timeout,
                    max_retries=0,
                )
                resource = self._client
                for name in _RESOURCES.get(self._module, ()):
                    resource = getattr(resource, name)
                _build_reply_models(self._module)
            return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


@contextlib.contextmanager
def _sdk_errors(config: ProviderConfig, timeout: float) -> Iterator[None]:
    """Map an SDK exception to our retry classes (TransientError / PermanentError), redacted."""
    try:
        yield
    except (TransientError, PermanentError):
        raise
    except Exception as exc:
        translated = _translate(exc, config, timeout)
        if translated is exc:
            raise
        raise translated from None


def openai_body(config: ProviderConfig, request: Request) -> dict[str, Any]:
    """The chat-completions body of ``request`` (the synchronous call and the Batch API's lines
    send the same one)."""
    messages, max_tokens = request.messages, request.max_tokens
    _check_messages(messages)
    payload: list[Any] = [{"role": m.role, "content": m.content} for m in messages]
    # OpenAI's own API wants max_completion_tokens (reasoning models reject max_tokens);
    # compatible servers (vLLM, Ollama, older gateways) know max_tokens. An official
    # protocol names the field its upstream code sends.
    field = request.max_tokens_field or (
        "max_completion_tokens" if config.provider == "openai" else "max_tokens"
    )
    body: dict[str, Any] = {"model": config.model, "messages": payload}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if max_tokens is not None:
        body[field] = max_tokens
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    if request.n is not None:
        body["n"] = request.n
    if request.stream is not None:
        body["stream"] = request.stream
    if request.json_mode:
        body["response_format"] = {"type": "json_object"}
    body.update(request.extra)
    return body


def anthropic_body(config: ProviderConfig, request: Request) -> dict[str, Any]:
    """The messages-API parameters of ``request`` (synchronous call and Message Batches alike);
    the temperature is a plain field here (the SDK call passes it through ``extra_body``)."""
    messages, max_tokens = request.messages, request.max_tokens
    # the messages API requires a limit; JSON mode, n and the field name have no equivalent
    if max_tokens is None:
        max_tokens = ANTHROPIC_DEFAULT_MAX_TOKENS
    _check_messages(messages)
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[Any] = [
        {"role": m.role, "content": m.content} for m in messages if m.role != "system"
    ]
    if not turns:
        raise PermanentError("the anthropic provider needs at least one user message")
    body: dict[str, Any] = {"model": config.model, "messages": turns, "max_tokens": max_tokens}
    if system:
        body["system"] = system
    if request.temperature is not None:  # reasoning_effort has no equivalent here
        body["temperature"] = request.temperature
    return body


def openai_completion(resp: Any, config: ProviderConfig) -> Completion:
    """A chat-completions reply (the SDK's object) as a :class:`Completion`."""
    choices = resp.choices
    if not choices:
        raise TransientError("reply without choices")
    text = choices[0].message.content or ""
    usage = resp.usage
    return Completion(
        text=text,
        input_tokens=_int(getattr(usage, "prompt_tokens", 0)),
        output_tokens=_int(getattr(usage, "completion_tokens", 0)),
        cached=False,
        model=str(resp.model or config.model),
    )


def anthropic_completion(resp: Any, config: ProviderConfig) -> Completion:
    """A messages-API reply (the SDK's object) as a :class:`Completion`."""
    text = "".join(
        str(getattr(block, "text", ""))
        for block in resp.content
        if getattr(block, "type", None) == "text"
    )
    usage = resp.usage
    return Completion(
        text=text,
        input_tokens=_int(getattr(usage, "input_tokens", 0)),
        output_tokens=_int(getattr(usage, "output_tokens", 0)),
        cached=False,
        model=str(resp.model or config.model),
    )


@dataclass
class OpenAIProvider:
    """OpenAI chat completions (also used for ``openai-compatible``)."""

    config: ProviderConfig
    timeout: float
    sdk: LazySDK

    def send(self, request: Request) -> Completion:
        body = openai_body(self.config, request)
        with _sdk_errors(self.config, self.timeout):
            resp = self.sdk.get().chat.completions.create(**body)
            return openai_completion(resp, self.config)

    def close(self) -> None:
        self.sdk.close()


#: the limit sent to Anthropic when the caller sends none (its API requires one)
ANTHROPIC_DEFAULT_MAX_TOKENS = 4096


@dataclass
class AnthropicProvider:
    """Anthropic messages API; system messages are joined into ``system=``."""

    config: ProviderConfig
    timeout: float
    sdk: LazySDK

    def send(self, request: Request) -> Completion:
        body = anthropic_body(self.config, request)
        extra = {"temperature": body.pop("temperature")} if "temperature" in body else {}
        with _sdk_errors(self.config, self.timeout):
            # This SDK generation no longer types ``temperature``; the API still takes it.
            resp = self.sdk.get().messages.create(**body, extra_body=extra)
            return anthropic_completion(resp, self.config)

    def close(self) -> None:
        self.sdk.close()


def build_provider(config: ProviderConfig, *, timeout: float) -> Provider:
    """The SDK-backed provider for ``config`` (raises JudgeError when the key is missing)."""
    if config.provider == "anthropic":
        return AnthropicProvider(
            config, timeout, LazySDK(config, timeout, "anthropic", "Anthropic")
        )
    return OpenAIProvider(config, timeout, LazySDK(config, timeout, "openai", "OpenAI"))
