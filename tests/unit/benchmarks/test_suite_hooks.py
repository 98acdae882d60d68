"""The Benchmark protocol's optional hooks (issue 40): each official protocol reaches the judge
and the answer request of its suite through the suite's home, never by its name. A hook left out
(or defined outside the suite's class) would silently drop the protocol's judge or answer request
and fall back to the plugin's own: these checks fail then, without an LLM or upstream files."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_memeval.benchmarks import get_benchmark
from pytest_memeval.protocols import MEM0, PROFILES, LoadedProtocol, ProtocolProfile, Template
from pytest_memeval.report import CategoryRow, RunSummary

#: the protocols whose judge or answer request is the core's own (Mem0's protocol, not a suite's)
CORE_PROTOCOLS = frozenset({MEM0.name})


def _with_prompts(profile: ProtocolProfile) -> LoadedProtocol:
    """The protocol with a placeholder text for each of its prompts (no upstream file read)."""
    templates = {key: Template((f"{{question}} <{key}>",)) for key in profile.prompts}
    return LoadedProtocol(profile, templates)


def _judged() -> list[ProtocolProfile]:
    return [p for p in PROFILES.values() if p.judge is not None and p.name not in CORE_PROTOCOLS]


@pytest.mark.parametrize("profile", _judged(), ids=lambda p: p.name)
def test_every_suite_protocol_judge_comes_from_its_home(profile: ProtocolProfile) -> None:
    loaded = _with_prompts(profile)
    hooks = loaded.suite_hooks("official_judge")
    assert hooks, f"no suite of {profile.name} has an official_judge hook"
    judges = [judge for _, hook in hooks if (judge := hook(loaded)) is not None]
    assert len(judges) == 1
    assert judges[0].name == profile.judge_style
    assert judges[0].metric == profile.metric
    assert type(loaded.judge()) is type(judges[0])  # the protocol's judge is the hook's


def _answering() -> list[ProtocolProfile]:
    """Judged protocols that read the suite's own answer request (``answer_*`` prompts) and have
    no request shape of the core's (Mem0's ``answer``); the ``locomo`` profile pins its QA prompts
    for the provenance only (no judge, the plugin's own answer request)."""
    return [
        p for p in _judged() if p.answer is None and any(k.startswith("answer_") for k in p.prompts)
    ]


@pytest.mark.parametrize("profile", _answering(), ids=lambda p: p.name)
def test_every_suite_answer_request_comes_from_its_home(profile: ProtocolProfile) -> None:
    loaded = _with_prompts(profile)
    built = {name: hook(loaded) for name, hook in loaded.suite_hooks("official_answerer")}
    assert [name for name, suite in built.items() if suite is not None] == list(profile.benchmarks)


def test_the_answering_protocols_are_found() -> None:
    """The parametrisation above is not empty: MemoryAgentBench and both LongMemEval-V2
    profiles read their own answer requests."""
    assert len(_answering()) >= 3
    assert len(_judged()) >= 6


def test_a_hook_answers_only_its_own_protocol() -> None:
    """A suite's hook returns None under a protocol that is not its own (the hooks are called for
    every suite a protocol lists)."""
    for profile in _judged():
        loaded = _with_prompts(profile)
        for other in {b for p in PROFILES.values() for b in p.benchmarks} - set(profile.benchmarks):
            hook = getattr(get_benchmark(other), "official_judge", None)
            if hook is not None:
                assert hook(loaded) is None, (other, profile.name)


def _empty_run(benchmark: str) -> RunSummary:
    row = CategoryRow(key="overall", category_id=None, shared="overall", count=0)
    return RunSummary(benchmark, "sys", "flow", [], [], row, row, [])


def _summary_hook(name: str) -> Callable[..., None]:
    hook = getattr(get_benchmark(name), "official_summary", None)
    assert callable(hook), name
    return hook


def test_official_figures_come_from_the_suites_own_protocol_only() -> None:
    """The ``official_summary`` hook (run/_session.py calls it for each run of a suite the
    protocol lists) sets the run's official figures under the suite's own protocol only: BEAM's
    composite under ``beam``, HaluMem's figures under ``halumem`` with a judge metric."""
    summarising = {
        name
        for p in PROFILES.values()
        for name in p.benchmarks
        if callable(getattr(get_benchmark(name), "official_summary", None))
    }
    assert summarising == {"beam", "halumem"}
    for profile in PROFILES.values():
        loaded = _with_prompts(profile)
        for name in summarising:
            run = _empty_run(name)
            _summary_hook(name)(loaded, run, [], "judge_x")
            mine = profile.name == name
            assert (run.official is not None) == (mine and name == "beam"), profile.name
            assert (run.halumem is not None) == (mine and name == "halumem"), profile.name
    halumem = _with_prompts(PROFILES["halumem"])
    run = _empty_run("halumem")
    _summary_hook("halumem")(halumem, run, [], None)
    assert run.halumem is None  # no judge ran: no figures


def test_locomo_alone_preloads_and_records_its_tokenizer() -> None:
    """BLEU-1's Punkt model is read before the worker threads start (the plugin calls each
    suite's ``preload``) and recorded as provenance ``bleu1_tokenizer``, for LoCoMo only (the demo
    suite's report has none: tests/plugin/snapshots/demo_bm25_report.json)."""
    from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS
    from pytest_memeval.metrics import provenance

    suites = {name: get_benchmark(name) for name in BUILTIN_BENCHMARKS}
    assert {n for n, b in suites.items() if callable(getattr(b, "preload", None))} == {"locomo"}
    recording = {n for n, b in suites.items() if callable(getattr(b, "tokenizer_provenance", None))}
    assert recording == {"locomo"}
    suites["locomo"].preload()  # type: ignore[attr-defined]
    assert suites["locomo"].tokenizer_provenance() == provenance()  # type: ignore[attr-defined]


def test_each_default_protocol_is_a_protocol_of_its_suite() -> None:
    """The registry's SUITE_DEFAULT_PROTOCOLS (plugin/_options.py reads it when a judge is given
    without a protocol or style): each suite's default protocol lists the suite; LoCoMo-Plus
    comes first (it decides when a run has both suites)."""
    from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS, SUITE_DEFAULT_PROTOCOLS

    assert list(SUITE_DEFAULT_PROTOCOLS) == ["locomo-plus", "longmemeval-v2"]
    for suite, protocol in SUITE_DEFAULT_PROTOCOLS.items():
        assert suite in BUILTIN_BENCHMARKS
        assert suite in PROFILES[protocol].benchmarks


def test_the_demo_alone_ships_its_files_as_package_data() -> None:
    """``packaged_files``: the protocol card pins the demo's package file (report/cards.py) and
    the board re-scores it without a data folder (board/_verify.py); no other suite has it."""
    import hashlib
    from importlib.resources import files

    from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS
    from pytest_memeval.report.cards import protocol_card

    have = {
        n for n in BUILTIN_BENCHMARKS if callable(getattr(get_benchmark(n), "packaged_files", None))
    }
    assert have == {"demo"}
    data = files("pytest_memeval.benchmarks").joinpath("data", "demo.json").read_bytes()
    (pin,) = protocol_card("demo").data_files
    assert pin.path == "pytest_memeval/benchmarks/data/demo.json"
    assert (pin.sha256, pin.size) == (hashlib.sha256(data).hexdigest(), len(data))


def test_calibration_sets_fit_the_suites_the_registry_names() -> None:
    """The registry's SUITE_CALIBRATION (run/_calibrate.py reads it): the LoCoMo audit fits
    LoCoMo alone and is a default source only there; an audit-shaped file fits LoCoMo and the
    demo (LoCoMo's file layout); any other suite gets the perturbations only."""
    from pytest_memeval.benchmarks import BUILTIN_BENCHMARKS, SUITE_CALIBRATION
    from pytest_memeval.run import PERTURB, CalibrationError, calibration_settings

    assert {n for n, c in SUITE_CALIBRATION.items() if c.audit} == {"locomo"}
    assert {n for n, c in SUITE_CALIBRATION.items() if c.files} == {"locomo", "demo"}
    assert set(SUITE_CALIBRATION) <= set(BUILTIN_BENCHMARKS)
    judges = ["openai:gpt-4o-mini"]
    for suite in BUILTIN_BENCHMARKS:
        got = calibration_settings("before", None, benchmarks=[suite], judges=judges)
        assert got is not None
        assert (got.sources != (PERTURB,)) == (suite == "locomo"), suite
        if suite != "locomo":
            with pytest.raises(CalibrationError, match="--memeval=locomo"):
                calibration_settings("before", "locomo-audit", benchmarks=[suite], judges=judges)
