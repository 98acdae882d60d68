"""Conftest memory systems wherever users put them, and unknown ``--memsys`` names found early.

pytest scopes a conftest's fixtures to the conftest's folder, and the benchmark's items hang under
a virtual ``memeval/`` folder at the rootdir: a fixture in ``tests/conftest.py`` (or in the folder
pytest is started from) is out of their reach, and on pytest 9.1+ even the rootdir conftest's
fixtures are parsed only when its folder is collected. So at session start the conftest modules
pytest has already loaded (the rootdir's, those of the folder pytest is started from and its
``test*`` subfolders, of the folders given on the command line, and of ``testpaths`` when started
from the rootdir; with pytest's own rules) are inspected, with public API only
(``pluginmanager.get_plugins`` / ``get_name``): a ``--memsys`` name that is an attribute of one of
them is copied into a small holder module registered as an ordinary plugin, whose fixtures pytest
makes visible everywhere (``request.getfixturevalue`` then finds it from every item).
"""

from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

__all__ = [
    "HOLDER_PREFIX",
    "WHERE_FIXTURES",
    "LoadedModule",
    "fixture_names",
    "loaded_modules",
    "may_define",
    "register_system",
]

#: plugin name of the holder registered for a conftest system (``<prefix><name>``)
HOLDER_PREFIX = "memeval-conftest-system-"

#: where a conftest memory system is looked for (appended to "unknown memory system")
WHERE_FIXTURES = (
    " A conftest fixture is found in the conftest.py files pytest loads at start-up: the rootdir's, "
    "the folder pytest is started from (and its test* subfolders), the folders given on the "
    "command line, and testpaths when started from the rootdir."
)

#: top-level packages whose modules are never a user's conftest (pytest's own package is matched
#: with its leading underscore stripped)
_OWN = frozenset({"pytest", "pluggy", "pytest_memeval", "builtins", "xdist"})


class ConftestSystemWarning(UserWarning):
    """Two loaded conftests define the same ``--memsys`` fixture (which one is used)."""


@dataclass(frozen=True)
class LoadedModule:
    """A user module pytest has loaded as a plugin: a conftest, a ``pytest_plugins`` module, a
    ``-p`` module or an installed plugin (``plugin`` is what was registered: the module itself
    or, for class-based plugins, the object)."""

    path: Path
    module: ModuleType
    plugin: object
    conftest: bool


def loaded_modules(config: pytest.Config) -> list[LoadedModule]:
    """The user modules registered with pytest now (pytest's and this plugin's own left out)."""
    manager = config.pluginmanager
    found: list[LoadedModule] = []
    seen: set[int] = set()
    for plugin in manager.get_plugins():
        name = manager.get_name(plugin) or ""
        if name.startswith(HOLDER_PREFIX) or id(plugin) in seen:
            continue
        seen.add(id(plugin))
        module = (
            plugin
            if isinstance(plugin, ModuleType)
            else sys.modules.get(getattr(type(plugin), "__module__", ""))
        )
        if module is None or str(getattr(module, "__name__", "")).split(".")[0].lstrip("_") in _OWN:
            continue
        file = getattr(module, "__file__", None)
        if not file:
            continue
        conftest = isinstance(plugin, ModuleType) and name.endswith("conftest.py")
        path = Path(name) if conftest else Path(file)
        found.append(LoadedModule(path.resolve(), module, plugin, conftest))
    return found


def fixture_names(modules: list[LoadedModule]) -> list[str]:
    """Names that may be fixtures in ``modules`` (for "did you mean"): functions and fixture
    objects defined there (not imported), without hooks and private names."""
    names: set[str] = set()
    for loaded in modules:
        module_name = getattr(loaded.module, "__name__", None)
        for attr, obj in vars(loaded.module).items():
            if attr.startswith(("_", "pytest_")) or isinstance(obj, type | ModuleType):
                continue
            if callable(obj) and getattr(obj, "__module__", None) == module_name:
                names.add(attr)
    return sorted(names)


def _anchors(config: pytest.Config) -> list[Path]:
    """The folder pytest was started from and the folders given to it (or its testpaths)."""
    start = config.invocation_params.dir
    anchors = [start.resolve()]
    for arg in config.args:
        path = Path(str(arg).split("::")[0])
        path = (path if path.is_absolute() else start / path).resolve()
        anchors.append(path if path.is_dir() else path.parent)
    return anchors


