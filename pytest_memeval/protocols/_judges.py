"""Judges of the official protocols: the upstream prompt, filled and sent as the upstream code
path sends it, the reply read as upstream reads it.

Each judge implements :class:`pytest_memeval.judges.Judge` (same interface as the built-in
styles). The prompt text comes from :func:`load_protocol` (pinned upstream files, parsed with
``ast``); nothing here holds upstream text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..benchmarks import get_benchmark
from ..judges import (
    STYLE_METRICS,
    Judge,
    JudgeResult,
    extract_json_mem0,
    gold_text,
    is_locomo_adversarial,
)
from ..llm import ChatMessage, LLMClient
from ..records import Question
from ._profiles import (
    MEM0,
    PROFILES,
    ProtocolProfile,
    RequestShape,
    get_profile,
)
from ._source import SourceText, Template, extract, read_upstream

__all__ = [
    "LoadedProtocol",
    "Mem0OfficialJudge",
    "ask",
    "load_protocol",
    "mem0_official_label",
    "metric_of_style",
]


def metric_of_style(style: str) -> str | None:
    """The headline metric key of a judge style, built-in or official (None: unknown style).
    Read off the judge classes and the protocol profiles, never a table of its own."""
    official = {p.judge_style: p.metric for p in PROFILES.values() if p.judge is not None}
    return STYLE_METRICS.get(style) or official.get(style)


def ask(client: LLMClient, messages: list[ChatMessage], shape: RequestShape) -> str:
    """One call with the protocol's parameters (:meth:`RequestShape.options`)."""
    return client.complete(
        messages,
        temperature=shape.temperature,
        max_tokens=shape.max_tokens,
        role="judge",
        **shape.options(),
    ).text


# --------------------------------------------------------------------------- mem0


def mem0_official_label(reply: str) -> float | None:
    """Mem0's reading: ``json.loads(extract_json(reply))["label"] == "CORRECT"`` -> 1, other
    labels -> 0; ``None`` where upstream raises (not JSON, not an object, no ``label``)."""
    try:
        data = json.loads(extract_json_mem0(reply))
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "label" not in data:
        return None
    return 1.0 if data["label"] == "CORRECT" else 0.0


@dataclass
class Mem0OfficialJudge:
    """``ACCURACY_PROMPT.format(question=, gold_answer=, generated_answer=)`` as one user message;
    LoCoMo category 5 is not judged; an unreadable reply counts 0 (J = share of CORRECT)."""

    prompt: Template
    shape: RequestShape
    name: str = "mem0-official"
    metric: str = MEM0.metric

    @property
    def prompt_hashes(self) -> dict[str, str]:
        return {"mem0:ACCURACY_PROMPT": self.prompt.sha256}

    def render(self, question: Question, prediction: str) -> str:
        return self.prompt.text.format(
            question=question.question,
            gold_answer=gold_text(question.gold),
            generated_answer=prediction,
        )

    def judge(self, question: Question, prediction: str, client: LLMClient) -> JudgeResult:
        if is_locomo_adversarial(question):
            return JudgeResult(skipped=True, details={"reason": "LoCoMo category 5 is not judged"})
        reply = ask(client, [ChatMessage("user", self.render(question, prediction))], self.shape)
        value = mem0_official_label(reply)
        warnings: list[str] = []
        details: dict[str, Any] = {"protocol": "mem0"}
        if value is None:
            warnings.append(
                "mem0 protocol: the reply has no JSON label (Mem0's script would raise); "
                "counted as not CORRECT"
            )
            details["unscored_counted_as"] = 0.0
        return JudgeResult(
            scores={self.metric: 0.0 if value is None else value},
            raw=[reply],
            warnings=warnings,
            details=details,
        )


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedProtocol:
    """A profile with its prompts read from the pinned upstream files."""

    profile: ProtocolProfile
    templates: dict[str, Template]
    sources: dict[str, SourceText] = field(default_factory=dict)
    #: hook name -> the suites' hooks, looked up once (the registry scans the entry points on
    #: each lookup, about 2 ms, and ``judge()`` is asked for every judged question)
    _hooks: dict[str, list[tuple[str, Callable[[LoadedProtocol], Any]]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def name(self) -> str:
        return self.profile.name

    def judge(
        self,
    ) -> Mem0OfficialJudge | Judge | None:
        """The protocol's judge: the ``official_judge`` hook of the suite the protocol belongs to
        (its home builds it from these prompts), else one of the judges here."""
        p, t = self.profile, self.templates
        if p.judge is None:
            return None
        for _, hook in self.suite_hooks("official_judge"):
            judge: Judge | None = hook(self)
            if judge is not None:
                return judge
        if p.name == "mem0":
            return Mem0OfficialJudge(t["judge"], p.judge)
        return None

    def suite_hooks(self, hook: str) -> list[tuple[str, Callable[[LoadedProtocol], Any]]]:
        """``(benchmark, its hook)`` for the optional ``hook`` (``official_judge``,
        ``official_answerer``) of each suite the protocol serves (``profile.benchmarks``), in that
        order; a suite without it is passed over. The suites are found through the registry, so
        no suite is named here. Looked up once per hook name."""
        found = self._hooks.get(hook)
        if found is None:
            found = []
            for name in self.profile.benchmarks:
                method = getattr(get_benchmark(name), hook, None)
                if callable(method):
                    found.append((name, method))
            self._hooks[hook] = found
        return list(found)

    def provenance(self, judge_models: list[str]) -> dict[str, Any]:
        p = self.profile
        return {
            **p.describe(),
            "files": [
                {
                    **s.file.to_dict(),
                    "read_from": s.origin,
                    "file_sha256": s.sha256,
                    "matches_pin": s.matches_pin,
                }
                for s in self.sources.values()
            ],
            "prompt_sha256": {key: self.templates[key].sha256 for key in sorted(self.templates)},
            "judge_models": judge_models,
            "notes": list(p.notes),
            # what the suites add (BEAM: the json_repair release that reads its replies)
            **{
                k: v
                for _, hook in self.suite_hooks("official_provenance")
                for k, v in hook(self).items()
            },
        }


def load_protocol(name: str, *, source_dir: Path | None, cache_dir: Path) -> LoadedProtocol:
    """Read every pinned file of protocol ``name`` and extract its prompts. Raises
    :class:`~.source.ProtocolSourceError` (offline, sha256 mismatch, missing string)."""
    profile = get_profile(name)
    sources: dict[str, SourceText] = {}
    templates: dict[str, Template] = {}
    for key, (file, ref) in profile.prompts.items():
        source = sources.get(file.path)
        if source is None:
            source = read_upstream(file, protocol=name, source_dir=source_dir, cache_dir=cache_dir)
            sources[file.path] = source
        templates[key] = extract(source, ref)
    return LoadedProtocol(profile, templates, sources)
