"""Pytest glue of ``--memeval-contract``: the MemorySystem contract as items,
``memeval-contract/<system>::<property>``, one per property of ``run.contract_kit.PROPERTIES``.

The systems are resolved exactly as a benchmark run resolves them (``_resolve_systems`` of the
plugin package, handed in, and :func:`memsys.obtain_system` for conftest fixtures), so every
kind the plugin knows (conftest fixtures, entry points, ``package.module:factory``, ``http:``,
``mcp:``, built-ins) is checked the way a run would use it. A property that does not hold fails
its item with one sentence (no traceback); one that does not apply is skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import MemevalError
from ._items import path_component
from ._memsys import obtain_system

if TYPE_CHECKING:
    from ..run import ContractLimits, RunState, Settings, SystemRef

__all__ = ["ContractHooks", "ContractItem", "ContractNode"]

#: the virtual folder the contract's items hang under (``memeval-contract/<system>``)
CONTRACT_FOLDER = "memeval-contract"

Resolver = Callable[[pytest.Config, "RunState"], "list[SystemRef]"]


class ContractHooks:
    """Registered by ``pytest_configure`` when ``--memeval-contract`` is given (also on xdist
    workers, which collect the same items)."""

    def __init__(self, config: pytest.Config, settings: Settings, resolve: Resolver) -> None:
        assert settings.contract is not None
        self.config = config
        self.settings = settings
        self.limits: ContractLimits = settings.contract
        self.resolve = resolve
        self.systems: list[SystemRef] = []
        #: the object each system gave last in this process (a shared one is reset before reuse)
        self.last: dict[str, object] = {}
        #: system -> property -> "holds", "failed" or "skipped" (the terminal summary)
        self.verdicts: dict[str, dict[str, str]] = {}
        #: system -> what its scale item measured, for the summary
        self.scale: dict[str, str] = {}
        #: the run state the systems were resolved with (it owns their MCP connections)
        self.state: RunState | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from ..run import RunState

        # kept: it owns the MCP connections the systems were resolved with (closed at the end)
        self.state = RunState(settings=self.settings)
        refs = self.resolve(self.config, self.state)
        seen: set[str] = set()
        for ref in refs:  # the top-k variants of one system share its contract
            if ref.base not in seen:
                seen.add(ref.base)
                self.systems.append(ref)

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """Without explicit paths, the contract runs alone (no test files)."""
        return True if not self.settings.selection.explicit_paths else None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """The MCP servers this process started go with the session, as after a benchmark run."""
        self.last.clear()
        if self.state is not None:
            self.state.close_services()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Each contract item's verdict (here or from an xdist worker), for the summary."""
        system, _, prop = report.nodeid.removeprefix(f"{CONTRACT_FOLDER}/").rpartition("::")
        if not report.nodeid.startswith(f"{CONTRACT_FOLDER}/") or not system:
            return
        if report.when == "call" or report.outcome != "passed":
            verdict = "holds" if report.passed else report.outcome
            self.verdicts.setdefault(system, {})[prop] = verdict
            figures = dict(report.user_properties)
            if "scale_ingest_seconds" in figures:
                self.scale[system] = (
                    f"scale: ingest {figures['scale_ingest_seconds']:.1f} s, "
                    f"+{figures['scale_growth_mib']:.0f} MiB"
                )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One line per system: the properties it breaks, or that it holds them all."""
        if not self.verdicts:
            return
        terminalreporter.section("memeval contract")
        for system, verdicts in self.verdicts.items():
            broken = [p for p, v in verdicts.items() if v == "failed"]
            skipped = [p for p, v in verdicts.items() if v == "skipped"]
            held = sum(v == "holds" for v in verdicts.values())
            line = (
                f"{system}: breaks {', '.join(broken)} ({held} of {len(verdicts)} hold)"
                if broken
                else f"{system}: holds the contract ({held} propert{'y' if held == 1 else 'ies'})"
            )
            if skipped:
                line += f"; not applicable: {', '.join(skipped)}"
            if system in self.scale:
                line += f"; {self.scale[system]}"
            terminalreporter.write_line(line, red=bool(broken), green=not broken)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        if isinstance(collector, pytest.Session) and report.passed:
            report.result.extend(
                ContractNode.for_system(collector, ref, self) for ref in self.systems
            )
        return report


class ContractNode(pytest.Directory):
    """``memeval-contract/<system>``: not a folder on disk; one item per property."""

    def __init__(self, *, system: SystemRef, hooks: ContractHooks, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.system = system
        self.hooks = hooks

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        from ..run import PROPERTIES

        make: Any = ContractItem.from_parent  # untyped before pytest 8.1
        return [
            make(self, name=name, prop=name, system=self.system, hooks=self.hooks)
            for name in PROPERTIES
        ]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.nodeid

    @classmethod
    def for_system(
        cls, session: pytest.Session, ref: SystemRef, hooks: ContractHooks
    ) -> ContractNode:
        path = session.config.rootpath / CONTRACT_FOLDER / path_component(ref.base)
        node: ContractNode = cls.from_parent(session, path=path, system=ref, hooks=hooks)
        return node


def _contract_property(request: pytest.FixtureRequest) -> None:
    """The callable of every contract item: the item checks its property (asking for
    ``request`` lets a conftest system be obtained with ``getfixturevalue``)."""
    node = request.node
    assert isinstance(node, ContractItem)
    node.check(request)


class ContractItem(pytest.Function):
    """One property of the contract, checked on one memory system."""

    def __init__(
        self, *, prop: str, system: SystemRef, hooks: ContractHooks, **kwargs: Any
    ) -> None:
        super().__init__(callobj=_contract_property, **kwargs)
        self.prop = prop
        self.system = system
        self.hooks = hooks

    def check(self, request: pytest.FixtureRequest) -> None:
        from ..run import ContractSkip, ContractViolation, SystemSource, check_property

        ref = self.system
        source = SystemSource(
            ref.base,
            lambda: obtain_system(request, ref),
            self.hooks.last,
            timeout=self.hooks.limits.timeout,
        )
        skipped = failed = None
        try:
            check_property(self.prop, source, self.hooks.limits)
            self.user_properties.extend(source.figures.items())
        except ContractSkip as exc:
            skipped = str(exc)
        except ContractViolation as exc:
            failed = f"{ref.base}: {exc}"
        except MemevalError as exc:  # the system cannot be obtained (a missing fixture)
            failed = f"{ref.base}: {self.prop}: {exc}"
        # raised outside the except blocks: one line, no "during handling" chain
        if skipped is not None:
            pytest.skip(skipped)
        if failed is not None:
            pytest.fail(failed, pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"contract of {self.system.base}: {self.prop}"
