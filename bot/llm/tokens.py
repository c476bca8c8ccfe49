"""The one token estimate: cheap, model-independent, used wherever a size must be known before
(or without) asking a model (the Bot's context budget, the scripted model's usage)."""

from __future__ import annotations


def _is_cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff"


def estimate_tokens(*texts: str) -> int:
    """CJK characters count one token each, other text about four characters a token
    (rounded up); several texts count as one text made of them all; 0 for no text."""
    cjk = chars = 0
    for text in texts:
        chars += len(text)
        cjk += sum(1 for ch in text if _is_cjk(ch))
    return cjk + (chars - cjk + 3) // 4
