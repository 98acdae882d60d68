"""Official protocols (``--memeval-protocol``): profiles pinned to upstream files, the prompts
read from those files by parsing them, and the judges that send them as upstream does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._judges import (
    LoadedProtocol,
    Mem0OfficialJudge,
    load_protocol,
    metric_of_style,
)
from ._profiles import PROFILES, ProtocolProfile, RequestShape, get_profile
from ._source import ProtocolSourceError, StringRef, Template, UpstreamFile

if TYPE_CHECKING:
    from ._judges import ask, mem0_official_label
    from ._profiles import (
        BEAM,
        HALUMEM,
        LME2_CORRECTED,
        LME2_PROTOCOLS,
        LOCOMO_PLUS,
        LOCOMO_PLUS_JUDGE_FILE,
        LONGMEMEVAL,
        LONGMEMEVAL_V2,
        MAB_LONGMEM_FILE,
        MEM0,
        MEMORYAGENTBENCH,
    )
    from ._prompt_pins import PROMPT_SHA256
    from ._setup import (
        ProtocolWarning,
        answer_model_warnings,
        check_answer_options,
        dependency_warnings,
        judge_model_warnings,
        pin_warnings,
        prepare_protocol,
    )
    from ._source import SourceText, extract, read_upstream


__all__ = [
    "BEAM",
    "HALUMEM",
    "LME2_CORRECTED",
    "LME2_PROTOCOLS",
    "LOCOMO_PLUS",
    "LOCOMO_PLUS_JUDGE_FILE",
    "LONGMEMEVAL",
    "LONGMEMEVAL_V2",
    "MAB_LONGMEM_FILE",
    "MEM0",
    "MEMORYAGENTBENCH",
    "PROFILES",
    "PROMPT_SHA256",
    "LoadedProtocol",
    "Mem0OfficialJudge",
    "ProtocolProfile",
    "ProtocolSourceError",
    "ProtocolWarning",
    "RequestShape",
    "SourceText",
    "StringRef",
    "Template",
    "UpstreamFile",
    "answer_model_warnings",
    "ask",
    "check_answer_options",
    "dependency_warnings",
    "extract",
    "get_profile",
    "judge_model_warnings",
    "load_protocol",
    "mem0_official_label",
    "metric_of_style",
    "pin_warnings",
    "prepare_protocol",
    "read_upstream",
]


#: the rest of the package's way in, imported on first use (PEP 562): importing the package
#: loads only what it needs at once
_WHERE: dict[str, str] = {
    "BEAM": "._profiles",
    "HALUMEM": "._profiles",
    "LME2_CORRECTED": "._profiles",
    "LME2_PROTOCOLS": "._profiles",
    "LOCOMO_PLUS": "._profiles",
    "LOCOMO_PLUS_JUDGE_FILE": "._profiles",
    "LONGMEMEVAL": "._profiles",
    "LONGMEMEVAL_V2": "._profiles",
    "MAB_LONGMEM_FILE": "._profiles",
    "MEM0": "._profiles",
    "MEMORYAGENTBENCH": "._profiles",
    "PROMPT_SHA256": "._prompt_pins",
    "ProtocolWarning": "._setup",
    "SourceText": "._source",
    "answer_model_warnings": "._setup",
    "ask": "._judges",
    "check_answer_options": "._setup",
    "dependency_warnings": "._setup",
    "extract": "._source",
    "judge_model_warnings": "._setup",
    "mem0_official_label": "._judges",
    "pin_warnings": "._setup",
    "prepare_protocol": "._setup",
    "read_upstream": "._source",
}

if not TYPE_CHECKING:
    __getattr__ = lazy_getattr(__name__, _WHERE, globals())
