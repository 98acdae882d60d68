"""Comparability keys: results are ranked only beside results measured the same way.

A key is a tuple of ``(field, value)`` pairs (:data:`KEY_FIELDS`, docs/board.md#comparability-keys):
the benchmark and its dataset (variant + sha256 of the files), the question selection, the errata
overlay, the protocol, the answerer and its prompt hash, the judge (the metric that decided
CORRECT/WRONG, the judge models, their prompt hash), top-k, the context budget and the plugin
version. The same key is computed from a report's provenance and from a run folder's config
fingerprint, so a folder can be matched to a report (the *re-run* tier).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ._load import Entry

__all__ = [
    "KEY_FIELDS",
    "Key",
    "describe",
    "differences",
    "entry_key",
    "group_by_key",
    "headings",
    "key_id",
]

#: (field, label) in display order
KEY_FIELDS: tuple[tuple[str, str], ...] = (
    ("benchmark", "benchmark"),
    ("dataset", "dataset (variant, sha256)"),
    ("selection", "questions (limit, sample, seed, -k, -m)"),
    ("errata", "errata"),
    ("protocol", "protocol"),
    ("answerer", "answerer"),
    ("answer_prompt", "answer prompt sha256"),
    ("decided_by", "CORRECT decided by"),
    ("judge", "judge model(s)"),
    ("judge_prompt", "judge prompt sha256"),
    ("top_k", "top-k"),
    ("context_budget", "context budget (tokens)"),
    ("plugin_version", "plugin version"),
)
#: fields a run folder cannot know (overlays applied when the report was written)
FOLDER_BLIND = frozenset({"errata"})

Key = tuple[tuple[str, str], ...]


def _plain(value: Any) -> str:
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def _prompts(hashes: Mapping[str, Any], answer: bool) -> str:
    chosen = {k: v for k, v in hashes.items() if str(k).startswith("answer") == answer}
    return _plain(chosen)


def _dataset(provenance: Mapping[str, Any], benchmark: str) -> str:
    datasets = provenance.get("datasets")
    info = datasets.get(benchmark) if isinstance(datasets, Mapping) else None
    if not isinstance(info, Mapping):
        return "unknown"
    shas = info.get("sha256")
    values = sorted(str(v) for v in shas.values()) if isinstance(shas, Mapping) else []
    variant = info.get("variant")
    unpinned = " unpinned" if info.get("unpinned") else ""  # --memeval-accept-unpinned
    return f"{variant or 'default'} {' '.join(v[:12] for v in values) or 'no sha256'}{unpinned}"


def _top_k(entry: Entry) -> str:
    ks = sorted({r.details["k"] for r in entry.results if isinstance(r.details.get("k"), int)})
    if ks:
        return ",".join(str(k) for k in ks)
    return _plain(entry.provenance.get("top_k"))


def _errata(provenance: Mapping[str, Any]) -> str:
    errata = provenance.get("errata")
    if not isinstance(errata, Mapping):
        return "none"
    name = errata.get("name") or errata.get("source") or "errata"
    digest = hashlib.sha256(_plain(errata).encode()).hexdigest()[:12]
    return f"{name} {digest}"


def _context_budget(entry: Entry) -> str:
    budget = entry.provenance.get("context_budget")
    if budget is None:
        context = entry.extra.get("context")
        budget = context.get("budget") if isinstance(context, Mapping) else None
    return _plain(budget)


def entry_key(entry: Entry) -> Key:
    p = entry.provenance
    hashes = p.get("prompt_sha256") if isinstance(p.get("prompt_sha256"), Mapping) else {}
    assert isinstance(hashes, Mapping)
    protocol = p.get("protocol")
    sample = p.get("sample")
    selection = f"limit {_plain(p.get('limit'))}, sample {_plain(sample)}" + (
        f", seed {_plain(p.get('seed'))}" if sample is not None else ""
    )
    session = p.get("session") if isinstance(p.get("session"), Mapping) else {}
    assert isinstance(session, Mapping)
    for flag, name in (("-k", "keyword"), ("-m", "markexpr")):
        if session.get(name):
            selection += f", {flag} {_plain(session.get(name))}"
    values = {
        "benchmark": entry.benchmark,
        "dataset": _dataset(p, entry.benchmark),
        "selection": selection,
        "errata": _errata(p),
        "protocol": _plain(protocol.get("name") if isinstance(protocol, Mapping) else protocol),
        "answerer": _plain(p.get("answerer")),
        "answer_prompt": _prompts(hashes, True),
        "decided_by": _plain(entry.headline()),
        "judge": _plain(p.get("judge")),
        "judge_prompt": _prompts(hashes, False),
        "top_k": _top_k(entry),
        "context_budget": _context_budget(entry),
        "plugin_version": _plain(p.get("plugin_version")),
    }
    return tuple((name, values[name]) for name, _ in KEY_FIELDS)


def key_id(key: Key) -> str:
    """A short stable id of a key (anchors, filter values)."""
    return "k" + hashlib.sha256(_plain(list(key)).encode()).hexdigest()[:10]


def describe(key: Key) -> str:
    """``demo · f1 · top-k 10 · answerer extractive``: the fields a reader tells keys apart by."""
    d = dict(key)
    parts = [d["benchmark"], d["decided_by"], f"top-k {d['top_k']}", f"answerer {d['answerer']}"]
    if d["judge"] != "none":
        parts.append(f"judge {d['judge']}")
    if d["protocol"] != "none":
        parts.append(f"protocol {d['protocol']}")
    return " · ".join(parts)


def _selection(value: str) -> str:
    """``limit none, sample none`` -> ``all questions``; ``limit 3, sample none`` -> ``limit 3``."""
    parts = [p for p in value.split(", ") if not p.endswith(" none")]
    return ", ".join(parts) if parts else "all questions"


def _judge(d: Mapping[str, str]) -> str:
    """The metric that decided CORRECT/WRONG, and the judge model(s) when one judged."""
    decided = "scored by " + d["decided_by"]
    return decided if d["judge"] == "none" else f"{decided} (judge {d['judge']})"


def _short(value: str, limit: int = 40) -> str:
    """A long value (a prompt hash map, a model list) shortened, still telling values apart."""
    if len(value) <= limit:
        return value
    return f"{value[: limit - 14]}… #{hashlib.sha256(value.encode()).hexdigest()[:8]}"


#: the field names a heading uses (the table's labels are longer)
_SHORT_LABELS = {
    "answer_prompt": "answer prompt",
    "judge_prompt": "judge prompt",
    "top_k": "top-k",
    "context_budget": "context budget",
    "plugin_version": "plugin",
}


def headings(keys: Sequence[Key]) -> dict[Key, str]:
    """A short heading per key, distinct between the keys: the benchmark, the question selection
    and the judge always, then every other field whose value differs between the keys of the
    same benchmark (``top-k 2``). Two keys never share a heading: keys of two benchmarks differ in
    the first word, keys of one in a field named in both (a key id is added should two short
    values still read the same)."""
    labels = dict(KEY_FIELDS)
    always = {"benchmark", "selection", "decided_by", "judge"}
    out: dict[Key, str] = {}
    for key in keys:
        d = dict(key)
        # what differs between the keys of this benchmark (the benchmark tells the others apart)
        same = [k for k in keys if dict(k)["benchmark"] == d["benchmark"]]
        varying = {label for label, _ in differences(same)}
        parts = [d["benchmark"], _selection(d["selection"]), _judge(d)]
        parts.extend(
            f"{_SHORT_LABELS.get(name, name)} {_short(d[name])}"
            for name, _ in KEY_FIELDS
            if name not in always and labels[name] in varying
        )
        out[key] = " · ".join(parts)
    seen: dict[str, int] = {}
    for heading in out.values():
        seen[heading] = seen.get(heading, 0) + 1
    return {k: h if seen[h] == 1 else f"{h} · {key_id(k)}" for k, h in out.items()}


def group_by_key(entries: Sequence[Entry]) -> dict[Key, list[Entry]]:
    out: dict[Key, list[Entry]] = {}
    for entry in entries:
        out.setdefault(entry_key(entry), []).append(entry)
    return out


def differences(keys: Sequence[Key]) -> list[tuple[str, list[str]]]:
    """(field label, the value of each key) for every field whose value is not the same in all
    ``keys``: what differs between the board's groups."""
    labels = dict(KEY_FIELDS)
    out = []
    for name, _ in KEY_FIELDS:
        values = [dict(k)[name] for k in keys]
        if len(set(values)) > 1:
            out.append((labels[name], values))
    return out


def same_key(a: Key, b: Key) -> bool:
    """Whether two keys match, ignoring what a run folder cannot know (:data:`FOLDER_BLIND`)."""
    return [kv for kv in a if kv[0] not in FOLDER_BLIND] == [
        kv for kv in b if kv[0] not in FOLDER_BLIND
    ]
