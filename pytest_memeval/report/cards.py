"""Protocol cards: one per benchmark suite, generated from the code (issue 37 item 4).

A card gathers what fixes a suite's numbers: the upstream code each official protocol reads
(repository, commit, file sha256, where each prompt lives in it and the prompt's sha256 from
``protocols/_prompt_pins.py``), the data release (revision,
file sha256s and sizes: the loader's ``Pins``), the judge and answer requests (model and
parameters), and the known upstream deviations with what the plugin does about each (the
benchmark module's ``DEVIATIONS``). Nothing here is hand-written per suite.

``python -m pytest_memeval.report.cards > docs/protocols.md`` writes the docs page; every report
names each run's card (``extra.protocol_cards`` in the JSON, a section in Markdown and HTML).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..benchmarks import BUILTIN_BENCHMARKS, Deviation
from ._model import RunSummary

__all__ = [
    "Card",
    "DataPin",
    "ProfileCard",
    "PromptPin",
    "card_docs",
    "card_reference",
    "main",
    "protocol_card",
    "render_protocols_page",
    "run_cards",
]

#: where the generated page lives (reports link each card to its section there)
PAGE = "docs/protocols.md"


@dataclass(frozen=True)
class DataPin:
    """One pinned data file: its key in the loader's ``Pins``, its path in the release, sha256 and
    size in bytes (None when no source records it)."""

    key: str
    path: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class PromptPin:
    """One prompt a protocol reads: its key, the upstream file (path, sha256 of the file at the
    commit), where the string is in that file and the prompt's own sha256 (``prompt_pins.py``;
    None when none is pinned). No upstream text is stored."""

    key: str
    path: str
    file_sha256: str
    where: str
    sha256: str | None


@dataclass(frozen=True)
class ProfileCard:
    """One official protocol that applies to the suite (``--memeval-protocol=name``)."""

    name: str
    repo: str
    commit: str
    judge_style: str
    metric: str
    #: the request shapes as the provenance records them (None: no such call)
    judge_request: dict[str, Any] | None
    answer_request: dict[str, Any] | None
    extra_requests: dict[str, dict[str, Any]]
    prompts: tuple[PromptPin, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Card:
    """A suite's protocol card. ``data_host``/``data_repo``/``data_revision`` are None when the
    suite has no pinned download (``data_note`` says where its files come from)."""

    benchmark: str
    data_host: str | None
    data_repo: str | None
    data_revision: str | None
    data_files: tuple[DataPin, ...]
    data_note: str
    profiles: tuple[ProfileCard, ...]
    deviations: tuple[Deviation, ...]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def digest(self) -> str:
        """sha256 (first 12 hex digits) of the card's content: changes when any pin, request or
        deviation changes."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    @property
    def card_id(self) -> str:
        """``<benchmark>@<digest>``: the name a report gives the card."""
        return f"{self.benchmark}@{self.digest}"

    @property
    def anchor(self) -> str:
        """The card's section anchor in docs/protocols.md (and in the HTML report)."""
        return f"card-{self.benchmark}"


def _shape(shape: Any) -> dict[str, Any] | None:
    if shape is None:
        return None
    return {k: v for k, v in asdict(shape).items() if v is not None and v != ()}


def _profile_card(profile: Any) -> ProfileCard:
    from ..protocols import PROMPT_SHA256

    pinned = PROMPT_SHA256.get(profile.name, {})
    prompts = tuple(
        PromptPin(key, file.path, file.sha256, ref.describe(), pinned.get(key))
        for key, (file, ref) in profile.prompts.items()
    )
    extra = {
        name: shape
        for name in ("alignment", "summary")
        if (shape := _shape(getattr(profile, name))) is not None
    }
    return ProfileCard(
        name=profile.name,
        repo=profile.repo,
        commit=profile.commit,
        judge_style=profile.judge_style,
        metric=profile.metric,
        judge_request=_shape(profile.judge),
        answer_request=_shape(profile.answer),
        extra_requests=extra,
        prompts=prompts,
        notes=tuple(profile.notes),
    )


