"""Command-line options, declared once (``OPTIONS``, in their ``--help`` groups): data only.
``_option_register.py`` registers them with pytest; ``_options.py`` reads them into
``run.Settings``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GROUPS", "OPTIONS"]


@dataclass(frozen=True)
class _Opt:
    name: str  # without the leading "--"; ini name is name with "-" -> "_"
    help: str
    default: str | None = None
    flag: bool = False
    metavar: str | None = None
    multiple: bool = False
    const: str | None = None  # the option's value may be omitted: then it is `const`
    #: an earlier spelling (and ini key), still read, with a deprecation warning naming this one
    alias: str | None = None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


_RUN: tuple[_Opt, ...] = (
    _Opt(
        "memeval",
        "benchmark(s) to run: demo, locomo, locomo-plus, longmemeval, beam, usermem, "
        "memoryagentbench, longmemeval-v2, halumem (comma "
        "list; locomo,locomo-plus is LoCoMo-Plus's unified set)",
        metavar="BENCH[,BENCH]",
    ),
    _Opt(
        "memsys",
        "memory system(s) under test: conftest fixture, entry point, built-in "
        "(full-context, bm25, embedding, no-memory, oracle), replay:PATH, or package.module:factory "
        "(comma list)",
        metavar="SYS[,SYS]",
    ),
    _Opt(
        "memeval-metrics",
        "metrics to compute and show (default: the benchmark's offline metrics); judge = the "
        "first judge's metric on each benchmark (judge_mem0, nugget, ...)",
        metavar="M[,M]",
    ),
    _Opt(
        "memeval-top-k",
        "memories retrieved per question; a comma list runs one variant per k (default 10)",
        default="10",
        metavar="K[,K]",
    ),
    _Opt(
        "memeval-context-budget",
        "at most N tokens (cl100k_base) of memory text handed to the answerer per question, in "
        "rank order; what was cut is recorded",
        metavar="N",
    ),
    _Opt(
        "memeval-pass-threshold",
        "score at or above which an answer is CORRECT when no judge "
        "runs (default 0.5; usermem 0.6)",
        metavar="X",
    ),
    _Opt("memeval-strict", "report WRONG answers as test failures", flag=True),
    _Opt(
        "memeval-timeout",
        "seconds a memory-system call (ingest, search, answer) may take "
        "before its item errors (default: no limit)",
        metavar="S",
    ),
    _Opt(
        "memeval-max-repeated-errors",
        "after N identical errors in a row, a memory system's remaining questions are reported "
        "as errors without running (per process; default 20; 0: never stop)",
        default="20",
        metavar="N",
    ),
    _Opt(
        "memeval-contract",
        "check the --memsys system(s) against the MemorySystem contract, one item per property "
        "(isolation, determinism, top-k, thread safety, dump, plain values, empty question, "
        "unicode, scale: a LongMemEval-S-sized ingest within --memeval-timeout, 600 s without "
        "it); needs no benchmark",
        flag=True,
    ),
    _Opt(
        "memeval-contract-memory",
        "MiB the process may grow by while the contract's scale item ingests a "
        "LongMemEval-S-sized conversation (default 1024)",
        default="1024",
        metavar="MIB",
    ),
    _Opt(
        "memeval-resume",
        "continue an earlier run (default: the latest under the cache "
        "folder): questions already stored are skipped, their results reused",
        metavar="RUN",
        const="latest",
    ),
    _Opt(
        "memeval-rejudge",
        "re-score the predictions stored by an earlier run (default: the latest under the cache "
        "folder) without calling the memory system or the answerer",
        metavar="RUN",
        const="latest",
    ),
    _Opt(
        "memeval-keep-runs",
        "run folders to keep under <cache>/runs: at the end of a run the oldest beyond N are "
        "deleted, never the one resumed or re-judged (default 20; 0 keeps all)",
        default="20",
        metavar="N",
    ),
    _Opt(
        "memeval-cache-dir",
        "cache folder for downloads and LLM calls (default <rootdir>/.memeval-cache)",
        metavar="DIR",
    ),
)

_DATA: tuple[_Opt, ...] = (
    _Opt(
        "memeval-data",
        "folder with one sub-folder per benchmark (DIR/locomo/locomo10.json); "
        "default $MEMEVAL_DATA_DIR, else download to the cache",
        metavar="DIR",
    ),
    _Opt(
        "memeval-accept-unpinned",
        "use a file under --memeval-data at a pinned path whose sha256 is not the pinned "
        "release's (recorded as unpinned in the provenance); without it such a copy is refused",
        flag=True,
    ),
    _Opt(
        "memeval-variant",
        "benchmark variant (LongMemEval oracle|s|m, BEAM 100K|500K|1M|10M)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-limit",
        "run only the first N questions of each conversation (file order)",
        metavar="N",
    ),
    _Opt(
        "memeval-sample",
        "run N questions per category, stratified, reproducible with --memeval-seed",
        metavar="N",
    ),
    _Opt("memeval-seed", "seed for --memeval-sample (default 0)", default="0", metavar="S"),
    _Opt(
        "memeval-errata",
        "gold-answer errata overlay: a known name (locomo-audit), or PATH to an audit-shaped "
        "JSON file or folder; reports add official, sound-gold and ceiling columns",
        metavar="NAME|PATH",
    ),
)

_LLM: tuple[_Opt, ...] = (
    _Opt(
        "memeval-answerer",
        "answerer: extractive (offline, default) or PROVIDER:MODEL",
        default="extractive",
        metavar="NAME",
    ),
    _Opt(
        "memeval-answer-prompt", "answer prompt template file for an LLM answerer", metavar="PATH"
    ),
    _Opt(
        "memeval-judge",
        "LLM judge(s) PROVIDER:MODEL (openai, anthropic, openai-compatible), "
        "comma list; the first one decides CORRECT/WRONG",
        metavar="P:M[,P:M]",
    ),
    _Opt(
        "memeval-judge-style",
        "judge style: mem0, graded, longmemeval, beam-nugget, usermem (default per benchmark)",
        metavar="STYLE",
    ),
    _Opt("memeval-judge-runs", "runs of the graded judge (default 10)", default="10", metavar="N"),
    _Opt(
        "memeval-judge-prompt",
        "judge prompt template file (or folder for longmemeval)",
        metavar="PATH",
    ),
    _Opt(
        "memeval-judge-calibration",
        "calibrate the --memeval-judge on the gold answers and on known-wrong answers, per "
        "category: 'before' runs the calibration first and then the system as usual (the "
        "default when no value is given); 'only' runs the calibration instead of the system "
        "(no question of the benchmark runs). Gate with judge_false_accept / judge_true_accept",
        metavar="before|only",
        const="before",
    ),
    _Opt(
        "memeval-calibration-wrong",
        "known-wrong answers for the judge calibration (comma list): perturb (built-in "
        "wrong-entity, wrong-date and negation answers made from the gold), locomo-audit "
        "(dial481/locomo-audit ap-baseline v1 and v2, downloaded at a pinned commit), "
        "locomo-audit-v1, locomo-audit-v2, or PATH of a JSON file of that shape; default "
        "perturb, plus locomo-audit for --memeval=locomo",
        metavar="SOURCE[,SOURCE]",
    ),
    _Opt(
        "memeval-base-url",
        "base URL for openai-compatible endpoints (vLLM, Ollama, ...)",
        metavar="URL",
    ),
    _Opt(
        "memeval-api-key-env",
        "environment variable holding the openai-compatible key (default OPENROUTER_API_KEY)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-llm-concurrency",
        "LLM calls in flight per process, answerer and judges "
        "together (default 8; -n N multiplies it)",
        default="8",
        metavar="N",
    ),
    _Opt(
        "memeval-ingest-ahead",
        "conversations the LLM window may reach ahead of the one being run, each ingested "
        "(a fresh system instance per system, held in memory) before its questions run "
        "(default 32; 0: the window stays in the current conversation)",
        default="32",
        metavar="N",
    ),
    _Opt("memeval-llm-timeout", "seconds per LLM request (default 60)", default="60", metavar="S"),
    _Opt(
        "memeval-llm-rpm",
        "requests a minute per provider and key, shared by every process of the machine "
        "(xdist workers included), or of every host with --memeval-llm-limiter=redis://... "
        "(default: no limit)",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-tpm",
        "tokens a minute (input + max reply) per provider and key, shared like "
        "--memeval-llm-rpm (default: no limit)",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-limiter",
        "where the --memeval-llm-rpm / --memeval-llm-tpm budget lives: file (default: a state "
        "file in the cache folder, shared by the processes of one machine) or "
        "redis://HOST:PORT/DB (one budget for every process on every host; needs "
        "pytest-memeval[redis])",
        default="file",
        metavar="URL",
    ),
    _Opt(
        "memeval-llm-limiter-wait",
        "seconds an LLM call waits for the --memeval-llm-limiter Redis when it cannot be reached, "
        "sending nothing; then the call fails and the run goes on (a verdict is UNSCORED: "
        "--memeval-rejudge asks it again; an answer is an ERROR: --memeval-resume), and later "
        "calls fail at once until Redis is back (default 600)",
        default="600",
        metavar="S",
    ),
    _Opt(
        "memeval-llm-backoff",
        "first retry delay in seconds, doubled per retry with jitter (default 0.5)",
        default="0.5",
        metavar="S",
    ),
    _Opt(
        "memeval-llm-retries",
        "retries of 429/5xx/timeouts per LLM call (default 6)",
        default="6",
        metavar="N",
    ),
    _Opt(
        "memeval-llm-circuit-breaker",
        "after N LLM calls in a row that cannot connect, stop calling the endpoint in that "
        "process: judges UNSCORED, answers ERROR (default 5; 0 disables)",
        default="5",
        metavar="N",
    ),
    _Opt("memeval-no-cache", "do not read or write the LLM cache", flag=True),
    _Opt(
        "memeval-estimate",
        "ingest and search for real, render every LLM request, send none: print the calls, input "
        "tokens (after cache hits), cost and wall time the run would take (docs/scale.md)",
        flag=True,
    ),
    _Opt(
        "memeval-llm-batch",
        "send judge calls (and --memeval-reanswer's answers) through the providers' batch APIs "
        "at the end of the run (half price; see docs/batch.md)",
        flag=True,
    ),
    _Opt(
        "memeval-llm-batch-wait",
        "seconds a batch may take from its submission before it is cancelled and its requests "
        "are sent synchronously (default 86400, the providers' 24 h window)",
        default="86400",
        metavar="S",
    ),
    _Opt(
        "memeval-prices",
        "JSON price table {model: {input: $/Mtok, output: $/Mtok}} for the cost in the summary",
        metavar="PATH",
    ),
)

_REPORTS: tuple[_Opt, ...] = (
    _Opt("memeval-json", "write the JSON report to PATH", metavar="PATH"),
    _Opt("memeval-html", "write a self-contained HTML report to PATH", metavar="PATH"),
    _Opt(
        "memeval-markdown",
        "write the Markdown summary to PATH (also appended to $GITHUB_STEP_SUMMARY when set)",
        metavar="PATH",
    ),
    _Opt(
        "memeval-board",
        "add this run to the board in DIR (its JSON report is kept in DIR/reports) and rewrite "
        "the board's static site there (docs/board.md)",
        metavar="DIR",
    ),
    _Opt(
        "memeval-show-wrong",
        "how many WRONG answers to detail in the terminal summary (default 5; all with -v)",
        default="5",
        metavar="N",
    ),
    _Opt(
        "memeval-published-baselines",
        "published baselines to show next to the run (names from "
        "pytest_memeval.analysis._baselines, 'all', or 'none'; default: a representative few)",
        metavar="NAME[,NAME]",
        alias="memeval-baselines",
    ),
    _Opt(
        "memeval-fail-under",
        "gate, repeatable: BENCH.CATEGORY.METRIC>=VALUE (overall as "
        "category; <= for latency), e.g. locomo.temporal.f1>=0.4; METRIC judge = the first "
        "judge's metric on the benchmark",
        metavar="EXPR",
        multiple=True,
    ),
    _Opt(
        "memeval-save-baseline",
        "save per-question outcomes and the summary to PATH",
        metavar="PATH",
    ),
    _Opt(
        "memeval-baseline", "compare with a saved baseline (see --memeval-max-drop)", metavar="PATH"
    ),
    _Opt(
        "memeval-max-drop",
        "regression gate, repeatable: METRIC:POINTS (fails when the metric "
        "drops by more than POINTS and the drop is significant; judge = the first judge's metric)",
        metavar="M:P",
        multiple=True,
    ),
    _Opt(
        "memeval-health-max-rise",
        "health gate, on whenever --memeval-baseline is given: fail when the share of questions "
        "whose search returned nothing, that raised or went unscored rose by more than POINTS "
        "over the baseline's (default 10; off to disable)",
        default="10",
        metavar="POINTS",
    ),
    _Opt(
        "memeval-alpha",
        "significance level of the regression test (default 0.05)",
        default="0.05",
        metavar="A",
    ),
)

_SCALE: tuple[_Opt, ...] = (
    _Opt(
        "memeval-shard",
        "run shard I of N: a deterministic 1/N of the conversations, balanced by question "
        "count, the same on every machine (composable with -n); merge with --memeval-merge",
        metavar="I/N",
    ),
    _Opt(
        "memeval-merge",
        "merge the run folders of the shards of one run (comma list, repeatable) into one "
        "report; options default to the shards' own; nothing is run",
        metavar="RUN_DIR[,RUN_DIR]",
        multiple=True,
    ),
    _Opt(
        "memeval-merge-partial",
        "accept a merge whose shards do not hold a result for every selected question (the "
        "missing ones count as ERROR); without it such a merge exits non-zero",
        flag=True,
    ),
    _Opt(
        "memeval-reanswer",
        "answer (and judge) again from the retrievals stored by an earlier run (default: the "
        "latest) without calling the memory system",
        metavar="RUN",
        const="latest",
    ),
    _Opt(
        "memeval-cache-import",
        "before the run, add the LLM-cache entries of FILE (from --memeval-cache-export) to "
        "the cache folder's LLM cache (repeatable; local entries win)",
        metavar="FILE",
        multiple=True,
    ),
    _Opt(
        "memeval-cache-import-verify",
        "ask the judge again, bypassing the cache, for a seeded random sample of N verdicts "
        "that came from --memeval-cache-import files, and report how many disagree",
        metavar="N",
    ),
    _Opt(
        "memeval-cache-export",
        "after the run, write every LLM-cache entry to FILE (JSON lines) for another machine",
        metavar="FILE",
    ),
)

_PROTOCOL: tuple[_Opt, ...] = (
    _Opt(
        "memeval-protocol",
        "official protocol: mem0, longmemeval, beam, locomo, locomo-plus, memoryagentbench, halumem, "
        "longmemeval-v2, longmemeval-v2-corrected (a labelled variant: the reader prompt's "
        "backspace written as \\boxed{}) (upstream prompts, "
        "request parameters, parsing and aggregation, read from the pinned upstream source; "
        "locomo-plus and longmemeval-v2 are the default when --memeval=locomo-plus or "
        "longmemeval-v2 runs with a judge)",
        metavar="NAME",
    ),
    _Opt(
        "memeval-protocol-source",
        "local checkout of the protocol's upstream repository (same relative paths) instead "
        "of downloading the pinned files",
        metavar="DIR",
    ),
)

#: the option groups of ``pytest --help``, in order: (group name, heading, options)
GROUPS: tuple[tuple[str, str, tuple[_Opt, ...]], ...] = (
    ("memeval-run", "pytest-memeval run: benchmarks, memory systems, outcomes, stored runs", _RUN),
    ("memeval-data", "pytest-memeval data: benchmark files and question selection", _DATA),
    ("memeval-llm", "pytest-memeval LLM: answerer, judges, endpoints, limits, cache, cost", _LLM),
    (
        "memeval-reports",
        "pytest-memeval reports and gates: report files, board, gates",
        _REPORTS,
    ),
    ("memeval-scale", "pytest-memeval scale: shards, merge, re-answer, LLM cache transfer", _SCALE),
    ("memeval-protocol", "pytest-memeval protocol: official upstream protocols", _PROTOCOL),
)
OPTIONS: tuple[_Opt, ...] = tuple(opt for _, _, opts in GROUPS for opt in opts)
