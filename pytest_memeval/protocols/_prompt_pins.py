"""The sha256 of every prompt each official protocol reads (``Template.sha256``: the text with
each f-string field written ``{name}``), measured from the pinned upstream files at their commits
(each file's sha256 equal to its pin in ``profiles.py``). A run records the same digests in
``provenance.protocol.prompt_sha256``; the protocol cards (``report/cards.py``) list them.
``tests/unit/report/test_protocol_cards.py`` recomputes them from the upstream snapshots when they are
present (the ``fetch`` mirrors), as the other upstream checks do.

For ``longmemeval-v2-corrected`` the digests are of upstream's text, as for ``longmemeval-v2``
(the provenance records those); the reader system prompt it sends has the backspace corrected.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["PROMPT_SHA256"]

#: profile name -> prompt key -> sha256
PROMPT_SHA256: Mapping[str, Mapping[str, str]] = {
    "mem0": {
        "judge": "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0",
        "answer": "f3c786104816bba61d03b7f41c2be45009e6c8c296a04d9712ab1a59e4ae2399",
    },
    "longmemeval": {
        "standard": "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
        "temporal": "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
        "knowledge-update": "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
        "preference": "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
        "abstention": "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
    },
    "beam": {
        "judge": "d349c9a8559bed9c14bfe2e624212225b09218ff864258a739229c15f4c8e869",
        "fact_extraction": "04ab9a64f08674efdac63649059daf27fd499c2e455eaf57641553fd7aae2276",
        "equivalence_system": "0863c78c1b27d36c97bb7bfd2d4d6b88ef69b093e92bb4719e665527722413e2",
        "equivalence_user": "6bf789b815decbeb1c27f5058e2416c2a6e167724c0433b1da27b0abe5cc73df",
    },
    "locomo": {
        "answer": "a30fe18a6c9b58c5d22b6188860e5a99cdfef33fcc8a36141b571d954b9b0266",
        "answer_cat5": "57005b715f4c2a7c848ab0d7829037afd08d5bb68ba626e4f5a83e8493104986",
        "conversation_start": "68e12aada9c2b0308cf3c92cc50565391d9a408f953413565a573bb15ff0a4d8",
    },
    "locomo-plus": {
        "multi-hop": "6eba7bc55145d57a06c90fb96a9daf7965b68dbb480b975d2b1583b59124741a",
        "single-hop": "e0cc6dfb7fb33aeafeed27e6db214eff15278738298384817479f09f5f5997d4",
        "temporal": "f951d90c7a759c12eff5ceeb963129c2be79b529209b9fb2ddcfbafb2a40aa3d",
        "common-sense": "3147a06f69f3229233ecb367249c42afe6485d45c18957c6d2286a2eb28ea904",
        "adversarial": "2a73bc69e8051121a6332c3fb14605574bacc3cb58173fdd72b5803f4bd40a69",
        "Cognitive": "83875348ab831a4f2932457bc951d37654db9f77ecaf50e7a8aacf5ff566a08b",
        "default": "117bbafb8c4d388e5fe814a098851c361087497b515331b457e144bf1cffe9f9",
        "conversation_start": "bfb101603e38a36cfecfb7e989ae51d537907ad7ac0b89020e2b7c01046d3cb7",
    },
    "memoryagentbench": {
        "standard": "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
        "temporal": "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
        "knowledge-update": "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
        "preference": "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
        "abstention": "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
        "sum_fluency": "1cdd25fa4ef5982bbd528c1ff37fcedc5aeb79167ad1359d0cae5afab293bc82",
        "sum_recall": "2716154035020275c959dece28b02b8f098b9c1384d520d2e3efd1479169625e",
        "sum_precision": "98f9964803fa36d0fe75169ea2d90cd3f9dc6ff0e79302941bdc3c8c3ea782dc",
        "answer_system": "fbb5a811635de72d10075fa9ef51c69e6e33b8ea4ed5fbfd193526910de6a2a5",
        "answer_query:ruler_qa": "46f7f31ef737c1701fce751ed63b5ad462f4d20c9d9e54f358cf9e6b0457c969",
        "answer_query:longmemeval": "bcbe42686f5a73c44a61e55964a932d42657201af7631049381fd6d11f649d4c",
        "answer_query:eventqa": "c86b0dc5db229403976a20bcef1cc626ddc922569955a9d17c420171698ecb49",
        "answer_query:in_context_learning": "e9df61cd16b5e95d08fe93b1bde82f2665b68ecff0bc6463fb43f69e3c570262",
        "answer_query:recsys_redial": "96e3f5bae8307491abb3a85e0ddbebbd89a5d10d642f8721aa0433eb3203be5e",
        "answer_query:infbench_sum": "fd981201c18b0b40a3d9a5f4931bfb72c56b773970322d8706e070103966a335",
        "answer_query:detective_qa": "0117e352348af57cf8dd30a31286bfae1cd9f360a04d3d88eb5f6a041145a387",
        "answer_query:factconsolidation": "ca4ea130355adab357ce8cd00bb11c1cdbe7cb945454764a66f1ac7f692f501d",
    },
    "halumem": {
        "question": "95e3648135b580ff0a266b65fb025e68c16a6900d587113e60a3d02a361feadf",
        "integrity": "ff25d77b5ed119180e9604c6717a12140476e79cfaf15ed18dc2cf2ef5595ceb",
        "accuracy": "6d213f20db1eac7d2f6837b6b1801de2dcc5b9d242abc6128773e871c563986e",
        "update": "76f3ed47ec8194d4558a562b7dcd99f7d4c0611acd7cb5c908864655825c6fb3",
    },
    "longmemeval-v2": {
        "abstention_system": "4d82ebe1899a0f9c895346a7aba5ccbc0c57e42ae3813b5dfe94cf3eed6763ac",
        "abstention_user": "c4ed1bf276e03daaca22be020c1a829917efafbed7f3de9b1bb569ff161f4dcb",
        "gotchas_system": "c306af72e8e12f87250c42f19cd5670505e54c2590970d3b75ce3be1b5ae8f9a",
        "gotchas_user": "473af72e9b85c8fc96c0cfc93e2bdb6e756514e51335609b64826b183251b215",
        "answer_system:web": "c70772c5f4ab1dbdcee28218d5e2b98595a84d64196012cbd00bb9de9e63fd1f",
        "answer_system:enterprise": "b2d24d41b022824ddea06b61255ead1a9aceae79e4f1658775fddd6d6e66320e",
    },
    "longmemeval-v2-corrected": {
        "abstention_system": "4d82ebe1899a0f9c895346a7aba5ccbc0c57e42ae3813b5dfe94cf3eed6763ac",
        "abstention_user": "c4ed1bf276e03daaca22be020c1a829917efafbed7f3de9b1bb569ff161f4dcb",
        "gotchas_system": "c306af72e8e12f87250c42f19cd5670505e54c2590970d3b75ce3be1b5ae8f9a",
        "gotchas_user": "473af72e9b85c8fc96c0cfc93e2bdb6e756514e51335609b64826b183251b215",
        "answer_system:web": "c70772c5f4ab1dbdcee28218d5e2b98595a84d64196012cbd00bb9de9e63fd1f",
        "answer_system:enterprise": "b2d24d41b022824ddea06b61255ead1a9aceae79e4f1658775fddd6d6e66320e",
    },
}
