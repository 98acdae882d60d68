"""Malformed benchmark files through the plugin: each is a usage error naming the file, the record
and the field (never a traceback), or, when the input is fine, it loads and runs.

Also bad options and gate expressions: usage errors that show the fix.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import read_json

pytestmark = pytest.mark.usefixtures("memeval_env")

HUGE = "x" * (5 * 1024 * 1024)  # a 5 MB field: must load, not hang
DEEP = "[" * 100_000 + "]" * 100_000
BIG_INT = "1" * 5000  # over Python's 4300-digit int conversion limit


@dataclass(frozen=True)
class Case:
    id: str
    write: Callable[[Path], None]  # writes the benchmark's files under DIR
    expect: tuple[str, ...] | None  # fragments of the usage error (file, record, field), or None


def _bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _json(path: Path, data: Any) -> None:
    _bytes(path, json.dumps(data).encode())


def _run_case(pytester: pytest.Pytester, bench: str, case: Case, *extra: str) -> None:
    data = pytester.path / "data"
    case.write(data)
    out = pytester.path / "r.json"
    result = pytester.runpytest(
        f"--memeval={bench}",
        f"--memeval-data={data}",
        "--memeval-accept-unpinned",  # hand-made files at the release paths
        "--memsys=bm25",
        f"--memeval-cache-dir={pytester.path / 'cache'}",
        f"--memeval-json={out}",
        *extra,
    )
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text[-3000:]
    if case.expect is None:
        assert result.ret == 0, text[-3000:]
        questions = [q for run in read_json(out)["runs"] for q in run["questions"]]
        # scored or, for usermem cases without gold facts, UNSCORED; never ERROR
        assert questions and all(q["status"] != "ERROR" for q in questions)
        return
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text[-3000:]
    err = result.stderr.str()
    (line,) = [ln for ln in err.splitlines() if ln.startswith("ERROR:")]
    for fragment in case.expect:
        assert fragment in line, f"{fragment!r} not in {line!r}"


# --------------------------------------------------------------------------- LoCoMo (and demo)

LOCOMO = Path("locomo/locomo10.json")


def _locomo() -> list[dict[str, Any]]:
    return [
        {
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "My dog Rex is a beagle."},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "Rex sounds lovely."},
                ],
            },
            "qa": [
                {
                    "question": "What breed is Rex?",
                    "answer": "beagle",
                    "category": 4,
                    "evidence": ["D1:1"],
                },
                {
                    "question": "What is Bob's cat called?",
                    "category": 5,
                    "adversarial_answer": "Tom",
                },
            ],
        }
    ]


def _lc(mutate: Callable[[list[dict[str, Any]]], Any]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        data = copy.deepcopy(_locomo())
        result = mutate(data)
        if isinstance(result, bytes):
            _bytes(root / LOCOMO, result)
        else:
            _json(root / LOCOMO, data if result is None else result)

    return write


def _raw_locomo(transform: Callable[[str], str | bytes]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        out = transform(json.dumps(_locomo()))
        _bytes(root / LOCOMO, out if isinstance(out, bytes) else out.encode())

    return write


def _set(path: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    """Set a dotted path ("0.qa.0.answer") in the sample list; value ... deletes the key."""

    def mutate(data: list[dict[str, Any]]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        key: Any = int(last) if isinstance(node, list) else last
        if value is ...:
            del node[key]
        else:
            node[key] = value

    return mutate


LOCOMO_CASES = [
    Case(
        "truncated",
        _raw_locomo(lambda t: t[: len(t) // 2]),
        ("locomo10.json", "invalid or truncated JSON at line 1"),
    ),
    Case("top-level-object", _lc(lambda d: d[0]), ("locomo10.json", "top level must be a list")),
    Case("missing-sample-id", _lc(_set("0.sample_id", ...)), ("record [0]", "'sample_id'")),
    Case("qa-not-a-list", _lc(_set("0.qa", {"q": 1})), ("record c1", "field 'qa'")),
    Case("question-wrong-type", _lc(_set("0.qa.0.question", 7)), ("c1 qa[0]", "'question'")),
    Case("missing-answer", _lc(_set("0.qa.0.answer", ...)), ("c1 qa[0]", "field 'answer'")),
    Case("unknown-category", _lc(_set("0.qa.0.category", 9)), ("c1 qa[0]", "'category'", "1-5")),
    Case("category-as-string", _lc(_set("0.qa.0.category", "4")), ("c1 qa[0]", "'category'")),
    Case(
        "duplicate-sample-id",
        _lc(lambda d: d + copy.deepcopy(d)),
        ("locomo10.json", "record [1]", "'sample_id'", "duplicate"),
    ),
    Case(
        "turn-missing-text",
        _lc(_set("0.conversation.session_1.0.text", ...)),
        ("c1 session_1[0]", "field 'text'"),
    ),
    Case("evidence-wrong-type", _lc(_set("0.qa.0.evidence", "D1:1")), ("c1 qa[0]", "'evidence'")),
    Case(
        "session-not-a-list",
        _lc(_set("0.conversation.session_1", "hello")),
        ("record c1 session_1", "list of turns"),
    ),
    Case(
        "nan-answer",
        _raw_locomo(lambda t: t.replace('"beagle"', "NaN")),
        ("c1 qa[0]", "field 'answer'", "finite"),
    ),
    Case(
        "infinity-category",
        _raw_locomo(lambda t: t.replace('"category": 4', '"category": Infinity')),
        ("c1 qa[0]", "'category'"),
    ),
    Case(
        "invalid-utf8",
        _raw_locomo(lambda t: t.encode().replace(b"lovely", b"lov\xffely")),
        ("locomo10.json", "not valid UTF-8 at byte"),
    ),
    Case(
        "lone-surrogate",
        _raw_locomo(lambda t: t.replace("lovely", "lov\\ud800ely")),
        ("locomo10.json", "session_1[1]", "field 'text'", "surrogate"),
    ),
    Case("nested-too-deeply", lambda root: _bytes(root / LOCOMO, DEEP.encode()), ("nested",)),
    Case(
        "integer-too-long",
        _raw_locomo(lambda t: t.replace('"beagle"', BIG_INT)),
        ("locomo10.json", "too many digits"),
    ),
    Case(
        "empty-file",
        lambda root: _bytes(root / LOCOMO, b""),
        ("locomo10.json", "invalid or truncated JSON"),
    ),
    # fine: these load and run
    Case("bom", _raw_locomo(lambda t: b"\xef\xbb\xbf" + t.encode()), None),
    Case("huge-string-5mb", _lc(_set("0.conversation.session_1.1.text", HUGE)), None),
    Case(
        "empty-conversation",
        _lc(lambda d: [*d, {"sample_id": "c2", "conversation": {}, "qa": d[0]["qa"][:1]}]),
        None,
    ),
    Case("numeric-answer", _lc(_set("0.qa.0.answer", 2023)), None),
    Case("repeated-question", _lc(lambda d: d[0]["qa"].append(dict(d[0]["qa"][0]))), None),
]


@pytest.mark.parametrize("case", LOCOMO_CASES, ids=[c.id for c in LOCOMO_CASES])
def test_locomo_bad_input(pytester: pytest.Pytester, case: Case) -> None:
    _run_case(pytester, "locomo", case)


# --------------------------------------------------------------------------- LongMemEval

LME = Path("longmemeval/longmemeval_oracle.json")


def _lme_item(qid: str = "q1") -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "What breed is my dog?",
        "answer": "beagle",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["answer_1"],
        "haystack_dates": ["2023/05/20 (Sat) 10:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "My dog is a beagle.", "has_answer": True},
                {"role": "assistant", "content": "Lovely."},
            ]
        ],
        "answer_session_ids": ["answer_1"],
    }


def _lm(mutate: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        item = _lme_item()
        result = mutate(item)
        _json(root / LME, result if isinstance(result, list) else [item, _lme_item("q2")])

    return write


def _raw_lme(transform: Callable[[str], str | bytes]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        out = transform(json.dumps([_lme_item(), _lme_item("q2")]))
        _bytes(root / LME, out if isinstance(out, bytes) else out.encode())

    return write


def _pop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda item: item.pop(key) and None


def _put(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda item: item.__setitem__(key, value)


LME_CASES = [
    Case(
        "truncated",
        _raw_lme(lambda t: t[: len(t) - 40]),
        ("longmemeval_oracle.json", "record #1", "truncated"),
    ),
    Case("top-level-object", _raw_lme(lambda t: t[1:-1]), ("does not start with '['",)),
    Case("missing-key", _lm(_pop("question_type")), ("record q1 (#0)", "'question_type'")),
    Case("answer-wrong-type", _lm(_put("answer", ["beagle"])), ("q1 (#0)", "field 'answer'")),
    Case(
        "unknown-question-type",
        _lm(_put("question_type", "telepathy")),
        ("q1 (#0)", "field 'question_type'", "telepathy"),
    ),
    Case(
        "duplicate-question-id",
        _lm(lambda item: [item, _lme_item()]),
        ("record q1 (#1)", "field 'question_id'", "duplicate"),
    ),
    Case(
        "length-mismatch",
        _lm(_put("haystack_dates", [])),
        ("q1 (#0)", "field 'haystack_dates'", "same length"),
    ),
    Case(
        "turn-not-an-object",
        _lm(_put("haystack_sessions", [["hello"]])),
        ("q1 (#0)", "field 'haystack_sessions'"),
    ),
    Case("empty-question-id", _lm(_put("question_id", "")), ("record #0", "'question_id'")),
    Case(
        "nan-answer",
        _raw_lme(lambda t: t.replace('"beagle"', "NaN", 1)),
        ("q1 (#0)", "field 'answer'", "finite"),
    ),
    Case(
        "invalid-utf8",
        _raw_lme(lambda t: t.encode().replace(b"Lovely", b"Lov\xffely", 1)),
        ("longmemeval_oracle.json", "not valid UTF-8"),
    ),
    Case(
        "lone-surrogate",
        _raw_lme(lambda t: t.replace("Lovely", "Lov\\udc00ely", 1)),
        ("record #0", "field 'content'", "surrogate"),
    ),
    Case("trailing-data", _raw_lme(lambda t: t + "[]"), ("after the closing ']'",)),
    Case("nested-too-deeply", lambda root: _bytes(root / LME, DEEP.encode()), ("nested",)),
    Case(
        "integer-too-long",
        _raw_lme(lambda t: t.replace('"beagle"', BIG_INT, 1)),
        ("record #0", "too many digits"),
    ),
    Case("bom", _raw_lme(lambda t: b"\xef\xbb\xbf" + t.encode()), None),
    Case("huge-string-5mb", _lm(_put("question", "What breed? " + HUGE)), None),
    Case(
        "empty-haystack",
        _lm(
            lambda item: item.update(
                haystack_session_ids=[],
                haystack_dates=[],
                haystack_sessions=[],
                answer_session_ids=[],
            )
        ),
        None,
    ),
    Case("numeric-answer", _lm(_put("answer", 3)), None),
]


@pytest.mark.parametrize("case", LME_CASES, ids=[c.id for c in LME_CASES])
def test_longmemeval_bad_input(pytester: pytest.Pytester, case: Case) -> None:
    _run_case(pytester, "longmemeval", case, "--memeval-variant=oracle")


# --------------------------------------------------------------------------- BEAM

ABILITY_GOLD = {
    "abstention": "ideal_response",
    "contradiction_resolution": "ideal_answer",
    "event_ordering": "answer",
    "information_extraction": "answer",
    "instruction_following": "expected_compliance",
    "knowledge_update": "answer",
    "multi_session_reasoning": "answer",
    "preference_following": "expected_compliance",
    "summarization": "ideal_summary",
    "temporal_reasoning": "answer",
}
BEAM_DIR = Path("beam/100K/1")
PROBING = BEAM_DIR / "probing_questions" / "probing_questions.json"


def _probing() -> dict[str, list[dict[str, Any]]]:
    return {
        ability: [
            {
                "question": f"What about {ability}?",
                gold: f"the {ability} answer",
                "rubric": [f"LLM response should state: the {ability} answer"],
                "source_chat_ids": [0],
            }
        ]
        for ability, gold in ABILITY_GOLD.items()
    }


def _beam_chat() -> list[dict[str, Any]]:
    return [
        {
            "batch_number": 1,
            "time_anchor": "March-15-2024",
            "turns": [
                [
                    {"role": "user", "id": 0, "content": "the information_extraction answer"},
                    {"role": "assistant", "id": 1, "content": "Noted."},
                ]
            ],
        }
    ]


def _bm(
    mutate: Callable[[dict[str, Any]], Any] | None = None, raw: Callable[[str], Any] | None = None
) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        probing = _probing()
        if mutate is not None:
            mutate(probing)
        text = json.dumps(probing)
        out = raw(text) if raw is not None else text
        _bytes(root / PROBING, out if isinstance(out, bytes) else out.encode())
        _json(root / BEAM_DIR / "chat.json", _beam_chat())

    return write


def _rows(lines: Callable[[dict[str, Any]], list[Any]]) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        row = {
            "conversation_id": 1,
            "chat": [_beam_chat()[0]["turns"][0]],
            "probing_questions": repr(_probing()),
        }
        out = [ln if isinstance(ln, str) else json.dumps(ln) for ln in lines(row)]
        _bytes(root / "beam" / "100K.jsonl", ("\n".join(out) + "\n").encode())

    return write


BEAM_CASES = [
    Case("truncated", _bm(raw=lambda t: t[:-30]), ("probing_questions.json", "truncated")),
    Case(
        "unknown-ability",
        _bm(lambda p: p.update(telepathy=[])),
        ("record beam-100K-1", "field 'telepathy'"),
    ),
    Case("missing-ability", _bm(lambda p: p.pop("summarization")), ("field 'summarization'",)),
    Case(
        "empty-rubric",
        _bm(lambda p: p["abstention"][0].update(rubric=[])),
        ("record abstention[0]", "field 'rubric'"),
    ),
    Case(
        "question-wrong-type",
        _bm(lambda p: p["knowledge_update"][0].update(question=5)),
        ("record knowledge_update[0]", "field 'question'"),
    ),
    Case(
        "missing-gold",
        _bm(lambda p: p["summarization"][0].pop("ideal_summary")),
        ("record summarization[0]", "field 'ideal_summary'"),
    ),
    Case(
        "nan-gold",
        _bm(raw=lambda t: t.replace('"the information_extraction answer"', "NaN")),
        ("record information_extraction[0]", "field 'answer'", "finite"),
    ),
    Case(
        "invalid-utf8",
        _bm(raw=lambda t: t.encode().replace(b"What about", b"What \xfe about", 1)),
        ("probing_questions.json", "not valid UTF-8 at byte"),
    ),
    Case(
        "lone-surrogate",
        _bm(raw=lambda t: t.replace("What about abstention", "What \\ud801 about", 1)),
        ("probing_questions.json", "abstention[0]", "field 'question'", "surrogate"),
    ),
    Case("nested-too-deeply", _bm(raw=lambda t: DEEP), ("probing_questions.json", "nested")),
    Case(
        "integer-too-long",
        _bm(raw=lambda t: t.replace('"the abstention answer"', BIG_INT)),
        ("probing_questions.json", "too many digits"),
    ),
    Case(
        "rows-unsafe-conversation-id",
        _rows(lambda r: [{**r, "conversation_id": "../../x"}]),
        ("100K.jsonl", "record #1", "field 'conversation_id'"),
    ),
    Case(
        "rows-code-not-literal",
        _rows(lambda r: [{**r, "probing_questions": "__import__('os').system('echo pwned')"}]),
        ("100K.jsonl", "field 'probing_questions'", "not a valid Python literal"),
    ),
    Case("rows-bad-json-line", _rows(lambda r: [r, "{oops"]), ("100K.jsonl", "record line 2")),
    Case(
        "rows-duplicate-id",
        _rows(lambda r: [r, r]),
        ("100K.jsonl", "record 1", "field 'conversation_id'", "duplicate"),
    ),
    Case(
        "rows-missing-chat",
        _rows(lambda r: [{k: v for k, v in r.items() if k != "chat"}]),
        ("100K.jsonl", "record 1", "field 'chat'"),
    ),
    Case("bom", _bm(raw=lambda t: b"\xef\xbb\xbf" + t.encode()), None),
    Case("huge-string-5mb", _bm(lambda p: p["summarization"][0].update(ideal_summary=HUGE)), None),
    Case("numeric-gold", _bm(lambda p: p["temporal_reasoning"][0].update(answer=12)), None),
    Case("rows-ok", _rows(lambda r: [r]), None),
]


@pytest.mark.parametrize("case", BEAM_CASES, ids=[c.id for c in BEAM_CASES])
def test_beam_bad_input(pytester: pytest.Pytester, case: Case) -> None:
    _run_case(pytester, "beam", case)


# --------------------------------------------------------------------------- user-memory suite

CASE_YAML = Path("usermem/test_cases/layer1/01_case.yaml")
FACTS = Path("usermem/fixtures/gold_facts.json")


def _um_case() -> dict[str, Any]:
    return {
        "test_id": "layer1_x",
        "category": "layer1",
        "user_question": "What is my account number?",
        "evaluation_criteria": "The agent gives 4429853327.",
        "conversation_histories": [
            {
                "conversation_id": "c1",
                "timestamp": "2024-11-15 10:30:00",
                "messages": [
                    {"role": "user", "content": "My account number is 4429853327."},
                    {"role": "assistant", "content": "Noted."},
                ],
            }
        ],
    }


def _um(
    mutate: Callable[[dict[str, Any]], Any] | None = None,
    raw: Callable[[str], str | bytes] | None = None,
    facts: str | None = None,
    second: bool = False,
) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        case = _um_case()
        if mutate is not None:
            mutate(case)
        text = yaml.safe_dump(case, sort_keys=False)
        out = raw(text) if raw is not None else text
        _bytes(root / CASE_YAML, out if isinstance(out, bytes) else out.encode())
        if second:
            _bytes(root / CASE_YAML.with_name("02_copy.yaml"), yaml.safe_dump(case).encode())
        if facts is not None:
            _bytes(root / FACTS, facts.encode())

    return write


LAUGHS = "lol: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)

USERMEM_CASES = [
    Case(
        "yaml-syntax",
        _um(raw=lambda t: t.replace("  messages", "\tmessages")),
        ("01_case.yaml", "line"),
    ),
    Case("not-a-mapping", _um(raw=lambda t: "- just\n- a list\n"), ("01_case.yaml", "'test_id'")),
    Case("missing-test-id", _um(lambda c: c.pop("test_id")), ("01_case.yaml", "'test_id'")),
    Case("test-id-wrong-type", _um(lambda c: c.update(test_id=[1])), ("'test_id'", "string")),
    Case(
        "unknown-category",
        _um(lambda c: c.update(category="layer9")),
        ("record layer1_x", "field 'category'", "layer9"),
    ),
    Case(
        "missing-question",
        _um(lambda c: c.pop("user_question")),
        ("record layer1_x", "field 'user_question'"),
    ),
    Case(
        "empty-conversation",
        _um(lambda c: c.update(conversation_histories=[])),
        ("record layer1_x", "field 'conversation_histories'"),
    ),
    Case(
        "content-wrong-type",
        _um(lambda c: c["conversation_histories"][0]["messages"][1].update(content=5)),
        ("record layer1_x history 1", "field 'messages'"),
    ),
    Case(
        "duplicate-test-id",
        _um(second=True),
        ("02_copy.yaml", "record layer1_x", "field 'test_id'", "duplicate"),
    ),
    Case(
        "python-tag",
        _um(raw=lambda t: "!!python/object/apply:os.system ['echo pwned']\n"),
        ("01_case.yaml", "could not determine a constructor"),
    ),
    # 150 levels: past our limit (100), below the nesting limit libyaml itself has in PyYAML 6.0.4
    Case(
        "nested-too-deeply",
        _um(raw=lambda t: "[" * 150 + "]" * 150),
        ("01_case.yaml", "nested more than 100"),
    ),
    # far deeper: which check stops it first depends on the PyYAML build; ours names the file,
    # the place and the fix either way
    Case("nested-far-too-deeply", _um(raw=lambda t: DEEP), ("01_case.yaml", "line 1", "fix")),
    Case("billion-laughs", _um(raw=lambda t: LAUGHS + t), ("01_case.yaml", "expands to more than")),
    Case(
        "invalid-utf8",
        _um(raw=lambda t: t.encode().replace(b"Noted", b"No\xfft")),
        ("01_case.yaml", "not valid UTF-8 at byte"),
    ),
    Case(
        "lone-surrogate",
        _um(raw=lambda t: t.replace("Noted.", '"No\\ud800ted."')),
        ("01_case.yaml", "YAML does not parse at line", "Unicode"),
    ),
    Case(
        "facts-nan",
        _um(facts='{"layer1_x": {"required_facts": [NaN]}}'),
        ("gold_facts.json", "record layer1_x", "field 'required_facts'"),
    ),
    Case(
        "facts-lone-surrogate",
        _um(facts='{"layer1_x": {"required_facts": ["44\\udfff29"]}}'),
        ("gold_facts.json", "record layer1_x.required_facts[0]", "surrogate"),
    ),
    Case("facts-nested-too-deeply", _um(facts=DEEP), ("gold_facts.json", "nested")),
    Case(
        "facts-unknown-test-id",
        _um(facts='{"layer9_y": ["x"]}'),
        ("gold_facts.json", "record layer9_y", "field 'required_facts'"),
    ),
    Case("facts-truncated", _um(facts='{"layer1_x": {"requ'), ("gold_facts.json", "truncated")),
    Case("bom", _um(raw=lambda t: b"\xef\xbb\xbf" + t.encode()), None),
    Case("huge-string-5mb", _um(lambda c: c.update(description=HUGE)), None),
    Case(
        "unquoted-date",
        _um(raw=lambda t: t.replace("'2024-11-15 10:30:00'", "2024-11-15")),
        None,
    ),
    Case("scalar-alias", _um(raw=lambda t: t.replace("role: user", "role: &u user")), None),
]


@pytest.mark.parametrize("case", USERMEM_CASES, ids=[c.id for c in USERMEM_CASES])
def test_usermem_bad_input(pytester: pytest.Pytester, case: Case) -> None:
    _run_case(pytester, "usermem", case)


def test_case_counts() -> None:
    """The README's Reliability figures: at least 10 malformed inputs per loader."""
    for cases in (LOCOMO_CASES, LME_CASES, BEAM_CASES, USERMEM_CASES):
        assert sum(c.expect is not None for c in cases) >= 10
        assert len({c.id for c in cases}) == len(cases)


