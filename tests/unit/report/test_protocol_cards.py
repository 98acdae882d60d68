"""Protocol cards (report/cards.py): one per built-in suite, every field read from the code."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import os
import re
from pathlib import Path

import pytest

from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS, Deviation
from pytest_memeval.protocols import PROFILES, PROMPT_SHA256, SourceText, extract
from pytest_memeval.report.cards import (
    card_reference,
    protocol_card,
    render_protocols_page,
    run_cards,
)

SCORING_PAGE = Path(__file__).resolve().parents[3] / "docs" / "scoring.md"
SUITES = list(BUILTIN_BENCHMARKS)
#: the upstream snapshots (git directories ``<owner>+<name>/repo``, the ``fetch`` mirrors)
MIRRORS = Path(os.environ.get("MEMEVAL_UPSTREAM_MIRRORS", "/work/.mirror"))


def _module(benchmark: str) -> object:
    return importlib.import_module(BUILTIN_BENCHMARKS[benchmark].partition(":")[0])


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _scoring_anchors() -> set[str]:
    lines = SCORING_PAGE.read_text(encoding="utf-8").splitlines()
    return {_slug(m.group(1)) for line in lines if (m := re.match(r"#{1,6}\s+(.*)", line))}


@pytest.mark.parametrize("benchmark", SUITES)
def test_card_data_pins_are_the_loaders(benchmark: str) -> None:
    card = protocol_card(benchmark)
    module = _module(benchmark)
    # the suite's own release first: LoCoMo-Plus also exports LoCoMo's pin (the conversations
    # its cues are stitched into), which its card names as also read, never as its release
    pins = next(
        (
            getattr(module, n)
            for n in ("PINS", "LOCOMO_PLUS_PINS", "LOCOMO_PINS")
            if hasattr(module, n)
        ),
        None,
    )
    if hasattr(module, "LOCOMO_PLUS_PINS"):
        locomo = module.LOCOMO_PINS  # type: ignore[attr-defined]
        assert f"also reads {locomo.repo}@{locomo.revision[:12]} (locomo10)" in card.data_note
    if pins is None:
        assert card.data_revision is None and card.data_repo is None
        assert card.data_note
    else:
        assert (card.data_host, card.data_repo, card.data_revision) == (
            pins.host,
            pins.repo,
            pins.revision,
        )
        assert {f.key: (f.path, f.sha256, f.size) for f in card.data_files} == {
            k: (p.path, p.sha256, p.size) for k, p in pins.files.items()
        }
        assert all(re.fullmatch(r"[0-9a-f]{64}", f.sha256) for f in card.data_files)


@pytest.mark.parametrize("benchmark", SUITES)
def test_card_protocols_are_the_profiles(benchmark: str) -> None:
    card = protocol_card(benchmark)
    expected = [p for p in PROFILES.values() if benchmark in p.benchmarks]
    assert [p.name for p in card.profiles] == [p.name for p in expected]
    for got, profile in zip(card.profiles, expected, strict=True):
        assert (got.repo, got.commit, got.metric) == (profile.repo, profile.commit, profile.metric)
        assert re.fullmatch(r"[0-9a-f]{40}", got.commit)
        want_judge = None if profile.judge is None else profile.judge.model
        assert (got.judge_request or {}).get("model") == want_judge
        assert {q.key: (q.path, q.file_sha256, q.where) for q in got.prompts} == {
            key: (file.path, file.sha256, ref.describe())
            for key, (file, ref) in profile.prompts.items()
        }
        assert got.notes == tuple(profile.notes)
        assert {q.key: q.sha256 for q in got.prompts} == dict(PROMPT_SHA256[profile.name])
        assert all(re.fullmatch(r"[0-9a-f]{64}", q.sha256 or "") for q in got.prompts)


@pytest.mark.parametrize("benchmark", SUITES)
def test_card_deviations_are_the_modules_and_documented(benchmark: str) -> None:
    card = protocol_card(benchmark)
    deviations = _module(benchmark).DEVIATIONS  # type: ignore[attr-defined]
    assert card.deviations == deviations and deviations
    assert all(isinstance(d, Deviation) for d in deviations)
    assert len({d.key for d in deviations}) == len(deviations)
    anchors = _scoring_anchors()
    assert [d.anchor for d in deviations if d.anchor not in anchors] == []


@pytest.mark.parametrize(
    ("benchmark", "key", "words"),
    [
        ("locomo", "category-5", "overall_all"),
        ("locomo-plus", "pairing-i-mod-10", "i % n"),
        ("longmemeval-v2", "boxed-backspace", "longmemeval-v2-corrected"),
        ("memoryagentbench", "skipped-records", "skipped"),
        ("halumem", "memory-type-accuracy", "None"),
    ],
)
def test_known_deviations_say_what_the_plugin_does(benchmark: str, key: str, words: str) -> None:
    by_key = {d.key: d for d in protocol_card(benchmark).deviations}
    assert words in by_key[key].plugin


def test_longmemeval_v2_card_lists_the_corrected_variant() -> None:
    names = [p.name for p in protocol_card("longmemeval-v2").profiles]
    assert names == ["longmemeval-v2", "longmemeval-v2-corrected"]
    corrected = protocol_card("longmemeval-v2").profiles[1]
    assert corrected.notes[-1].startswith("CORRECTED VARIANT")
    assert corrected.judge_request == {
        "model": "gpt-5.2",
        "max_tokens": 4096,
        "json_mode": False,
        "max_tokens_field": "max_completion_tokens",
        "reasoning_effort": "medium",
    }


def test_demo_card_hashes_the_shipped_file() -> None:
    from importlib.resources import files

    data = files("pytest_memeval.benchmarks").joinpath("data", "demo.json").read_bytes()
    (pin,) = protocol_card("demo").data_files
    assert (pin.sha256, pin.size) == (hashlib.sha256(data).hexdigest(), len(data))


def test_digest_follows_the_content() -> None:
    card = protocol_card("locomo")
    assert card.card_id == f"locomo@{card.digest}"
    assert protocol_card("locomo").digest == card.digest
    moved = dataclasses.replace(card, data_revision="0" * 40)
    assert moved.digest != card.digest
    fewer = dataclasses.replace(card, deviations=card.deviations[1:])
    assert fewer.digest != card.digest


def test_unknown_suite_gets_an_empty_card() -> None:
    card = protocol_card("someone-elses-suite")
    assert (card.data_files, card.profiles, card.deviations) == ((), (), ())


def test_reference_and_run_cards() -> None:
    from conftest import report_cats

    from pytest_memeval.analysis import aggregate_run

    ref = card_reference(protocol_card("beam"))
    assert ref["card"] == protocol_card("beam").card_id
    assert ref["docs"] == "docs/protocols.md#card-beam"
    assert ref["upstream"] == {"beam": PROFILES["beam"].commit}
    assert "no-overall" in ref["deviations"]
    runs = [
        aggregate_run("demo", "bm25", "", [], report_cats(), ["f1"]),
        aggregate_run("mine", "bm25", "", [], report_cats(), ["f1"]),
    ]
    cards = run_cards(runs)
    assert list(cards) == ["demo"]
    assert runs[0].protocol_card == protocol_card("demo").card_id
    assert runs[1].protocol_card is None


def test_page_has_every_suite_once() -> None:
    page = render_protocols_page()
    for name in SUITES:
        assert page.count(f"\n## Card: {name}\n") == 1
        assert protocol_card(name).card_id in page


@pytest.mark.parametrize("profile", list(PROFILES))
def test_prompt_pins_are_upstreams_prompts(profile: str) -> None:
    """Each pinned prompt sha256 is that of the string extracted from the upstream file at the
    pinned commit (read from the snapshot; skipped without one)."""
    from mab_upstream import snapshot_file_bytes

    checked = 0
    for key, (file, ref) in PROFILES[profile].prompts.items():
        root = MIRRORS / file.repo.replace("/", "+") / "repo"
        data = snapshot_file_bytes(root, file.commit, file.path)
        if data is None:
            continue
        assert hashlib.sha256(data).hexdigest() == file.sha256, file.path
        source = SourceText(file, data.decode("utf-8"), str(root), file.sha256)
        assert extract(source, ref).sha256 == PROMPT_SHA256[profile][key], key
        checked += 1
    if not checked:
        pytest.skip(f"no upstream snapshot of {PROFILES[profile].repo} under {MIRRORS}")
    assert checked == len(PROFILES[profile].prompts)
