"""Small files in the shape of the LoCoMo audit's ap-baseline answers, for the calibration tests."""

from __future__ import annotations

import json


def audit_doc(entries: list[tuple[int, int, str, str]]) -> bytes:
    groups: dict[str, list[dict[str, str]]] = {}
    for k, n, question, answer in entries:
        groups.setdefault(f"locomo_exp_user_{k}", []).append(
            {
                "question_id": f"locomo_{k}_qa{n}",
                "question": question,
                "golden_answer": "g",
                "generated_answer": answer,
                "category": "2",
            }
        )
    return json.dumps({"total_questions": len(entries), "detailed_results": groups}).encode()