# --------------------------------------------------------------------------- options and gates


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--memsys=bm25"], ["--memsys needs a benchmark", "add --memeval=demo"]),
        (["--memeval=nope", "--memsys=bm25"], ["unknown benchmark 'nope'", "Available:", "demo"]),
        (["--memeval=demo", "--memsys=no-pe"], ["unknown memory system 'no-pe'", "bm25"]),
        (["--memeval=demo", "--memsys=bm25", "--memeval-limit=abc"], ["e.g. --memeval-limit=10"]),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-timeout=-1"],
            ["expected seconds > 0", "e.g. --memeval-timeout=30"],
        ),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-timeout=nan"],
            ["expected seconds > 0", "e.g. --memeval-timeout=30"],
        ),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-llm-timeout=nan"],
            ["expected seconds > 0", "e.g. --memeval-llm-timeout=60"],
        ),
        (["--memeval=demo", "--memsys=bm25", "--memeval-pass-threshold=2"], ["in [0, 1]"]),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-judge=gpt-4o"],
            ["PROVIDER:MODEL", "openai:gpt-4o-mini"],
        ),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-fail-under=demo.overall.f1>>0.5"],
            ["more than one operator", "examples: locomo.temporal.f1>=0.40"],
        ),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-fail-under=demo.f1>=0.5"],
            ["needs both a category and a metric", "BENCHMARK[SYSTEM].CATEGORY.METRIC"],
        ),
        (
            ["--memeval=demo", "--memsys=bm25", "--memeval-max-drop=f1"],
            ["expected [CATEGORY.]METRIC:POINTS", "e.g. f1:2"],
        ),
        (["--memeval=demo", "--memsys=replay:missing.json"], ["missing.json", "cannot read"]),
    ],
    ids=[
        "memsys-without-benchmark",
        "unknown-benchmark",
        "unknown-system",
        "limit-not-a-number",
        "negative-timeout",
        "nan-timeout",
        "nan-llm-timeout",
        "threshold-out-of-range",
        "judge-without-provider",
        "gate-two-operators",
        "gate-without-category",
        "max-drop-without-points",
        "replay-file-missing",
    ],
)
def test_bad_options_show_the_fix(
    pytester: pytest.Pytester, args: list[str], fragments: list[str]
) -> None:
    result = pytester.runpytest(*args, f"--memeval-cache-dir={pytester.path / 'cache'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
