"""JSON report layout: ``json.dumps(indent=2)`` everywhere except one line per question record."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_memeval.report._json_report import _finite, _layout

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def _without_questions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_questions(v) for k, v in value.items() if k != "questions"}
    if isinstance(value, list):
        return [_without_questions(v) for v in value]
    return value


@given(_VALUES, st.lists(st.dictionaries(st.text(max_size=5), _SCALARS, max_size=4), max_size=5))
def test_layout_is_the_same_json(value: Any, questions: list[dict[str, Any]]) -> None:
    doc = _finite({"runs": [{"questions": questions, "summary": value}], "other": value})
    text = _layout(doc, 0)
    assert json.loads(text) == json.loads(json.dumps(doc, ensure_ascii=False))
    # outside the question lists the text is exactly the usual indent=2 layout
    rest = _without_questions(doc)
    assert _layout(rest, 0) == json.dumps(rest, indent=2, ensure_ascii=False)
    # one question per line
    if questions:
        lines = text.split("\n")  # JSON escapes newlines inside strings; other breaks stay raw
        start = lines.index('      "questions": [')
        rows = lines[start + 1 : start + 1 + len(questions)]
        assert [json.loads(line.strip().rstrip(",")) for line in rows] == doc["runs"][0][
            "questions"
        ]
        assert lines[start + 1 + len(questions)] == "      ],"


def test_non_finite_numbers_become_null() -> None:
    text = _layout(_finite({"questions": [{"f1": math.nan}], "x": math.inf}), 0)
    assert json.loads(text) == {"questions": [{"f1": None}], "x": None}
