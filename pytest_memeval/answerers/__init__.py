"""Answerers: turn retrieved memories into a prediction.

``extractive`` is the offline, LLM-free baseline; ``llm`` asks a model (``--memeval-answerer=PROVIDER:MODEL``).
"""

from __future__ import annotations

from ._extractive import Answerer, ExtractiveAnswerer, extractive_answer

__all__ = ["Answerer", "ExtractiveAnswerer", "extractive_answer"]
