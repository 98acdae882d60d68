"""Official protocols (``--memeval-protocol``): profiles pinned to upstream files, the prompts
read from those files by parsing them, and the judges that send them as upstream does."""

from __future__ import annotations

from ._judges import (
    LoadedProtocol,
    Mem0OfficialJudge,
    load_protocol,
    metric_of_style,
)
from ._profiles import PROFILES, ProtocolProfile, RequestShape, get_profile
from ._source import ProtocolSourceError, StringRef, Template, UpstreamFile

__all__ = [
    "PROFILES",
    "LoadedProtocol",
    "Mem0OfficialJudge",
    "ProtocolProfile",
    "ProtocolSourceError",
    "RequestShape",
    "StringRef",
    "Template",
    "UpstreamFile",
    "get_profile",
    "load_protocol",
    "metric_of_style",
]
