"""The official protocol profiles (``--memeval-protocol=NAME``): pins and request shapes only.

A profile fixes, as the upstream code path does: which upstream file holds each prompt (pinned
repository, commit, path, sha256) and where in it (:class:`~.source.StringRef`), how the prompt is
filled (``format-keywords``, ``format-positional``, ``replace``, ``f-string``), the message roles,
the request parameters (model, temperature, max tokens, JSON mode), how a reply is read, how an
unusable reply counts, truncation, aggregation and which categories are judged.

No upstream text is stored here: only the pins. The text is read at run time (``source.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..benchmarks.halumem import UPSTREAM as HALUMEM_UPSTREAM
from ..benchmarks.locomo import UPSTREAM as LOCOMO_UPSTREAM
from ..benchmarks.locomo_plus import UPSTREAM as LOCOMO_PLUS_UPSTREAM
from ..benchmarks.longmemeval import UPSTREAM as LONGMEMEVAL_UPSTREAM
from ..benchmarks.longmemeval_v2 import UPSTREAM as LME2_UPSTREAM
from ..benchmarks.memoryagentbench import UPSTREAM as MAB_UPSTREAM
from ._source import StringRef, UpstreamFile

__all__ = [
    "LME2_CORRECTED",
    "LME2_PROTOCOLS",
    "LOCOMO_PLUS",
    "LOCOMO_PLUS_TEMPLATE_KEYS",
    "LONGMEMEVAL_V2",
    "LONGMEMEVAL_V2_CORRECTED",
    "MAB_AGENT",
    "MAB_QUERY_DATASETS",
    "MEMORYAGENTBENCH",
    "PROFILES",
    "ProtocolProfile",
    "RequestShape",
    "get_profile",
]

MEM0_COMMIT = "b3ede5b7c0ac0e847b03786a603c107ac943b3ee"
LONGMEMEVAL_COMMIT = LONGMEMEVAL_UPSTREAM.commit  # xiaowu0162/LongMemEval (the suite's own pin)
BEAM_COMMIT = "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
LOCOMO_COMMIT = LOCOMO_UPSTREAM.commit  # branch `code` (scorer + QA prompts; the suite's own pin)
LOCOMO_PLUS_COMMIT = LOCOMO_PLUS_UPSTREAM.commit  # xjtuleeyf/Locomo-Plus (the suite's own pin)
MAB_COMMIT = MAB_UPSTREAM.commit  # HUST-AI-HYZ/MemoryAgentBench (the suite's own pin)
HALUMEM_COMMIT = HALUMEM_UPSTREAM.commit  # MemTensor/HaluMem (the suite's own pin)
LME2_COMMIT = LME2_UPSTREAM.commit  # xiaowu0162/LongMemEval-V2 (the suite's own pin)

MEM0_JUDGE_FILE = UpstreamFile(
    "mem0ai/mem0",
    MEM0_COMMIT,
    "evaluation/metrics/llm_judge.py",
    "ac2e242f6ea0b817ba1b229ff9e5271f6846b7b8a9aefa8a5a5a81ea58df3b3c",
)
MEM0_PROMPTS_FILE = UpstreamFile(
    "mem0ai/mem0",
    MEM0_COMMIT,
    "evaluation/prompts.py",
    "407bea1c1453dc6832c234bb1ed936d401d796fabcc0b28337a47ba63517d3ba",
)
LONGMEMEVAL_FILE = UpstreamFile(
    "xiaowu0162/LongMemEval",
    LONGMEMEVAL_COMMIT,
    "src/evaluation/evaluate_qa.py",
    LONGMEMEVAL_UPSTREAM.scorer["src/evaluation/evaluate_qa.py"],
)
BEAM_PROMPTS_FILE = UpstreamFile(
    "mohammadtavakoli78/BEAM",
    BEAM_COMMIT,
    "src/prompts.py",
    "2f630cc983ab0c34cfa80b1b4d340f5b51a9b4a3baa5af8aea9503c585eda06a",
)
BEAM_METRICS_FILE = UpstreamFile(
    "mohammadtavakoli78/BEAM",
    BEAM_COMMIT,
    "src/evaluation/compute_metrics.py",
    "0715226375e9d24646c49c504194ba61cfb26d39415da5ebe9bdc4c6dcd3726c",
)
LOCOMO_FILE = UpstreamFile(
    "snap-research/locomo",
    LOCOMO_COMMIT,
    "task_eval/evaluate_gpts.py",
    "e878692fd25919c4069b87ee5c2c5c24d8916e97c55b00500e9bf8b467c065a0",
)
LOCOMO_PLUS_PROMPTS_FILE = UpstreamFile(
    "xjtuleeyf/Locomo-Plus",
    LOCOMO_PLUS_COMMIT,
    "evaluation_framework/task_eval/prompt.py",
    "e43e3ee7115a30938e727fe0eab16694186c08e3f9619f9d8dd5e603d96fc2b1",
)
LOCOMO_PLUS_UTILS_FILE = UpstreamFile(
    "xjtuleeyf/Locomo-Plus",
    LOCOMO_PLUS_COMMIT,
    "evaluation_framework/task_eval/utils.py",
    "55fb916e46ac10a521670f96594abd117dfc63b1342ca67e81a2fab6780233a5",
)
MAB_LONGMEM_FILE = UpstreamFile(
    "HUST-AI-HYZ/MemoryAgentBench",
    MAB_COMMIT,
    "llm_based_eval/longmem_qa_evaluate.py",
    "ceca59bddea4203a78b417be635e63fe3f685bd957e3df12150978e21972c540",
)
#: the agents' prompts: SYSTEM_MESSAGE and BASE_TEMPLATES[dataset]['query'][agent]
MAB_TEMPLATES_FILE = UpstreamFile(
    "HUST-AI-HYZ/MemoryAgentBench",
    MAB_COMMIT,
    "utils/templates.py",
    "148c40d48d19f155ae845482c4417ba59cfa7ae4e194019509e023bd3a8755dd",
)
#: BASE_TEMPLATES' datasets (the values of its DATASET_MAPPING), in its order
MAB_QUERY_DATASETS: tuple[str, ...] = (
    "ruler_qa",
    "longmemeval",
    "eventqa",
    "in_context_learning",
    "recsys_redial",
    "infbench_sum",
    "detective_qa",
    "factconsolidation",
)
#: the agent whose query templates our answerer sends: a retrieval (RAG) agent, as every
#: --memsys system is one (retrieved memories, then the query)
MAB_AGENT = "rag_agent"
#: the ∞Bench-Sum judge: fluency_prompt_book, recall_prompt_book, precision_prompt_book
MAB_SUMMARY_FILE = UpstreamFile(
    "HUST-AI-HYZ/MemoryAgentBench",
    MAB_COMMIT,
    "llm_based_eval/summarization_evaluate.py",
    "6951d19644cdb1972bcf6cdb272f4757aa995ae07099bf74012925158c376dd4",
)
#: HaluMem's four judge prompts (module constants EVALUATION_PROMPT_FOR_*)
HALUMEM_TOOLS_FILE = UpstreamFile(
    "MemTensor/HaluMem",
    HALUMEM_COMMIT,
    "eval/eval_tools.py",
    HALUMEM_UPSTREAM.scorer["eval/eval_tools.py"],
)
#: LongMemEval-V2's judge prompts (module constants) and its message builders (f-strings)
LME2_METRICS_FILE = UpstreamFile(
    "xiaowu0162/LongMemEval-V2",
    LME2_COMMIT,
    "evaluation/qa_eval_metrics.py",
    LME2_UPSTREAM.scorer["evaluation/qa_eval_metrics.py"],
)
#: LongMemEval-V2's reader request: DOMAIN_SYSTEM_PROMPTS (the system message per domain)
LME2_HARNESS_FILE = UpstreamFile(
    "xiaowu0162/LongMemEval-V2",
    LME2_COMMIT,
    "evaluation/harness.py",
    "8c6d1bd124ce2caf8a4bdc8516ef1b54ffca98ea4c49b4e50355ee4207b55eb1",
)
#: the judge's code path (reply parsing, label scores): reproduced in protocols/_judges.py, pinned
#: here for the record (its sha256 is in the provenance notes; no text is read from it)
LOCOMO_PLUS_JUDGE_FILE = UpstreamFile(
    "xjtuleeyf/Locomo-Plus",
    LOCOMO_PLUS_COMMIT,
    "evaluation_framework/task_eval/llm_as_judge.py",
    LOCOMO_PLUS_UPSTREAM.scorer["evaluation_framework/task_eval/llm_as_judge.py"],
)
#: PROMPT_TEMPLATES keys: upstream's category names (LoCoMo 1-5, then Cognitive) and "default"
LOCOMO_PLUS_TEMPLATE_KEYS: tuple[str, ...] = (
    "multi-hop",
    "single-hop",
    "temporal",
    "common-sense",
    "adversarial",
    "Cognitive",
    "default",
)


@dataclass(frozen=True)
class RequestShape:
    """The parameters of one upstream call (``max_tokens=None``: none sent; ``n=None``: no ``n``
    field; ``max_tokens_field``: the field upstream sends the limit in, ``None`` for the provider's
    default; ``stream=False``: an explicit ``"stream": false``, as LangChain sends it;
    ``temperature=None``: no temperature sent; ``reasoning_effort``: sent as that field)."""

    model: str
    temperature: float | None = 0.0
    max_tokens: int | None = None
    json_mode: bool = False
    n: int | None = None
    max_tokens_field: str | None = None
    stream: bool | None = None
    reasoning_effort: str | None = None
    #: more body fields as upstream sends them (``top_p``, ``seed``, ``"stop": null``)
    extra: tuple[tuple[str, float | int | None], ...] = ()

    def options(self) -> dict[str, Any]:
        """The keywords of ``LLMClient.complete`` beyond temperature and max tokens, each only
        when this request sends it (clients written before an option existed keep working)."""
        out: dict[str, Any] = {}
        if self.json_mode:
            out["json_mode"] = True
        for name in ("n", "max_tokens_field", "stream", "reasoning_effort"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.extra:
            out["extra"] = self.extra
        return out


def _shape(shape: RequestShape | None) -> dict[str, Any] | None:
    """A request shape as provenance; ``reasoning_effort`` only when one is sent (the provenance
    of the protocols that send none stays as it was)."""
    if shape is None:
        return None
    return {k: v for k, v in vars(shape).items() if k != "reasoning_effort" or v is not None}


@dataclass(frozen=True)
class ProtocolProfile:
    """One official protocol. ``prompts`` maps our prompt key to (file, where in it)."""

    name: str
    benchmarks: tuple[str, ...]  # the benchmarks it applies to
    repo: str
    commit: str
    judge_style: str  # the judge style (and metric family) it produces
    #: the headline metric key written by its judge (the official judge reads it from here:
    #: one source for the name; docs/scoring.md#metric-names)
    metric: str
    judge: RequestShape | None
    prompts: dict[str, tuple[UpstreamFile, StringRef]] = field(default_factory=dict)
    fill: str = "format-keywords"  # how the judge prompt is filled
    roles: str = "one user message"
    parsing: str = ""
    unscored: str = "counted as 0"  # how a reply that cannot be read counts in the means
    truncation: str = "none"
    aggregation: str = ""
    judged_categories: str = "all"
    skip_categories: tuple[int, ...] = ()  # LoCoMo category ids not judged
    alignment: RequestShape | None = None  # BEAM event ordering: the equivalence calls
    #: MemoryAgentBench's ∞Bench-Sum judge calls (fluency, recall, precision)
    summary: RequestShape | None = None
    #: the answer call our LLM answerer sends under this protocol (prompt key ``answer``);
    #: None: the protocol's answer prompt is pinned and hashed but our answerer's prompt is sent
    answer: RequestShape | None = None
    notes: tuple[str, ...] = ()

    @property
    def files(self) -> list[UpstreamFile]:
        seen: list[UpstreamFile] = []
        for file, _ in self.prompts.values():
            if file not in seen:
                seen.append(file)
        return seen

    def describe(self) -> dict[str, object]:
        """The profile as provenance (no prompt text)."""
        return {
            "name": self.name,
            "repo": self.repo,
            "commit": self.commit,
            "judge_style": self.judge_style,
            "metric": self.metric,
            "judge_request": _shape(self.judge),
            "fill": self.fill,
            "roles": self.roles,
            "parsing": self.parsing,
            "unscored": self.unscored,
            "truncation": self.truncation,
            "aggregation": self.aggregation,
            "judged_categories": self.judged_categories,
            "answer_request": _shape(self.answer),
        }


MEM0 = ProtocolProfile(
    name="mem0",
    benchmarks=("locomo", "demo"),
    repo="mem0ai/mem0",
    commit=MEM0_COMMIT,
    judge_style="mem0-official",
    metric="judge_mem0_official",
    judge=RequestShape("gpt-4o-mini", temperature=0.0, max_tokens=None, json_mode=True),
    prompts={
        "judge": (MEM0_JUDGE_FILE, StringRef("constant", "ACCURACY_PROMPT")),
        "answer": (MEM0_PROMPTS_FILE, StringRef("constant", "ANSWER_PROMPT")),
    },
    fill="format-keywords (question, gold_answer, generated_answer)",
    parsing="extract_json (fence, else first '{' to last '}') -> json.loads -> ['label'] == "
    "'CORRECT' (case-sensitive)",
    unscored="counted as 0 (upstream raises on a reply without a JSON label; J is the share "
    "of CORRECT labels)",
    aggregation="J = mean of 0/1 labels, micro over questions, per category and overall",
    judged_categories="LoCoMo categories 1-4 (category 5 is never judged)",
    skip_categories=(5,),
    # evaluation/src/memzero/search.py, MemorySearch.answer_question: one system message,
    # temperature 0.0, no max_tokens (the model is the MODEL variable; the paper's gpt-4o-mini)
    answer=RequestShape("gpt-4o-mini", temperature=0.0, max_tokens=None),
)

_LME_REF = "get_anscheck_prompt"
LONGMEMEVAL = ProtocolProfile(
    name="longmemeval",
    benchmarks=("longmemeval",),
    repo="xiaowu0162/LongMemEval",
    commit=LONGMEMEVAL_COMMIT,
    judge_style="longmemeval-official",
    metric="judge_lme_official",
    # upstream sends the integer 0 (JSON `0`, not `0.0`)
    judge=RequestShape(
        "gpt-4o-2024-08-06", temperature=0, max_tokens=10, n=1, max_tokens_field="max_tokens"
    ),
    prompts={
        rule: (LONGMEMEVAL_FILE, StringRef("local", "template", _LME_REF, i, expect_count=5))
        for i, rule in enumerate(
            ("standard", "temporal", "knowledge-update", "preference", "abstention")
        )
    },
    fill="format-positional (question, answer, response)",
    parsing="'yes' in reply.strip().lower()",
    unscored="impossible: every reply is a label (no 'yes' -> 0)",
    aggregation="per-type accuracy, task-averaged (mean of the six types), overall (micro), "
    "abstention accuracy (ids with '_abs')",
)

BEAM = ProtocolProfile(
    name="beam",
    benchmarks=("beam",),
    repo="mohammadtavakoli78/BEAM",
    commit=BEAM_COMMIT,
    judge_style="beam-official",
    metric="nugget_official",
    # LangChain's ChatOpenAI(temperature=0).invoke(...): model, messages, temperature, stream
    # false; no n, no max tokens (docs/scoring.md#beam-official-protocol)
    # LangChain's ChatOpenAI (BEAM's pins) sends model, messages, temperature and stream=false
    judge=RequestShape("gpt-4.1-mini", temperature=0.0, max_tokens=None, stream=False),
    prompts={
        "judge": (BEAM_PROMPTS_FILE, StringRef("constant", "unified_llm_judge_base_prompt")),
        "fact_extraction": (
            BEAM_PROMPTS_FILE,
            StringRef("constant", "break_paragraph_to_facts_detailed_prompt"),
        ),
        "equivalence_system": (
            BEAM_METRICS_FILE,
            StringRef("message", "system_msg", "llm_equivalence"),
        ),
        "equivalence_user": (
            BEAM_METRICS_FILE,
            StringRef("message", "user_msg", "llm_equivalence"),
        ),
    },
    fill="literal replace of <rubric_item> and <llm_response>; <question> stays unfilled "
    "(fact extraction: <question>, then <input_text>)",
    roles="one user message (judge, fact extraction); system + user (equivalence)",
    parsing="BEAM's parse_json_response (fenced JSON, json.loads, first non-greedy {...} "
    "span); on any exception json.loads(json_repair.repair_json(reply)); score read with "
    "int() (float() for event ordering)",
    unscored="counted as 0 with a warning where BEAM's evaluation would abort: json_repair "
    "finds no JSON (json.loads raises), the reply is not an object with a 'score', or int()/"
    "float() cannot read the score",
    truncation="int(score): 0.5 -> 0 for every category except event_ordering",
    aggregation="per conversation: category = mean over its questions of llm_judge_score "
    "(event_ordering: tau_norm after LLM alignment); category value = mean over "
    "conversations; overall = mean of the category values (report_results.py has no "
    "overall; BEAM's README defines none)",
    alignment=RequestShape("gpt-4.1-mini", temperature=0.0, max_tokens=None, stream=False),
    notes=(
        "event ordering sends BEAM's fact-extraction call first (its reply is unused, as "
        "upstream discards it), then the equivalence calls, then the rubric calls",
    ),
)

LOCOMO = ProtocolProfile(
    name="locomo",
    benchmarks=("locomo", "demo"),
    repo="snap-research/locomo",
    commit=LOCOMO_COMMIT,
    judge_style="none",
    metric="f1",
    judge=None,
    prompts={
        "answer": (LOCOMO_FILE, StringRef("constant", "QA_PROMPT")),
        "answer_cat5": (LOCOMO_FILE, StringRef("constant", "QA_PROMPT_CAT_5")),
        "conversation_start": (LOCOMO_FILE, StringRef("constant", "CONV_START_PROMPT")),
    },
    fill="format-positional",
    parsing="no judge: official LoCoMo F1 per category (cat 5 keyword rule)",
    unscored="not applicable",
    aggregation="per-question F1 rounded to 3 dp, micro mean; overall_all includes category 5",
)

LOCOMO_PLUS = ProtocolProfile(
    name="locomo-plus",
    benchmarks=("locomo-plus", "locomo"),
    repo="xjtuleeyf/Locomo-Plus",
    commit=LOCOMO_PLUS_COMMIT,
    judge_style="locomo-plus-official",
    metric="judge_locomo_plus_official",
    # llm_as_judge.py defaults (judge.sh passes only the model): call_llm sends model, one user
    # message, temperature=float(0.0), max_tokens=int(512)
    judge=RequestShape(
        "gpt-4o-mini", temperature=0.0, max_tokens=512, max_tokens_field="max_tokens"
    ),
    prompts={
        **{
            key: (LOCOMO_PLUS_PROMPTS_FILE, StringRef("entry", "PROMPT_TEMPLATES", key=key))
            for key in LOCOMO_PLUS_TEMPLATE_KEYS
        },
        "conversation_start": (LOCOMO_PLUS_UTILS_FILE, StringRef("constant", "CONV_START_PROMPT")),
    },
    fill="PROMPT_TEMPLATES[category] (else ['default']).format(gold=, pred=, evidence=), then "
    "CONV_START_PROMPT.format('A', 'B') + prompt.strip() (utils._prepend_conv_prefix)",
    parsing='llm_as_judge._parse_judge_response: regex {.."label": .."reason": ..}, else '
    "json.loads(reply)['label']; on any exception the first of 'correct', 'wrong', 'partial' "
    "found in the lower-cased reply",
    unscored="counted as 0 (label_to_score: any label other than correct / partial / wrong)",
    aggregation="correct = 1, partial = 0.5, wrong = 0; mean per category and overall (micro)",
    judged_categories="all (LoCoMo 1-5 by upstream's names, Cognitive)",
    notes=(
        f"llm_as_judge.py sha256 {LOCOMO_PLUS_JUDGE_FILE.sha256} (its parsing and scoring are "
        "reproduced; checked against the file in tests/unit/benchmarks/test_locomo_plus.py)",
        "upstream turns an API error into the reply text '[API Error: ...]'; here a failed call "
        "is retried, then the question is UNSCORED",
    ),
)

MEMORYAGENTBENCH = ProtocolProfile(
    name="memoryagentbench",
    benchmarks=("memoryagentbench",),
    repo="HUST-AI-HYZ/MemoryAgentBench",
    commit=MAB_COMMIT,
    judge_style="memoryagentbench-official",
    metric="judge_mab_official",
    # llm_based_eval/longmem_qa_evaluate.py: metric_model "gpt-4o", one user message, n=1,
    # temperature=0 (the integer), max_tokens=10
    judge=RequestShape("gpt-4o", temperature=0, max_tokens=10, n=1, max_tokens_field="max_tokens"),
    prompts={
        **{
            rule: (MAB_LONGMEM_FILE, StringRef("local", "template", _LME_REF, i, expect_count=5))
            for i, rule in enumerate(
                ("standard", "temporal", "knowledge-update", "preference", "abstention")
            )
        },
        # the ∞Bench-Sum judge (docs/scoring.md#memoryagentbench-judge)
        **{
            f"sum_{part}": (MAB_SUMMARY_FILE, StringRef("constant", f"{part}_prompt_book"))
            for part in ("fluency", "recall", "precision")
        },
        # the LLM answerer's request (docs/scoring.md#memoryagentbench-answer-prompt)
        "answer_system": (MAB_TEMPLATES_FILE, StringRef("constant", "SYSTEM_MESSAGE")),
        **{
            f"answer_query:{ds}": (
                MAB_TEMPLATES_FILE,
                StringRef("entry", "BASE_TEMPLATES", key=(ds, "query", MAB_AGENT)),
            )
            for ds in MAB_QUERY_DATASETS
        },
    },
    fill="format-positional (question, answer, response); the answer as upstream's record holds "
    "it (a list is formatted as Python formats it)",
    parsing="'yes' in reply.strip().lower()",
    unscored="impossible: every reply is a label (no 'yes' -> 0)",
    aggregation="accuracy per question type and overall (micro), per sub-dataset",
    judged_categories="questions whose metadata.source names longmemeval (longmem_qa_evaluate.py) "
    "or infbench_sum (summarization_evaluate.py); the others keep their offline scores",
    # summarization_evaluate.py: OpenAIModel("gpt-4o-2024-05-13", temperature=0.1,
    # generation_max_length=4096), top_p 0.9, stop None, seed 42, one user message (no system)
    summary=RequestShape(
        "gpt-4o-2024-05-13",
        temperature=0.1,
        max_tokens=4096,
        max_tokens_field="max_tokens",
        extra=(("top_p", 0.9), ("stop", None), ("seed", 42)),
    ),
)

HALUMEM = ProtocolProfile(
    name="halumem",
    benchmarks=("halumem",),
    repo="MemTensor/HaluMem",
    commit=HALUMEM_COMMIT,
    judge_style="halumem-official",
    metric="judge_halumem_official",
    # eval/llms.py llm_request_for_json with eval/.env-example: OPENAI_MODEL=gpt-4o,
    # OPENAI_TEMPERATURE=0.0, OPENAI_MAX_TOKENS=16384; one user message
    judge=RequestShape("gpt-4o", temperature=0.0, max_tokens=16384, max_tokens_field="max_tokens"),
    prompts={
        key: (HALUMEM_TOOLS_FILE, StringRef("constant", f"EVALUATION_PROMPT_FOR_{name}"))
        for key, name in (
            ("question", "QUESTION"),
            ("integrity", "MEMORY_INTEGRITY"),
            ("accuracy", "MEMORY_ACCURACY"),
            ("update", "UPDATE_MEMORY"),
        )
    },
    fill="format-keywords as eval_tools.evaluation_for_*: QA (question, reference_answer, "
    "key_memory_points = the evidence memory points joined by newlines, response); integrity "
    "(memories = a session's stored memories joined by newlines, expected_memory_point); "
    "accuracy (dialogue, golden_memories, candidate_memory); update (memories, updated_memory, "
    "original_memory)",
    parsing="the first ```json {...}``` block of the reply (upstream's regex); QA and update: "
    "evaluation_result (QA: Correct = 1, Hallucination / Omission = 0); integrity: "
    "int(score); accuracy: int(accuracy_score) and is_included_in_golden_memories",
    unscored="QA: counted as 0 (upstream's (all) ratios count an unreadable reply in the "
    "denominator); storage: a None score / label, as upstream records it; a system without "
    "dump(): storage figures UNSCORED",
    aggregation="correct_qa_ratio(all) = the mean over questions; the run's figures are "
    "aggregate_eval_results over every judged record (summary.halumem_official)",
    judged_categories="all (QA); extraction and update once per conversation, on the first "
    "question of it the run asks (docs/scoring.md#halumem-storage-judgments)",
)

LONGMEMEVAL_V2 = ProtocolProfile(
    name="longmemeval-v2",
    benchmarks=("longmemeval-v2",),
    repo="xiaowu0162/LongMemEval-V2",
    commit=LME2_COMMIT,
    judge_style="longmemeval-v2-official",
    metric="judge_lme2_official",
    # evaluation/harness.py make_eval_config (defaults: --evaluator-reasoning-effort medium,
    # --evaluator-max-completion-tokens 4096) -> qa_eval_metrics._call_chat_completion: model,
    # messages, max_completion_tokens, reasoning_effort; no temperature, no top_p. The model:
    # README.md "Set for LLM judge (default `gpt-5.2` with `medium` reasoning)"
    judge=RequestShape(
        "gpt-5.2",
        temperature=None,
        max_tokens=4096,
        max_tokens_field="max_completion_tokens",
        reasoning_effort="medium",
    ),
    prompts={
        f"{kind}_{part}": (LME2_METRICS_FILE, ref)
        for kind, upper in (("abstention", "ABSTENTION"), ("gotchas", "GOTCHAS"))
        for part, ref in (
            ("system", StringRef("constant", f"_{upper}_JUDGE_SYSTEM_PROMPT")),
            ("user", StringRef("f-local", "user_prompt", f"_build_{kind}_judge_messages")),
        )
    }
    | {
        f"answer_system:{domain}": (
            LME2_HARNESS_FILE,
            StringRef("entry", "DOMAIN_SYSTEM_PROMPTS", key=domain),
        )
        for domain in ("web", "enterprise")
    },
    fill="system message: the constant; user message: the f-string of "
    "_build_<kind>_judge_messages (question_text, reference_answer, model_full_response, "
    "model_final_answer = the boxed answer, else the reply)",
    roles="system + user",
    parsing="_parse_llm_binary_judgement: code fence stripped; the first-'{'-to-last-'}' span "
    "as JSON, its 'label' in {0, 1, '0', '1'}; else the regexes \"label\": d, 'label': d, "
    "label[:=]d; label 1 -> correct",
    unscored="counted as 0 with a warning where upstream raises (no label found; the harness "
    "would abort)",
    aggregation="accuracy = mean of score_bool over questions (an UNKNOWN boxed answer is 0), "
    "per question type and overall; the offline eval functions score without a request",
    judged_categories="llm_abstention_checker and llm_gotchas_checker questions are sent to the "
    "judge; the other questions get their offline verdict under the same metric",
    notes=(
        "an UNKNOWN boxed answer is 0 without a request (upstream sends it and discards the "
        "verdict); require_non_empty (default true) scores an empty reply or answer 0 without "
        "a request, as upstream's checker does",
        "the LLM answerer sends harness.py's reader request: DOMAIN_SYSTEM_PROMPTS[domain] as "
        "upstream's bytes (its non-raw '\\boxed{}' is a backspace U+0008 then 'oxed{}'), "
        "then '### Memory context:' + memories + '### Question to answer:'",
    ),
)

#: the labelled variant of LONGMEMEVAL_V2 whose reader system prompt says ``\boxed{}`` where
#: upstream's text holds a backspace (U+0008) and ``oxed{}``; everything else is the same
LME2_CORRECTED = "longmemeval-v2-corrected"
LONGMEMEVAL_V2_CORRECTED = replace(
    LONGMEMEVAL_V2,
    name=LME2_CORRECTED,
    notes=(
        *LONGMEMEVAL_V2.notes[:1],
        "CORRECTED VARIANT, not upstream's bytes: the reader system prompt's backspace + "
        "'oxed{}' (upstream's non-raw '\\boxed{}' in DOMAIN_SYSTEM_PROMPTS) is sent as "
        "'\\boxed{}'; the rest is the longmemeval-v2 protocol, whose published figures are "
        "therefore only a reference for this run",
    ),
)
#: the protocols that send LongMemEval-V2's reader request and judge it
LME2_PROTOCOLS = ("longmemeval-v2", LME2_CORRECTED)

PROFILES: dict[str, ProtocolProfile] = {
    p.name: p
    for p in (
        MEM0,
        LONGMEMEVAL,
        BEAM,
        LOCOMO,
        LOCOMO_PLUS,
        MEMORYAGENTBENCH,
        HALUMEM,
        LONGMEMEVAL_V2,
        LONGMEMEVAL_V2_CORRECTED,
    )
}


def get_profile(name: str) -> ProtocolProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r}; available: {', '.join(PROFILES)}") from None
