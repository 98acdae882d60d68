"""BEAM's home: everything the plugin knows about the suite.

- :mod:`._loader`: the chat and probing-question files (GitHub, 10M plan and Hugging Face row
  layouts) -> conversations and questions, the offline proxies (``score``), and the suite object
  (``BENCHMARK``, registered as ``beam``) with its hooks;
- :mod:`._judge`: the official judge (``--memeval-protocol=beam``) and the json_repair check;
- :mod:`._figures`: the official composite of a run, as BEAM's ``report_results.py`` forms it.

Its upstream files are pinned with the protocol (``protocols/_profiles.py``: ``BEAM``); the data has
no pinned release. docs/scoring.md#beam describes the suite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

if TYPE_CHECKING:
    from ._figures import OfficialComposite
    from ._loader import (
        ABILITIES,
        BENCHMARK,
        DEVIATIONS,
        GOLD_FIELDS,
        MAX_LITERAL_CHARS,
        SIZES,
        Beam,
        parse_python_literal,
        parse_time_anchor,
    )

__all__ = [
    "ABILITIES",
    "BENCHMARK",
    "DEVIATIONS",
    "GOLD_FIELDS",
    "MAX_LITERAL_CHARS",
    "SIZES",
    "Beam",
    "OfficialComposite",
    "parse_python_literal",
    "parse_time_anchor",
]

#: public name -> the module of the home that defines it, imported on first use: reading the
#: pins record (``.pins``, as protocols/_profiles.py does) does not load the loader
_WHERE: dict[str, str] = {
    "ABILITIES": "._loader",
    "BENCHMARK": "._loader",
    "DEVIATIONS": "._loader",
    "GOLD_FIELDS": "._loader",
    "MAX_LITERAL_CHARS": "._loader",
    "SIZES": "._loader",
    "Beam": "._loader",
    "OfficialComposite": "._figures",
    "parse_python_literal": "._loader",
    "parse_time_anchor": "._loader",
}


if not TYPE_CHECKING:  # the type checker reads the imports above, and a typo stays an error
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
