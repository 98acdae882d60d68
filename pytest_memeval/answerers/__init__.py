"""Answerers: turn retrieved memories into a prediction.

``extractive`` is the offline, LLM-free baseline; ``llm`` asks a model (``--memeval-answerer=PROVIDER:MODEL``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._extractive import Answerer, ExtractiveAnswerer, extractive_answer

if TYPE_CHECKING:
    from ._llm import (
        AnswerRequest,
        LLMAnswerer,
        SuiteAnswerer,
        format_date,
        last_session_dates,
        order_memories,
    )
    from ._mem0 import Mem0Answerer, file_memories, filing_totals, locomo_date_text


__all__ = [
    "AnswerRequest",
    "Answerer",
    "ExtractiveAnswerer",
    "LLMAnswerer",
    "Mem0Answerer",
    "SuiteAnswerer",
    "extractive_answer",
    "file_memories",
    "filing_totals",
    "format_date",
    "last_session_dates",
    "locomo_date_text",
    "order_memories",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "AnswerRequest": "._llm",
    "LLMAnswerer": "._llm",
    "Mem0Answerer": "._mem0",
    "SuiteAnswerer": "._llm",
    "file_memories": "._mem0",
    "filing_totals": "._mem0",
    "format_date": "._llm",
    "last_session_dates": "._llm",
    "locomo_date_text": "._mem0",
    "order_memories": "._llm",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
