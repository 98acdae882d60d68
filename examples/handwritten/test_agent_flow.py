"""A custom flow on a benchmark: a two-step "agent" that searches, then refines its query.

Run from this folder:
    pytest test_agent_flow.py --memeval=demo --memsys=keyword_memory
    pytest test_agent_flow.py --memeval=locomo --memeval-data=DIR --memsys=keyword_memory,bm25 -n 2
"""

from __future__ import annotations

from dataclasses import replace

from pytest_memeval.answerers import extractive_answer


def test_two_step_agent(memeval_case, memeval_system, memeval_record):  # type: ignore[no-untyped-def]
    question = memeval_case.question
    first = list(memeval_system.search(question, 5))
    # step 2: search again with the question plus the best memory's words (a "tool call")
    if first:
        refined = replace(question, question=f"{question.question} {first[0].text}")
        second = list(memeval_system.search(refined, 5))
    else:
        second = []
    memories = [m for m in first + second if not isinstance(m, str)]
    answer = extractive_answer(question, memories)
    scores = memeval_record.prediction(answer)
    memeval_record("tool_calls", 2.0 if first else 1.0)
    assert 0.0 <= scores["f1"] <= 1.0
