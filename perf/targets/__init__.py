"""The measurements behind ``perf/run.py``, one module per target (section of the table).

``common``       the table row, subprocess timing, the LoCoMo workload and profiling helpers
``f1``           official LoCoMo F1 throughput, ours vs a plain implementation
``harness``      a full LoCoMo run vs a bare pytest run of as many trivial tests
``xdist``        ``-n 2`` vs ``-n 0`` with a slow memory system; ingests per conversation
``judge``        judge calls against the loopback server vs ``N x latency / concurrency``
``warmjudge``    a judge rerun answered from the LLM cache vs offline metrics only
``longmemeval``  peak RSS of the loader and of collection vs the size of a generated file
``pyspy``        the ``--py-spy`` phase breakdown
``table``        the printed table and the machine header

Each target module exposes one ``section_<name>(ctx) -> list[Row]``; ``perf/run.py`` maps section
names to them.
"""
