"""Target ``idle``: what the installed plugin costs a pytest run that does not use it (no
``--memeval``, no ``memeval_case`` test): trivial tests with the plugin vs ``-p no:memeval``, and
the import of the pytest11 module itself.
"""

from __future__ import annotations

from targets.common import PYTEST_BASE, Context, Row, Timing, import_cost, run_timed

TARGET_IDLE = 1.1
#: tests in the trivial project: a small suite, where a fixed start-up cost shows most
IDLE_TESTS = 20


def section_idle(ctx: Context) -> list[Row]:
    repeats = 3 if ctx.quick else 7
    proj = ctx.work / "idle"
    proj.mkdir(parents=True, exist_ok=True)
    (proj / "test_idle.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({IDLE_TESTS}))\n"
        "def test_idle(i):\n    assert i >= 0\n",
        encoding="utf-8",
    )
    with_plugin = list(PYTEST_BASE)
    without = [*PYTEST_BASE, "-p", "no:memeval"]
    run_timed(with_plugin, proj, ctx.env)  # warm-up: bytecode and page caches for both sides
    run_timed(without, proj, ctx.env)
    runs: dict[str, list[Timing]] = {"with": [], "without": []}
    for _ in range(repeats):  # interleaved, so both see the same machine load
        runs["with"].append(run_timed(with_plugin, proj, ctx.env))
        runs["without"].append(run_timed(without, proj, ctx.env))
    for timing in runs["with"]:
        if f"{IDLE_TESTS} passed" not in timing.stdout:
            raise RuntimeError(f"the idle run did not pass {IDLE_TESTS} tests:\n{timing.stdout}")
    wall = {k: min(t.wall for t in v) for k, v in runs.items()}
    cpu = {k: min(t.cpu for t in v) for k, v in runs.items()}
    plugin_import = import_cost(ctx, repeats, "pytest_memeval.plugin", already="_pytest.python")
    ctx.raw["idle"] = {
        "tests": IDLE_TESTS,
        "walls": {k: [t.wall for t in v] for k, v in runs.items()},
        "cpus": {k: [t.cpu for t in v] for k, v in runs.items()},
        "import_plugin_s": plugin_import,
    }
    ratio = wall["with"] / wall["without"]
    return [
        Row(
            "idle",
            f"plugin idle: {IDLE_TESTS} trivial tests, plugin vs -p no:memeval, wall s, best of "
            f"{repeats}",
            wall["with"],
            wall["without"],
            ratio,
            f"<= {TARGET_IDLE:g}x",
            ratio <= TARGET_IDLE,
        ),
        Row(
            "idle",
            "  same, CPU s (user+sys, best)",
            cpu["with"],
            cpu["without"],
            cpu["with"] / cpu["without"],
        ),
        Row("idle", "  `import pytest_memeval.plugin` after pytest, s (best)", plugin_import),
    ]
