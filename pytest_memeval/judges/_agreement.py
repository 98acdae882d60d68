"""Agreement between judges: Cohen's kappa (pure function)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

__all__ = ["cohen_kappa"]


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa between two raters' labels on the same items (binary judges: 0/1).

    kappa = (p_o - p_e) / (1 - p_e), p_o the share of items where the labels agree, p_e the
    agreement expected by chance from each rater's label frequencies. ``None`` when there are no
    items or when kappa is undefined (p_e = 1: both raters gave one and the same label to every
    item). Raises ``ValueError`` if the sequences differ in length.
    """
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: sequences differ in length ({len(a)} vs {len(b)})")
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    count_a: Counter[Hashable] = Counter(a)
    count_b: Counter[Hashable] = Counter(b)
    expected = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)
