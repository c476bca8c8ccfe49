"""When a Bot turn fails: its batch is counted against, backed off and, in the end, parked.

A turn that raises (a bug in a command, a tool or the turn itself, an input no parser
expected) leaves its batch undelivered. Before this, the conversation was ready again at once
and the same input failed again, as fast as the process could go, while every later message in
that chat waited behind it. Now each item of the batch counts the failure and is not tried
again for a while (`backoff`, growing), and then on its own: a good message batched with a
bad one is answered on its retry. Meanwhile later input in the chat is answered as usual.
After `MAKA_BOT_MAX_ATTEMPTS` failures the item is parked: kept, with its error, for /status
and the status page; the chat is told in one line that its message could not be handled, and
the owner (in their DM) which message and why. The state is in the database, so a restart
brings no loop back.

A failure that was the database's (the turn's connection died with the server, or the
database does not answer a ping now) is no fault of the input: it is backed off the same way
but not counted, so an outage or a restart of PostgreSQL parks no one's message.
"""

from __future__ import annotations

import logging
from datetime import timedelta, tzinfo

from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant import receipt
from bot.assistant.visibility import owner_identity
from bot.host.backoff import backoff, error_line, log_failure, one_line
from bot.services import Services
from storage.db import lost_connection
from storage.models import Conversation
from storage.repos import conversations, inbox, outbox
from storage.types import utcnow

log = logging.getLogger(__name__)

RETRY_FIRST, RETRY_MOST = 2.0, 300.0  # seconds before an item that failed is tried again
PING_DEADLINE = 3.0  # seconds the database gets to answer, to tell an outage from a bug
PARKED_REPLY = (
    "Sorry, I could not handle this message (it failed {attempts} times), so I have set it "
    "aside; your next messages are answered as usual."
)
PARKED_NOTICE = (
    "A message in {chat} could not be handled after {attempts} tries and is parked "
    "(inbox item {item_id}, /status lists it): {error}{quote}"
)
QUOTE_CHARS = 120


class TurnFailed(Exception):
    """A turn raised after it read its batch: the items it had (the cause is `__cause__`)."""

    def __init__(self, item_ids: list[int]) -> None:
        super().__init__(f"the turn over inbox items {item_ids} failed")
        self.item_ids = item_ids


def retry_in(attempts: int) -> timedelta:
    return timedelta(seconds=backoff(attempts, first=RETRY_FIRST, most=RETRY_MOST))


async def record_failed_turn(services: Services, conversation_id: int, exc: Exception) -> None:
    """Count the failure against the batch the turn had (or, failing before it read one, the
    batch it would have had), back it off or park it, and tell whom a parked item concerns.
    Raises when the database cannot record it (the Host then backs the worker off)."""
    cause = exc.__cause__ if isinstance(exc, TurnFailed) and exc.__cause__ else exc
    error = error_line(cause)
    outage = lost_connection(cause) or await services.db.problem(PING_DEADLINE)
    now = utcnow()
    async with services.db.write() as tx:
        if isinstance(exc, TurnFailed):
            item_ids = exc.item_ids
        else:
            waiting = await inbox.pending_for_conversation(tx, conversation_id, now=now)
            item_ids = [item.id for item in waiting]
        failed = await inbox.record_failures(
            tx,
            item_ids,
            error=error,
            now=now,
            retry_in=retry_in,
            park_after=services.settings.bot_max_attempts,
            counted=outage is None,
        )
        marks = await receipt.after_failure(tx, services.settings, failed, counted=outage is None)
        await outbox.enqueue_all(tx, marks, now)  # before the parked line, in each chat's lane
        parked = [item for item in failed if item.parked]
        for item in parked:
            await _tell(tx, services, item, error)
    fates = ", ".join(
        f"item {item.id} parked"
        if item.parked
        else f"item {item.id} tried again in {retry_in(item.attempts).total_seconds():g}s"
        for item in failed
    )
    blame = f"; the database's ({outage}), not counted" if outage else ""
    log_failure(log, f"bot turn in conversation {conversation_id} failed ({fates}{blame})", cause)
    if parked or marks:
        services.notifier.wake_local(outbox.OUTBOX_TOPIC)


async def _tell(tx: AsyncSession, services: Services, item: inbox.Failed, error: str) -> None:
    """The chat's one line (for a person's message) and the owner's notice, each written once
    (idempotency keys of the item), through the outbox like any reply."""
    conv = await tx.get(Conversation, item.conversation_id)
    if conv is None:
        return
    now = utcnow()
    owner = owner_identity(services.settings, conv.platform)
    dm = await conversations.find_dm(tx, conv.platform, owner) if owner else None
    if item.payload.get("message_id") and (dm is None or dm.id != conv.id):
        await outbox.enqueue(
            tx,
            idempotency_key=f"parked-{item.id}",
            platform=conv.platform,
            chat_id=conv.chat_id,
            conversation_id=conv.id,
            content_type="text",
            content={"text": PARKED_REPLY.format(attempts=item.attempts)},
            reply_to=str(item.payload["message_id"]),
            now=now,
        )
    if dm is None:
        return
    text = " ".join(str(item.payload.get("text") or "").split())
    quote = f' (it said "{text[:QUOTE_CHARS]}")' if text else ""
    notice = PARKED_NOTICE.format(
        chat="this chat" if dm.id == conv.id else (conv.name or f"{conv.platform}:{conv.chat_id}"),
        attempts=item.attempts,
        item_id=item.id,
        error=error,
        quote=quote,
    )
    await outbox.enqueue(
        tx,
        idempotency_key=f"parked-owner-{item.id}",
        platform=dm.platform,
        chat_id=dm.chat_id,
        conversation_id=dm.id,
        content_type="text",
        content={"text": notice},
        now=now,
    )


PARKED_SHOWN = 3  # the newest parked items /status lists (the status page lists more)
ERROR_SHOWN = 160  # characters of each one's error


async def parked_lines(tx: AsyncSession, conversation_id: int | None, tz: tzinfo) -> list[str]:
    """/status's lines on parked items (one conversation's, or all): how many, and the
    newest with their errors, cut short; nothing when none is parked."""
    count = await inbox.count_parked(tx, conversation_id)
    if not count:
        return []
    where = "" if conversation_id is None else " in this chat"
    lines = [f"parked{where}: {count} input(s) that failed every try (newest first):"]
    for item in await inbox.parked(tx, PARKED_SHOWN, conversation_id):
        when = item.parked_at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if item.parked_at else ""
        error = one_line(item.last_error or "", ERROR_SHOWN)
        lines.append(f"  item {item.id} ({item.kind}, {when}): {error}")
    return lines
