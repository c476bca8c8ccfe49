"""The first action kinds: `send_message` (now) and `schedule_message` (at a later time), a
text sent as the bot to a chat (its chat id, or a chat the bot knows by name) or a person
(their open_id).

The send goes through the outbox with the action's idempotency key as the outbox key, which
becomes Feishu's `uuid` (https://open.feishu.cn/document/server-docs/im-v1/message/create:
one message per uuid within an hour): a second run of the executor after a crash writes no
second row, and a resend of the row is no second message. "Queued in the outbox" counts as
done: the outbox is itself exactly once and reports a delivery that failed to the owner
(bot/channels/feishu/sender.py). A scheduled message is approved now and queued at its time
by a persisted timer (bot/host/timers.py), keyed by the action too, so it fires once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.actions.ledger import when
from bot.actions.registry import ActionFailed, register_executor
from bot.services import Services
from storage.models import Action, Conversation, Timer
from storage.repos import conversations, outbox
from storage.repos import timers as timer_repo
from storage.types import utcnow

SEND, SCHEDULE = "send_message", "schedule_message"
TIMER_KIND = "scheduled_message"
MAX_TEXT = 4000  # characters: a chat message, not a document (Feishu's text limit is 150 KB)
MAX_AHEAD = timedelta(days=30)
SHOWN = 300  # characters of the text in the plain-words summary


class UnknownTarget(ValueError):
    """`to` names no chat or person the bot can address; the text says what to give."""


async def resolve_target(
    tx: AsyncSession, platform: str, to: str, within: int | None
) -> tuple[str, str]:
    """(the id to send to, a name for people): a chat id (oc_…), an open_id (ou_…), or the
    name of a chat the bot is in (exactly one). `within`: the one conversation the asker
    may see (the visibility rule; None: every one): names are looked up and shown only
    there, so no one learns from the answer which other chats the bot is in."""
    to = to.strip()
    if to.startswith(("oc_", "ou_")):
        known = await conversations.by_chat(tx, platform, to) if to.startswith("oc_") else None
        seen = known is not None and within in (None, known.id)
        name = known.name if seen and known is not None and known.name else None
        return to, f"{name} ({to})" if name else to
    if not to:
        raise UnknownTarget("say who to send it to: a chat's name or id (oc_…), or an open_id")
    rows = (
        await tx.scalars(
            select(Conversation)
            .where(
                Conversation.platform == platform,
                func.lower(Conversation.name) == to.lower().removeprefix("#"),
                *([Conversation.id == within] if within is not None else []),
            )
            .limit(2)
        )
    ).all()
    if len(rows) != 1:
        problem = "no chat" if not rows else "more than one chat"
        raise UnknownTarget(
            f"{problem} named {to!r} that I know; give its chat id (oc_…) or a person's open_id"
        )
    return rows[0].chat_id, f"{rows[0].name} ({rows[0].chat_id})"


def message_params(
    platform: str, to: str, to_name: str, text: str, at: datetime | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"platform": platform, "to": to, "to_name": to_name, "text": text}
    if at is not None:
        params["at"] = at.isoformat()
    return params


def _text(params: dict[str, Any]) -> str:
    text = str(params.get("text") or "")
    if not text.strip():
        raise ValueError("the message is empty")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the message is longer than {MAX_TEXT} characters")
    if not str(params.get("to") or "").startswith(("oc_", "ou_")):
        raise ValueError("the message has no chat or person to go to")
    return text


def _at(params: dict[str, Any]) -> datetime:
    try:
        at = datetime.fromisoformat(str(params.get("at")))
    except ValueError:
        raise ValueError("the time is not an ISO date and time") from None
    if at.tzinfo is None:
        raise ValueError("the time needs its time zone (like 2026-12-07T09:00+08:00)")
    return at


def _quoted(text: str) -> str:
    return f"“{text if len(text) <= SHOWN else text[: SHOWN - 1] + '…'}”"


def describe_send(params: dict[str, Any]) -> str:
    return f"send a message as the bot to {params.get('to_name')}: {_quoted(_text(params))}"


def describe_schedule(params: dict[str, Any]) -> str:
    text, at = _text(params), _at(params)
    now = utcnow()
    if at <= now:
        raise ValueError("the time to send it is past")
    if at - now > MAX_AHEAD:
        raise ValueError(f"the time is more than {MAX_AHEAD.days} days ahead")
    return (
        f"send a message as the bot to {params.get('to_name')} at "
        f"{at.isoformat(timespec='minutes')}: {_quoted(text)}"
    )


async def _queue(tx: AsyncSession, params: dict[str, Any], key: str) -> None:
    platform, to = str(params["platform"]), str(params["to"])
    known = await conversations.by_chat(tx, platform, to)
    await outbox.enqueue(
        tx,
        idempotency_key=key,
        platform=platform,
        chat_id=to,
        content_type="text",
        content={"text": str(params["text"])},
        conversation_id=known.id if known is not None else None,
        now=utcnow(),
    )


async def send_now(services: Services, action: Action, key: str) -> str:
    try:
        _text(action.params)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None
    async with services.db.write() as tx:
        await _queue(tx, action.params, key)
    await services.notifier.notify(outbox.OUTBOX_TOPIC)
    return f"sent to {action.params.get('to_name')} (through the outbox, once: key {key})"


async def send_later(services: Services, action: Action, key: str) -> str:
    try:
        _text(action.params)
        at = _at(action.params)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None
    if at <= utcnow():  # approved after its time (or run again late): it goes now
        return await send_now(services, action, key)
    async with services.db.read() as tx:
        set_before = await timer_repo.get(tx, key)
    if set_before is None:  # a run again after a crash does not move a timer that fired
        await services.timers.schedule(
            kind=TIMER_KIND, key=key, due_at=at, payload={"action_id": action.id}
        )
    return f"scheduled: to {action.params.get('to_name')} at {when(at, services.settings.tz)}"


async def fire_scheduled(tx: AsyncSession, timer: Timer) -> None:
    """The timer's handler: queue the message in the timer's own transaction (fired and
    queued commit together)."""
    action = await tx.get(Action, int(timer.payload.get("action_id", 0)))
    if action is None:
        raise LookupError(f"timer {timer.key}: no action #{timer.payload.get('action_id')}")
    await _queue(tx, action.params, timer.key)


def register_message_kinds() -> None:
    register_executor(SEND, send_now, describe=describe_send)
    register_executor(SCHEDULE, send_later, describe=describe_schedule)
