"""Errata overlays: parsing audit-shaped files, matching them to the data, the pinned download,
and the official / sound-gold / ceiling figures (unit tests on small files written here)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from errata_data import errata_entries, locomo_data, write_data
from file_server import serve_files

from pytest_memeval.analysis import CategoryMeta, aggregate_run, errata_rows, question_errata
from pytest_memeval.benchmarks import LOCOMO_AUDIT, ErrataSource, load_errata, parse_audit_entries
from pytest_memeval.benchmarks.locomo import CATEGORIES, ParsedLocomo, parse_locomo
from pytest_memeval.errors import DatasetError
from pytest_memeval.records import QuestionResult


def _parsed(data: object | None = None) -> ParsedLocomo:
    return parse_locomo(json.dumps(data or locomo_data()).encode(), "locomo10.json")


def _args(parsed: ParsedLocomo) -> tuple[list, list[str]]:  # type: ignore[type-arg]
    return list(parsed.questions), [c.id for c in parsed.conversations]


def test_entries_map_to_question_ids_by_position() -> None:
    parsed = _parsed()
    questions, convs = _args(parsed)
    first = parse_audit_entries(errata_entries()[0], "e0.json", questions, convs)
    second = parse_audit_entries(errata_entries()[1], "e1.json", questions, convs)
    assert [e.question_id for e in first + second] == ["conv-a-q2", "conv-a-q3", "conv-b-q2"]
    assert [e.score_corrupting for e in first + second] == [True, False, True]
    assert first[0].correct_answer == "cello" and first[0].correct_evidence == ("D1:2",)
    assert first[0].source_id == "locomo_0_qa1" and first[0].error_type == "HALLUCINATION"


def test_explicit_score_corrupting_flag_wins() -> None:
    questions, convs = _args(_parsed())
    entry = copy.deepcopy(errata_entries()[0][1])
    entry["score_corrupting"] = True
    (erratum,) = parse_audit_entries([entry], "e.json", questions, convs)
    assert erratum.error_type == "WRONG_CITATION" and erratum.score_corrupting


@pytest.mark.parametrize(
    ("mutate", "fragment", "field"),
    [
        (lambda e: e.update(question="Something else?"), "does not match the loaded LoCoMo", "question"),
        (lambda e: e.update(question_id="conv-a-q2"), "must look like 'locomo_0_qa1'", "question_id"),
        (lambda e: e.update(question_id="locomo_7_qa1"), "names conversation 7", "question_id"),
        (lambda e: e.update(question_id="locomo_0_qa40"), "no question", "question"),
        (lambda e: e.update(category=2), "category 2 but conv-a-q2 is category 4", "category"),
        (lambda e: e.pop("error_type"), "missing or not a str", "error_type"),
        (lambda e: e.update(category="4"), "missing or not a int", "category"),
        (lambda e: e.update(correct_evidence="D1:2"), "must be a list of dia ids", "correct_evidence"),
    ],
)  # fmt: skip
def test_bad_entries_name_file_entry_and_field(mutate: object, fragment: str, field: str) -> None:
    questions, convs = _args(_parsed())
    entry = copy.deepcopy(errata_entries()[0][0])
    mutate(entry)  # type: ignore[operator]
    with pytest.raises(DatasetError) as info:
        parse_audit_entries([entry], "errors_conv_0.json", questions, convs)
    text = str(info.value)
    assert fragment in text
    assert "errors_conv_0.json" in text and "entry [0]" in text and field in text


def test_not_a_list_is_refused() -> None:
    questions, convs = _args(_parsed())
    with pytest.raises(DatasetError, match="expected a JSON list of audit entries"):
        parse_audit_entries({"a": 1}, "x.json", questions, convs)


def test_load_local_folder_file_and_audit_subfolder(tmp_path: Path) -> None:
    write_data(tmp_path)
    questions, convs = _args(_parsed())
    from_audit = load_errata(str(tmp_path / "audit"), tmp_path / "cache", questions, convs)
    from_root = load_errata(str(tmp_path), tmp_path / "cache", questions, convs)  # audit/ inside
    assert (
        set(from_audit.entries) == set(from_root.entries) == {"conv-a-q2", "conv-a-q3", "conv-b-q2"}
    )
    one = tmp_path / "all.json"
    one.write_text(json.dumps(errata_entries()[0] + errata_entries()[1]), "utf-8")
    from_file = load_errata(str(one), tmp_path / "cache", questions, convs)
    assert set(from_file.entries) == set(from_audit.entries)
    prov = from_audit.provenance
    assert prov["source"] == "local" and prov["entries"] == 3 and prov["score_corrupting"] == 2
    assert prov["audited_categories"] == [1, 2, 3, 4] and "same_as" not in prov
    digest = hashlib.sha256((tmp_path / "audit" / "errors_conv_0.json").read_bytes()).hexdigest()
    assert prov["files"][str(tmp_path / "audit" / "errors_conv_0.json")] == digest
    assert from_audit.sound("conv-a-q1") and from_audit.sound("conv-a-q3")
    assert not from_audit.sound("conv-a-q2") and not from_audit.audited(5)


def test_files_are_never_modified(tmp_path: Path) -> None:
    write_data(tmp_path)
    before = {p: p.read_bytes() for p in (tmp_path / "audit").iterdir()}
    questions, convs = _args(_parsed())
    load_errata(str(tmp_path / "audit"), tmp_path / "cache", questions, convs)
    assert {p: p.read_bytes() for p in (tmp_path / "audit").iterdir()} == before


def test_duplicate_entry_and_missing_path(tmp_path: Path) -> None:
    questions, convs = _args(_parsed())
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps([errata_entries()[0][0]] * 2), "utf-8")
    with pytest.raises(DatasetError, match="listed twice"):
        load_errata(str(dup), tmp_path, questions, convs)
    with pytest.raises(DatasetError, match="not a known errata name"):
        load_errata(str(tmp_path / "nope"), tmp_path, questions, convs)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no errors_conv_<i>\.json files"):
        load_errata(str(tmp_path / "empty"), tmp_path, questions, convs)
    bad = tmp_path / "bad.json"
    bad.write_text("[{", "utf-8")
    with pytest.raises(DatasetError, match="invalid or truncated JSON at line 1, column 3"):
        load_errata(str(bad), tmp_path, questions, convs)


def test_known_source_is_pinned() -> None:
    assert LOCOMO_AUDIT.commit == "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539"
    assert [p for p, _ in LOCOMO_AUDIT.files] == [f"audit/errors_conv_{i}.json" for i in range(10)]
    assert all(len(sha) == 64 for _, sha in LOCOMO_AUDIT.files)
    assert LOCOMO_AUDIT.url("audit/errors_conv_0.json") == (
        "https://raw.githubusercontent.com/dial481/locomo-audit/"
        "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539/audit/errors_conv_0.json"
    )


@pytest.fixture
def audit_server(tmp_path: Path) -> Iterator[tuple[str, Counter[str], dict[str, bytes]]]:
    bodies = {
        f"/pin/audit/errors_conv_{i}.json": json.dumps(entries).encode()
        for i, entries in enumerate(errata_entries())
    }
    with serve_files(bodies) as srv:
        yield srv.base, srv.hits, bodies


def _source(base: str, bodies: dict[str, bytes], *, corrupt: bool = False) -> ErrataSource:
    files = tuple(
        (path.removeprefix("/pin/"), hashlib.sha256(b"x" if corrupt else body).hexdigest())
        for path, body in bodies.items()
    )
    return ErrataSource(
        name="test-audit",
        benchmark="locomo",
        repository="https://example.invalid/audit",
        commit="pin",
        base_url=base,
        files=files,
        audited_categories=frozenset({1, 2, 3, 4}),
        timeout=5.0,
    )


def test_download_pinned_then_cached(
    tmp_path: Path, audit_server: tuple[str, Counter[str], dict[str, bytes]]
) -> None:
    base, hits, bodies = audit_server
    source = _source(base, bodies)
    questions, convs = _args(_parsed())
    first = load_errata("test-audit", tmp_path, questions, convs, sources={"test-audit": source})
    assert set(first.entries) == {"conv-a-q2", "conv-a-q3", "conv-b-q2"}
    assert first.provenance["commit"] == "pin" and first.provenance["name"] == "test-audit"
    saved = tmp_path / "data" / "errata" / "test-audit" / "pin" / "audit" / "errors_conv_0.json"
    assert saved.read_bytes() == bodies["/pin/audit/errors_conv_0.json"]
    assert sum(hits.values()) == 2
    again = load_errata("test-audit", tmp_path, questions, convs, sources={"test-audit": source})
    assert again.entries == first.entries and sum(hits.values()) == 2  # from the cache


def test_download_sha_mismatch_saves_nothing(
    tmp_path: Path, audit_server: tuple[str, Counter[str], dict[str, bytes]]
) -> None:
    base, _, bodies = audit_server
    source = _source(base, bodies, corrupt=True)
    questions, convs = _args(_parsed())
    with pytest.raises(DatasetError, match="sha256 mismatch"):
        load_errata("test-audit", tmp_path, questions, convs, sources={"test-audit": source})
    assert not list((tmp_path / "data" / "errata").rglob("*.json"))


def _result(qid: str, category: str, cat_id: int, f1: float | None) -> QuestionResult:
    return QuestionResult(
        benchmark="locomo",
        system="s",
        question_id=qid,
        conversation_id=qid.rsplit("-", 1)[0],
        category=category,
        category_id=cat_id,
        question="?",
        gold="g",
        prediction="p",
        status="CORRECT",
        scores={"f1": f1},
    )


def test_errata_rows_official_sound_and_ceiling(tmp_path: Path) -> None:
    write_data(tmp_path)
    questions, convs = _args(_parsed())
    errata = load_errata(str(tmp_path / "audit"), tmp_path, questions, convs)
    results = [
        _result("conv-a-q1", "single-hop", 4, 1.0),
        _result("conv-a-q2", "single-hop", 4, 0.0),  # unsound gold: a right answer scored 0
        _result("conv-b-q1", "single-hop", 4, 0.6666),  # rounded to 0.667 (round3)
        _result("conv-a-q3", "temporal", 2, 0.5),  # citation-only erratum: sound
        _result("conv-b-q2", "open-domain", 3, None),  # unsound and UNSCORED
        _result("conv-a-q5", "adversarial", 5, 1.0),
    ]
    metas = [CategoryMeta(c.name, c.id, c.shared, c.in_overall) for c in CATEGORIES.values()]
    run = aggregate_run("locomo", "s", "", results, metas, ["f1"], ("f1",))
    rows = {row["category"]: row for row in errata_rows(run, errata, ("f1",))}
    single = rows["single-hop"]
    assert (single["count"], single["unsound"], single["sound_count"]) == (3, 1, 2)
    assert single["ceiling"] == pytest.approx(2 / 3)
    assert single["official"]["f1"] == pytest.approx((1.0 + 0.0 + 0.667) / 3)
    assert single["sound_gold"]["f1"] == pytest.approx((1.0 + 0.667) / 2)
    assert rows["temporal"]["unsound"] == 0 and rows["temporal"]["citation_only"] == 1
    assert rows["temporal"]["ceiling"] == 1.0 and rows["temporal"]["sound_gold"]["f1"] == 0.5
    assert rows["open-domain"]["ceiling"] == 0.0 and rows["open-domain"]["sound_gold"]["f1"] is None
    adversarial = rows["adversarial"]
    assert adversarial["audited"] is False and adversarial["ceiling"] is None
    assert adversarial["official"]["f1"] == 1.0 and adversarial["sound_gold"]["f1"] is None
    overall = rows["overall"]
    assert (overall["count"], overall["unsound"]) == (5, 2)
    assert overall["ceiling"] == pytest.approx(3 / 5)
    marks = question_errata(run, errata)
    assert set(marks) == {r.question_id for r in results}
    assert marks["conv-a-q1"] is None
    assert marks["conv-a-q2"] is not None and marks["conv-a-q2"]["score_corrupting"] is True
    assert marks["conv-a-q2"]["source"] == str(tmp_path / "audit")