def _packaged_pins(packaged: Callable[[], Mapping[str, tuple[str, bytes]]]) -> tuple[DataPin, ...]:
    """The pins of a suite's files shipped as package data (its ``packaged_files`` hook)."""
    return tuple(
        DataPin(key, path, hashlib.sha256(data).hexdigest(), len(data))
        for key, (path, data) in packaged().items()
    )


def _home_pins(package: str) -> Any:
    """The data release pinned in a suite's home (its ``UPSTREAM`` record's ``data``, exported by
    the home's ``__init__``), None when the home pins none (a suite of package data, or one read
    from --memeval-data)."""
    upstream = getattr(importlib.import_module(package), "UPSTREAM", None)
    return getattr(upstream, "data", None)


def _benchmark_pins(benchmark: Any) -> tuple[Any, ...]:
    """Every data release the suite's benchmark reads (its ``pins``: one, or a tuple)."""
    pins = getattr(benchmark, "pins", None)
    if pins is None:
        return ()
    return tuple(pins) if isinstance(pins, tuple) else (pins,)


def protocol_card(benchmark: str) -> Card:
    """The protocol card of ``benchmark`` (a built-in suite name). A suite from another package
    gets a card without pins or deviations: the plugin knows none."""
    from ..protocols import PROFILES

    profiles = tuple(_profile_card(p) for p in PROFILES.values() if benchmark in p.benchmarks)
    target = BUILTIN_BENCHMARKS.get(benchmark)
    if target is None:
        return Card(benchmark, None, None, None, (), "a suite from another package", profiles, ())
    module = importlib.import_module(target.partition(":")[0])
    pins = _home_pins(module.__name__)
    deviations: tuple[Deviation, ...] = tuple(getattr(module, "DEVIATIONS", ()))
    if pins is not None:
        files = tuple(
            DataPin(key, pin.path, pin.sha256, pin.size) for key, pin in pins.files.items()
        )
        note = "downloaded at the pinned revision, each file checked against its sha256"
        also = [
            other
            for other in _benchmark_pins(getattr(module, target.partition(":")[2], None))
            if other.revision != pins.revision
        ]
        if also:  # LoCoMo-Plus stitches its cues into LoCoMo-10's conversations
            note += "; also reads " + ", ".join(
                f"{o.repo}@{o.revision[:12]} ({', '.join(o.files)})" for o in also
            )
        return Card(
            benchmark, pins.host, pins.repo, pins.revision, files, note, profiles, deviations
        )
    packaged = getattr(getattr(module, target.partition(":")[2], None), "packaged_files", None)
    if callable(packaged):
        note = "package data shipped with the plugin (no download)"
        files = _packaged_pins(packaged)
        return Card(benchmark, None, None, None, files, note, profiles, deviations)
    note = (
        "no pinned release: the files under --memeval-data are read and their sha256 recorded "
        "per run (provenance.datasets)"
    )
    return Card(benchmark, None, None, None, (), note, profiles, deviations)


