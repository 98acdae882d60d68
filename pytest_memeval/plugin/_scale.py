"""Pytest glue for running beyond one machine: shards, merging, LLM-cache sharing.

- ``--memeval-shard=I/N``: the plugin keeps this shard's conversations at load time
  (:func:`shards.shard_questions`); the run folder records the shard and a fingerprint of the
  configuration (:func:`run.fingerprint.run_config`).
- ``--memeval-merge=RUN_DIR,...``: a session that runs nothing. The options default to the first
  shard's own (:func:`apply_merge_defaults`), the shards are checked (:func:`shards.load_shards`)
  and against this session's own fingerprint, their results fill the controller as a resume
  would, every benchmark item is deselected, and the controller builds the reports from the same
  code as a single run, so the tables are the same.
- ``--memeval-cache-import=FILE`` / ``--memeval-cache-export=FILE``: the LLM cache as one JSON
  Lines file (``llm/_transfer.py``), imported before any worker starts, exported at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import AdapterError, MemevalError
from ._options import OPTIONS, split_values

if TYPE_CHECKING:
    pass

__all__ = ["ScaleHooks", "apply_merge_defaults"]

#: options a merge never takes from the shards (where to read and write, gates, this session)
_LOCAL_OPTIONS = frozenset(
    {
        "memeval_merge",
        "memeval_merge_partial",
        "memeval_cache_import_verify",
        "memeval_shard",
        "memeval_cache_dir",
        "memeval_json",
        "memeval_html",
        "memeval_markdown",
        "memeval_resume",
        "memeval_rejudge",
        "memeval_reanswer",
        "memeval_fail_under",
        "memeval_baseline",
        "memeval_save_baseline",
        "memeval_max_drop",
        "memeval_health_max_rise",
        "memeval_alpha",
        "memeval_show_wrong",
        "memeval_keep_runs",
        "memeval_cache_import",
        "memeval_cache_export",
        "memeval_timeout",
        "memeval_published_baselines",
    }
)


def apply_merge_defaults(config: pytest.Config) -> None:
    """With ``--memeval-merge``, every option not given here takes the first shard's value, so
    ``pytest --memeval-merge=DIR,...`` needs nothing else (a value given here still wins, and a
    differing one is refused by the fingerprint check)."""
    raw = config.getoption("memeval_merge", None)
    folders = split_values(raw or [])
    if not folders:
        return
    from ..run import read_run_json

    path = Path(folders[0]).expanduser() / "config.json"
    try:
        stored = read_run_json(path, "run configuration")
    except MemevalError as exc:
        raise pytest.UsageError(str(exc)) from None
    options = stored.get("options") if isinstance(stored, dict) else None
    if not isinstance(options, dict):
        raise pytest.UsageError(f"--memeval-merge: {path} holds no 'options'; not a run folder")
    for opt in OPTIONS:
        if opt.dest in _LOCAL_OPTIONS or opt.dest not in options:
            continue
        value = options[opt.dest]
        if value in (None, "", [], False) or value == opt.default:
            continue
        if opt.dest == "memeval_data" and not Path(str(value)).expanduser().is_dir():
            continue  # the shards' data folder is not on this machine: MEMEVAL_DATA_DIR or download
        if getattr(config.option, opt.dest, None) is None:
            setattr(config.option, opt.dest, value)


def _not_run() -> object:
    raise AdapterError("--memeval-merge runs no memory system")


class ScaleHooks:
    """Registered on the controller (or the single process) when a scale option is given."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.merged_ok = False
        #: selected questions no merged shard holds a result for
        self.missing = 0

    @property
    def settings(self) -> Any:
        from ._stash import STATE_KEY

        return self.config.stash[STATE_KEY].settings

    # ---- merge -------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_memeval_make_system(self, config: pytest.Config, name: str) -> Any:
        """A merge never runs, resolves or imports a system: each ``--memsys`` value stands for
        the system names the shards recorded (or for itself), so a merge machine needs none of
        them installed, and a shard folder naming ``pkg.module:attr`` never gets it imported."""
        if not self.settings.run.merge:
            return None
        from ..run import recorded_bases

        bases = recorded_bases(Path(self.settings.run.merge[0])).get(name) or [name]
        return [(base, _not_run) for base in bases]

    def merge_into(self) -> None:
        """Read and check the shards, and hand their results to the controller (from the stash:
        this module does not import the controller's)."""
        from ..run import merge_shards
        from ._questions import question_run
        from ._stash import CONTROLLER_KEY

        controller = self.config.stash[CONTROLLER_KEY]
        state = controller.state
        checked, outputs = merge_shards(
            state,
            self.settings.run.merge,
            lambda bench: question_run(self.config, state, bench),
        )
        controller.rescored += checked.rescored
        for result in checked.results.values():
            controller._add(result)
        for out in outputs:
            controller.add_worker_output(out)
        state.resume_ids = frozenset(checked.results)
        self.merged_ok = True

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not self.settings.run.merge:
            return
        from ._items import MemevalItem, result_key
        from ._stash import CONTROLLER_KEY

        controller = config.stash.get(CONTROLLER_KEY, None)
        dropped = [item for item in items if result_key(item) is not None]
        if not dropped:
            return
        items[:] = [item for item in items if result_key(item) is None]
        config.hook.pytest_deselected(items=dropped)
        if controller is not None:
            for item in dropped:
                if isinstance(item, MemevalItem) and result_key(item) not in controller.results:
                    self.missing += 1
                    controller._lost(item.nodeid, "not run: no merged shard holds this question")

    def _finish_shard(self, session: pytest.Session) -> None:
        """A shard with no conversation (more shards than conversations) is a success, and its
        run folder still holds a (then empty) results file, so the merge finds every shard."""
        from ..run import RESULTS_FILE
        from ._stash import CONTROLLER_KEY, STATE_KEY

        state = self.config.stash[STATE_KEY]
        empty = not any(state.selected.values())
        if empty and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    f"memeval: shard {self.settings.selection.shard} has no conversation to run "
                    "(more shards than conversations)"
                )
        controller = self.config.stash.get(CONTROLLER_KEY, None)
        if controller is not None and controller.store is not None:
            try:
                with open(controller.store.folder / RESULTS_FILE, "ab"):
                    pass
            except OSError:
                pass

    # ---- LLM cache ---------------------------------------------------------------------------
    def verify_count(self) -> int:
        """``--memeval-cache-import-verify=N`` (0 when not given), checked."""
        raw = self.config.getoption("memeval_cache_import_verify", None)
        if raw in (None, ""):
            return 0
        text = str(raw).strip()
        if not text.isdigit() or len(text) > 9:
            raise pytest.UsageError(
                f"--memeval-cache-import-verify={text[:40]!r}: expected a count of verdicts to "
                "re-ask (0 to 999999999), e.g. --memeval-cache-import-verify=20"
            )
        n = int(text)
        if n and (not self.settings.run.cache_import or not self.settings.llm.judges):
            raise pytest.UsageError(
                "--memeval-cache-import-verify re-asks the judge for verdicts imported with "
                "--memeval-cache-import: give both, and a --memeval-judge"
            )
        return n

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        settings = self.settings
        self.verify_count()
        if not settings.active or not settings.run.cache_import:
            return
        from ..llm import CACHE_FILENAME, import_cache

        for path in settings.run.cache_import:
            try:
                import_cache(Path(settings.cache_dir) / "llm" / CACHE_FILENAME, path)
            except MemevalError as exc:
                raise pytest.UsageError(f"--memeval-cache-import={path}: {exc}") from None

    def verify_imports(self) -> None:
        """Re-ask the judge, bypassing the cache, for a seeded random sample of the verdicts that
        came from imported files, and record how many disagree on the controller."""
        from ._stash import CONTROLLER_KEY, STATE_KEY

        n = self.verify_count()
        controller = self.config.stash.get(CONTROLLER_KEY, None)
        state = self.config.stash[STATE_KEY]
        if not n or controller is None or state.llm is None:
            return
        from ..run import verify_imported_verdicts

        controller.import_verify = verify_imported_verdicts(
            state, list(controller.results.values()), n, state.settings.selection.seed
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        settings = self.settings
        if settings.active and settings.run.cache_import:
            self.verify_imports()
        if self.merged_ok and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # nothing to run is what a merge means
        if self.merged_ok and self.missing and not self.config.getoption("memeval_merge_partial"):
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(
                    f"memeval: --memeval-merge: {self.missing} selected question(s) have no "
                    "result in the merged shards (counted as ERROR): add the missing shards' run "
                    "folders, or pass --memeval-merge-partial to accept a partial merge",
                    red=True,
                )
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if settings.selection.shard is not None:
            self._finish_shard(session)
        if settings.active and settings.run.cache_export is not None:
            from ..llm import CACHE_FILENAME, export_cache

            try:
                export_cache(
                    Path(settings.cache_dir) / "llm" / CACHE_FILENAME, settings.run.cache_export
                )
            except MemevalError as exc:
                reporter = session.config.pluginmanager.get_plugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(f"memeval: --memeval-cache-export failed: {exc}", red=True)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
