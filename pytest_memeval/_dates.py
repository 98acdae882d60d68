"""English month and weekday names, locale-free (``calendar.month_name`` follows the process
locale; benchmark text and upstream prompts are English whatever the machine's locale)."""

from __future__ import annotations

__all__ = ["MONTHS", "WEEKDAYS"]

MONTHS: tuple[str, ...] = (
    *("January", "February", "March", "April", "May", "June", "July", "August"),
    *("September", "October", "November", "December"),
)
#: Monday first, as ``datetime.weekday()`` counts
WEEKDAYS: tuple[str, ...] = (
    *("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
)
