"""Small LoCoMo-schema data and audit-shaped errata files for the errata and budget tests (our own
text, shaped like the LoCoMo file and like dial481/locomo-audit's ``audit/errors_conv_<i>.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _session(n: int, turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [
        {"speaker": speaker, "dia_id": f"D{n}:{i + 1}", "text": text}
        for i, (speaker, text) in enumerate(turns)
    ]


def locomo_data() -> list[dict[str, Any]]:
    """Two conversations of two sessions each; questions of categories 1-5."""
    return [
        {
            "sample_id": "conv-a",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": _session(
                    1,
                    [
                        ("Ann", "My dog Rex is a beagle."),
                        ("Bob", "Rex sounds lovely. I play the cello."),
                        ("Ann", "I moved to Lisbon last year."),
                    ],
                ),
                "session_2_date_time": "10:00 am on 20 May, 2023",
                "session_2": _session(
                    2,
                    [
                        ("Bob", "I ran a marathon yesterday."),
                        ("Ann", "Congratulations! I started pottery classes."),
                    ],
                ),
            },
            "qa": [
                {"question": "What breed is Rex?", "answer": "beagle", "category": 4,
                 "evidence": ["D1:1"]},
                {"question": "What instrument does Bob play?", "answer": "violin",
                 "category": 4, "evidence": ["D1:2"]},
                {"question": "When did Bob run a marathon?", "answer": "19 May 2023",
                 "category": 2, "evidence": ["D2:1"]},
                {"question": "Where does Ann live?", "answer": "Lisbon", "category": 1,
                 "evidence": ["D1:3"]},
                {"question": "What is Bob's cat called?", "category": 5,
                 "adversarial_answer": "Tom", "evidence": []},
            ],
        },
        {
            "sample_id": "conv-b",
            "conversation": {
                "speaker_a": "Cy",
                "speaker_b": "Dee",
                "session_1_date_time": "9:00 am on 1 June, 2023",
                "session_1": _session(
                    1, [("Cy", "I bought a red bicycle."), ("Dee", "Nice, I prefer hiking.")]
                ),
                "session_2_date_time": "9:00 am on 9 June, 2023",
                "session_2": _session(2, [("Cy", "My bicycle got a flat tyre today.")]),
            },
            "qa": [
                {"question": "What colour is Cy's bicycle?", "answer": "red", "category": 4,
                 "evidence": ["D1:1"]},
                {"question": "What does Dee prefer?", "answer": "swimming", "category": 3,
                 "evidence": ["D1:2"]},
                {"question": "When did the bicycle get a flat tyre?", "answer": "9 June 2023",
                 "category": 2, "evidence": ["D2:1"]},
            ],
        },
    ]  # fmt: skip


def errata_entries() -> list[list[dict[str, Any]]]:
    """Per conversation (file order), audit-shaped entries. conv-a qa[1] (category 4) and conv-b
    qa[1] (category 3) have wrong gold; conv-a qa[2] only a wrong citation."""
    return [
        [
            {
                "question_id": "locomo_0_qa1",
                "question": "What instrument does Bob play?",
                "golden_answer": "violin",
                "category": 4,
                "error_type": "HALLUCINATION",
                "cited_evidence": ["D1:2"],
                "correct_evidence": ["D1:2"],
                "reasoning": "D1:2 says cello.",
                "correct_answer": "cello",
            },
            {
                "question_id": "locomo_0_qa2",
                "question": "When did Bob run a marathon?",
                "golden_answer": "19 May 2023",
                "category": 2,
                "error_type": "WRONG_CITATION",
                "cited_evidence": ["D2:1"],
                "correct_evidence": ["D2:1"],
                "reasoning": "Gold is right.",
                "correct_answer": "19 May 2023",
            },
        ],
        [
            {
                "question_id": "locomo_1_qa1",
                "question": "What does Dee prefer?",
                "golden_answer": "swimming",
                "category": 3,
                "error_type": "ATTRIBUTION_ERROR",
                "cited_evidence": ["D1:2"],
                "correct_evidence": ["D1:2"],
                "reasoning": "Dee prefers hiking.",
                "correct_answer": "hiking",
            }
        ],
    ]


def write_data(root: Path) -> Path:
    """``root/data/locomo/locomo10.json`` and ``root/audit/errors_conv_<i>.json``; returns the
    data folder."""
    data = root / "data"
    (data / "locomo").mkdir(parents=True)
    (data / "locomo" / "locomo10.json").write_text(json.dumps(locomo_data()), "utf-8")
    audit = root / "audit"
    audit.mkdir()
    for i, entries in enumerate(errata_entries()):
        (audit / f"errors_conv_{i}.json").write_text(json.dumps(entries, indent=2), "utf-8")
    return data