def _distance(folder: Path, anchors: list[Path]) -> int:
    best = sys.maxsize
    for anchor in anchors:
        for inner, outer in ((anchor, folder), (folder, anchor)):
            if inner.is_relative_to(outer):
                best = min(best, len(inner.relative_to(outer).parts))
    return best


def _has(obj: object, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:  # a plugin object's __getattr__ may raise anything
        return False


def _named_pattern(name: str) -> re.Pattern[str]:
    return re.compile(r"\bname\s*=\s*(['\"])" + re.escape(name) + r"\1")


def _attribute_for(module: ModuleType, name: str) -> str | None:
    """The attribute of ``module`` defining fixture ``name``: ``name`` itself, or a function
    decorated with ``@pytest.fixture(name="<name>")`` (found in its source)."""
    if _has(module, name):
        return name
    pattern = _named_pattern(name)
    for attr, obj in vars(module).items():
        if isinstance(obj, type | ModuleType) or not callable(obj):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        try:
            source = inspect.getsource(obj)
        except (OSError, TypeError):
            continue
        if pattern.search(source):
            return attr
    return None


def _holder(
    name: str, attr: str, chosen: LoadedModule, conftests: list[LoadedModule]
) -> ModuleType:
    """A module holding fixture ``name`` (attribute ``attr`` of ``chosen``) and the fixtures it
    asks for by parameter that the same conftest (or a conftest above it) defines: as out of reach
    as ``name`` itself."""
    folder = chosen.path.parent
    above = sorted(
        (c for c in conftests if c is not chosen and folder.is_relative_to(c.path.parent)),
        key=lambda c: -len(c.path.parts),
    )
    holder = ModuleType(f"{HOLDER_PREFIX}{name}")
    todo = [(attr, chosen.module)]
    while todo:
        attr, module = todo.pop()
        if attr in vars(holder):
            continue
        obj = getattr(module, attr)
        setattr(holder, attr, obj)
        try:
            params = list(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            continue
        for param in params:
            if param == "request" or param in vars(holder):
                continue
            owner = next((c.module for c in [chosen, *above] if _has(c.module, param)), None)
            if owner is not None and callable(getattr(owner, param)):
                todo.append((param, owner))
    return holder


def register_system(config: pytest.Config, name: str, modules: list[LoadedModule]) -> bool:
    """Make conftest fixture ``name`` one every item can see; False when no loaded conftest
    defines it. Two conftests defining it: one at or above the rootdir wins (pytest itself shows
    its fixtures to every item, and a plugin cannot outrank that with public API), else the one
    nearest the folder pytest was started from (or a folder given on the command line); a
    warning names both."""
    conftests = [m for m in modules if m.conftest]
    attrs = {id(m): _attribute_for(m.module, name) for m in conftests}
    owners = [m for m in conftests if attrs[id(m)] is not None]
    if not owners:
        return False
    anchors = _anchors(config)
    root = config.rootpath.resolve()
    owners.sort(
        key=lambda m: (
            not root.is_relative_to(m.path.parent),
            _distance(m.path.parent, anchors),
            -len(m.path.parts),
            str(m.path),
        )
    )
    chosen = owners[0]
    if len(owners) > 1 and not hasattr(config, "workerinput"):
        why = (
            "the rootdir's conftest is seen by every item"
            if root.is_relative_to(chosen.path.parent)
            else "nearest to where pytest was started or the folders given"
        )
        others = ", ".join(str(m.path) for m in owners[1:])
        config.issue_config_time_warning(
            ConftestSystemWarning(
                f"--memsys={name}: {len(owners)} conftests define {name!r}; using {chosen.path} "
                f"({why}), not {others}; give each system its own name to choose"
            ),
            stacklevel=2,
        )
    manager = config.pluginmanager
    holder_name = f"{HOLDER_PREFIX}{name}"
    if manager.get_plugin(holder_name) is None:
        attr = attrs[id(chosen)]
        assert attr is not None
        manager.register(_holder(name, attr, chosen, conftests), holder_name)
    return True


def may_define(name: str, modules: list[LoadedModule]) -> bool:
    """Whether a loaded non-conftest plugin has attribute ``name`` (its fixtures are global), or
    any loaded module's source names a fixture ``name`` (``@pytest.fixture(name="...")``)."""
    if any(not m.conftest and _has(m.plugin, name) for m in modules):
        return True
    pattern = _named_pattern(name)
    for loaded in modules:
        try:
            source = Path(str(loaded.module.__file__)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if pattern.search(source):
            return True
    return False
