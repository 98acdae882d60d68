"""Configure-time checks of an official protocol (pure: the pytest glue turns the errors into
``pytest.UsageError`` and the warnings into config-time warnings)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import JudgeError
from ..llm import parse_model_spec
from ._judges import LoadedProtocol, load_protocol
from ._profiles import get_profile
from ._source import ProtocolSourceError

__all__ = [
    "ProtocolSourceError",
    "ProtocolWarning",
    "answer_model_warnings",
    "check_answer_options",
    "dependency_warnings",
    "judge_model_warnings",
    "pin_warnings",
    "prepare_protocol",
]


class ProtocolWarning(UserWarning):
    """The run departs from the official protocol (numbers not comparable with published ones)."""


def _model(spec: str) -> str:
    try:
        return parse_model_spec(spec)[1]
    except JudgeError:  # a bad spec is reported by the LLM settings check
        return spec


def judge_model_warnings(protocol: str, judges: Sequence[str]) -> list[str]:
    """One sentence per judge whose model is not the protocol's."""
    profile = get_profile(protocol)
    out: list[str] = []
    expected = [s.model for s in (profile.judge, profile.alignment) if s is not None]
    if not expected:
        return out
    for spec in judges:
        model = _model(spec)
        if model != expected[0]:
            out.append(
                f"--memeval-judge={spec}: the {protocol} protocol judges with {expected[0]}; "
                f"{model} gives numbers that are not comparable with published ones"
            )
    return out


def answer_model_warnings(protocol: str, answerer: str) -> list[str]:
    """One sentence when an LLM answerer's model is not the one the protocol answers with (the
    extractive answerer, or a system's own ``answer()``, is the system under test: no warning)."""
    shape = get_profile(protocol).answer
    if shape is None or answerer == "extractive":
        return []
    model = _model(answerer)
    if model == shape.model:
        return []
    return [
        f"--memeval-answerer={answerer}: the {protocol} protocol answers with {shape.model}; "
        f"{model} gives numbers that are not comparable with published ones"
    ]


def check_answer_options(protocol: str, answerer: str, answer_prompt: str | None) -> None:
    """A protocol that sends its own answer request cannot also send ``--memeval-answer-prompt``,
    nor go through the Anthropic messages API, which cannot send a request made of one system
    message (raises :class:`ProtocolSourceError` with the fix)."""
    if get_profile(protocol).answer is None or answerer == "extractive":
        return
    if answer_prompt:
        raise ProtocolSourceError(
            f"--memeval-answer-prompt={answer_prompt}: --memeval-protocol={protocol} answers "
            "with the upstream answer prompt; drop --memeval-answer-prompt (or "
            "--memeval-protocol to answer with your own prompt)"
        )
    try:
        provider = parse_model_spec(answerer)[0]
    except JudgeError:  # a bad spec is reported by the LLM settings check
        return
    if provider == "anthropic":
        raise ProtocolSourceError(
            f"--memeval-answerer={answerer}: the {protocol} protocol's answer request is one "
            "system message, which the Anthropic messages API cannot send; answer through "
            "openai or openai-compatible (an OpenAI-compatible gateway for Claude works), or "
            "drop --memeval-protocol"
        )


def prepare_protocol(
    protocol: str,
    *,
    benchmarks: Sequence[str],
    source_dir: Path | None,
    cache_dir: Path,
) -> LoadedProtocol:
    """Check that the protocol applies to every benchmark and read its upstream files.
    Raises :class:`ProtocolSourceError` with the fix."""
    profile = get_profile(protocol)
    other = [b for b in benchmarks if b not in profile.benchmarks]
    if other:
        raise ProtocolSourceError(
            f"--memeval-protocol={protocol} applies to {', '.join(profile.benchmarks)}, not to "
            f"--memeval={','.join(other)}; run those benchmarks without it (or with their own "
            "protocol) in a separate run"
        )
    return load_protocol(protocol, source_dir=source_dir, cache_dir=cache_dir)


def pin_warnings(loaded: LoadedProtocol) -> list[str]:
    """One sentence per upstream file read from a local checkout that is not the pinned file."""
    return [
        f"--memeval-protocol-source: {s.origin} has sha256 {s.sha256}, not the {loaded.name} "
        f"protocol's pinned {s.file.sha256} ({s.file.repo} at {s.file.commit[:12]}); its text "
        "is used, and the numbers are not those of the official protocol"
        for s in loaded.sources.values()
        if not s.matches_pin
    ]


def dependency_warnings(loaded: LoadedProtocol) -> list[str]:
    """One sentence per installed package that reads replies and is not the upstream release
    (BEAM: json_repair): the ``official_warnings`` hooks of the protocol's suites."""
    return [w for _, hook in loaded.suite_hooks("official_warnings") for w in hook(loaded)]
