"""Every ``config.stash`` / ``item.stash`` key of the plugin, in one module that imports no other glue
module at run time, so the hook modules (``plugin``, ``xdist``, ``html``, ``scale``) share state without
importing one another."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..records import QuestionResult
    from ..run import RunState
    from ._controller import Controller
    from ._item_hooks import Recorder
    from ._scheduler import ConversationScheduling

#: the session's loaded benchmarks, systems, settings and LLM runtime (every process)
STATE_KEY: pytest.StashKey[RunState] = pytest.StashKey()
#: the result of one built-in question item (``item.stash``)
RESULT_KEY: pytest.StashKey[QuestionResult] = pytest.StashKey()
#: the controller that gathers results and writes reports (controller / single process only)
CONTROLLER_KEY: pytest.StashKey[Controller] = pytest.StashKey()
#: records of hand-written ``memeval_case`` tests
RECORDER_KEY: pytest.StashKey[Recorder] = pytest.StashKey()
#: the xdist scheduler, so the controller can ask it which work it gave up (controller only)
SCHEDULER_KEY: pytest.StashKey[ConversationScheduling] = pytest.StashKey()
#: the report's ``judge_calibration`` block, once --memeval-judge-calibration ran (controller only)
CALIBRATION_KEY: pytest.StashKey[dict[str, Any]] = pytest.StashKey()
