"""The outbox keys of a Bot turn's replies: derived from the turn's key, so a re-run of the
same batch writes no second message, and a turn's replies are found again from its key
alone (discovery's delivery, a redaction), without the outbox's writer."""

from __future__ import annotations

import hashlib

# A turn writes at most one reply per agent step (bot/assistant/turn.py: 10) and one more
# when the model fails; the keys past these are never written.
REPLIES_PER_TURN = 16


def reply_key(turn_key: str, ordinal: int) -> str:
    """The key of a turn's `ordinal`th reply (from 0)."""
    digest = hashlib.sha256(f"{turn_key}:{ordinal}".encode()).hexdigest()
    return f"b{digest[:39]}"
