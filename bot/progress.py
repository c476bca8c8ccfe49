"""Writing a progress card's desired state: the Bot's turns (bot/assistant/progress.py) and
the Matters (bot/matters) call this; the channels' card workers push it
(bot/channels/progress_sender.py). A card is a side show: a write here that fails is logged
and forgotten, never the failure of the turn or Matter that made it.
"""

from __future__ import annotations

import logging

from bot.host.backoff import log_failure
from bot.host.notify import Notifier
from storage.db import Database
from storage.repos import progress_cards
from storage.repos.progress_cards import Desired
from storage.types import utcnow

log = logging.getLogger(__name__)


async def show(db: Database, notifier: Notifier, desired: Desired) -> None:
    """Make the card `desired.key` show `desired` (made on first use)."""
    try:
        async with db.write() as tx:
            due = await progress_cards.show(tx, desired, utcnow())
    except Exception as exc:
        log_failure(log, f"progress card {desired.key}: not written", exc)
        return
    if due:
        notifier.wake_local(progress_cards.PROGRESS_TOPIC)


async def finish(
    db: Database, notifier: Notifier, key: str, status: str, step: str | None = None
) -> None:
    """End the card `key` (if there is one still working) as `status`, `step` its last line."""
    try:
        async with db.write() as tx:
            due = await progress_cards.finish(tx, key, status, utcnow(), step)
    except Exception as exc:
        log_failure(log, f"progress card {key}: not finished", exc)
        return
    if due:
        notifier.wake_local(progress_cards.PROGRESS_TOPIC)
