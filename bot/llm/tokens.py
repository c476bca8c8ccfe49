"""The one token estimate: cheap, model-independent, used wherever a size must be known before
(or without) asking a model (the Bot's context budget, the scripted model's usage)."""

from __future__ import annotations

import re

# Counted by the regex engine, not a Python loop over characters: the Bot estimates its whole
# prompt every turn, and the loop was a millisecond of it.
_CJK = re.compile("[\u3000-\u9fff\uf900-\ufaff]")


def estimate_tokens(*texts: str) -> int:
    """CJK characters count one token each, other text about four characters a token
    (rounded up); several texts count as one text made of them all; 0 for no text."""
    cjk = chars = 0
    for text in texts:
        chars += len(text)
        cjk += len(_CJK.findall(text))
    return cjk + (chars - cjk + 3) // 4