def run_cards(runs: Sequence[RunSummary]) -> dict[str, dict[str, Any]]:
    """Name each run's card (``run.protocol_card``) and return benchmark -> card reference, for
    the runs of built-in suites (a suite from another package has no card)."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        if run.benchmark not in BUILTIN_BENCHMARKS:
            continue
        if run.benchmark not in out:
            out[run.benchmark] = card_reference(protocol_card(run.benchmark))
        run.protocol_card = out[run.benchmark]["card"]
    return out


def card_docs(benchmark: str) -> str:
    """Where a suite's card is in the docs: the page and the card's anchor."""
    return f"{PAGE}#card-{benchmark}"


def card_reference(card: Card) -> dict[str, Any]:
    """What a report records of a run's card: its id, where the card is, the upstream commits,
    the data revision and the deviation keys."""
    return {
        "card": card.card_id,
        "docs": card_docs(card.benchmark),
        "data_revision": card.data_revision,
        "upstream": {p.name: p.commit for p in card.profiles},
        "deviations": [d.key for d in card.deviations],
    }


# ---- the docs page -----------------------------------------------------------------------------


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return " ".join(text.replace("|", "\\|").split()) or "-"


def _request(shape: dict[str, Any] | None) -> str:
    if shape is None:
        return "none"
    return ", ".join(f"{k}={v!r}" for k, v in shape.items())


def _card_lines(card: Card) -> list[str]:
    lines = [f"## Card: {card.benchmark}", ""]  # GitHub's anchor: card.anchor
    lines += [f"Card id: `{card.card_id}`", ""]
    lines += ["### Data", ""]
    if card.data_repo is not None:
        lines += [
            f"{card.data_host} `{card.data_repo}` at revision `{card.data_revision}`: "
            f"{card.data_note}.",
            "",
        ]
    else:
        lines += [f"{card.data_note[0].upper()}{card.data_note[1:]}.", ""]
    if card.data_files:
        lines += ["| key | path | sha256 | bytes |", "| --- | --- | --- | ---: |"]
        lines += [
            f"| {_cell(f.key)} | `{f.path}` | `{f.sha256}` | {_cell(f.size)} |"
            for f in card.data_files
        ]
        lines.append("")
    lines += ["### Protocols", ""]
    if not card.profiles:
        lines += ["No official protocol: the plugin's own judges and offline scores apply.", ""]
    for p in card.profiles:
        lines += [
            f"#### `--memeval-protocol={p.name}`",
            "",
            f"- upstream code: `{p.repo}` at commit `{p.commit}`",
            f"- judge style `{p.judge_style}`, metric `{p.metric}`",
            f"- judge request: {_request(p.judge_request)}",
            f"- answer request: {_request(p.answer_request)}",
        ]
        lines += [f"- {name} request: {_request(s)}" for name, s in p.extra_requests.items()]
        lines += [f"- note: {_cell(n)}" for n in p.notes]
        lines += [
            "",
            "| prompt | prompt sha256 | file | file sha256 | where |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| `{_cell(q.key)}` | `{q.sha256 or '-'}` | `{q.path}` | `{q.file_sha256}` | "
            f"{_cell(q.where)} |"
            for q in p.prompts
        ]
        lines.append("")
    lines += ["### Known upstream deviations", ""]
    if not card.deviations:
        lines += ["None recorded.", ""]
    else:
        lines += ["| key | upstream | the plugin | details |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{d.key}` | {_cell(d.upstream)} | {_cell(d.plugin)} | "
            f"[scoring.md](scoring.md#{d.anchor}) |"
            for d in card.deviations
        ]
        lines.append("")
    return lines


def render_protocols_page() -> str:
    """docs/protocols.md: every built-in suite's card (ends with a newline)."""
    lines = [
        "# Protocol cards",
        "",
        "<!-- generated by `python -m pytest_memeval.report.cards > docs/protocols.md`; "
        "do not edit by hand (tests/project/test_protocols_page.py checks it) -->",
        "",
        "One card per benchmark suite, generated from the code: the data release each loader "
        "pins, the upstream code each official protocol reads (repository, commit, the sha256 of "
        "each file and where each prompt is in it), the judge and answer requests, and the known "
        "upstream deviations with what the plugin does about each. A prompt's sha256 is that of "
        "its text as read from the pinned file (each f-string field written `{name}`); a run "
        "records the same digests in `provenance.protocol.prompt_sha256`. Every report names each run's card by its id "
        "`<suite>@<digest>` (the digest changes with any pin, request or deviation).",
        "",
    ]
    lines += [f"- [{name}](#card-{name})" for name in BUILTIN_BENCHMARKS]
    lines.append("")
    for name in BUILTIN_BENCHMARKS:
        lines += _card_lines(protocol_card(name))
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render_protocols_page())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
