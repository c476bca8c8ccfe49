"""Delivering outbox rows to Feishu, each exactly once as the user sees it.

Every send carries Feishu's `uuid` (the row's idempotency key): Feishu creates at most one
message per uuid within an hour, so a resend after a crash or a lost answer is harmless. Past
that window a resend could double, so a row whose earlier attempt may have reached Feishu is
marked `uncertain` instead of being replayed. A row that cannot be delivered is marked `failed`
with the error, and a notice goes to the owner's inbox: nothing is dropped silently. Receipt
reactions (`reaction`, `unreaction`) are the exception: `receipt.py` delivers them once and
settles them quietly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict, deque
from datetime import timedelta

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channels.cards import CardUpdate
from bot.channels.feishu.action_cards import card_json
from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable
from bot.channels.feishu.content import render
from bot.channels.feishu.receipt import REACTION_KINDS, deliver_reaction
from bot.channels.ingest import INBOX_TOPIC
from bot.channels.outbox_sender import MAX_CLAIMS, Claimed, OutboxSender
from bot.host.notify import Notifier
from sources.feishu.sdk import (
    CreateMessageRequest,
    CreateMessageRequestBody,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from storage.db import Database, Together
from storage.repos import conversations, inbox, outbox
from storage.types import utcnow

log = logging.getLogger(__name__)

PLATFORM = "feishu"
UUID_WINDOW = timedelta(minutes=55)  # Feishu dedupes a uuid for 1 hour; keep a margin
# The message replied to was withdrawn or no longer exists: post in the chat instead.
REPLY_TARGET_GONE = frozenset({230011, 231003, 99992354})
SENT = Counter("maka_outbox_deliveries_total", "Outbox rows settled", ["platform", "state"])


class ChatRateLimiter:
    """At most `per_second` sends per chat from this process (Feishu allows 5 QPS per chat)."""

    def __init__(self, per_second: int = 5) -> None:
        self.per_second = per_second
        self._sent: dict[str, deque[float]] = defaultdict(deque)
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def wait_turn(self, chat_id: str) -> None:
        async with self._locks[chat_id]:
            window = self._sent[chat_id]
            while len(window) >= self.per_second:
                wait = 1.0 - (time.monotonic() - window[0])
                if wait > 0:
                    await asyncio.sleep(wait)
                window.popleft()
            window.append(time.monotonic())


class FeishuSender(OutboxSender):
    name = "feishu-sender"
    platform = PLATFORM
    # Deliveries in flight, each mostly waiting for Feishu: as many as the Bot's turns at
    # once (`concurrency=`), or the replies of 32 turns wait in the outbox for 16 deliveries
    # (with an instant model, outbox to Feishu p50 0.14-0.21 s against 0.02-0.03 s at 32).
    concurrency = 32

    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        api: FeishuApi,
        *,
        instance_id: str,
        owner_open_id: str | None,
        lease: timedelta | None = None,
        limiter: ChatRateLimiter | None = None,
        concurrency: int | None = None,
    ) -> None:
        super().__init__(db, instance_id, lease)
        if concurrency is not None:
            self.concurrency = concurrency
        self.notifier, self.api = notifier, api
        self.owner_open_id = owner_open_id
        self.limiter = limiter or ChatRateLimiter()

    async def deliver(self, row: Claimed) -> None:
        if row.content_type in REACTION_KINDS:  # one quick delivery, settled quietly
            outcome = await deliver_reaction(self.api, self.db, row)
            await self._settle(row, outcome.state, outcome.error, list(outcome.reaction_ids))
            return
        if row.content_type == "card_update":
            await self._deliver_update(row)
            return
        earlier_attempt = row.claims > 1
        if earlier_attempt and utcnow() - row.created_at > UUID_WINDOW:
            await self._settle(
                row,
                outbox.UNCERTAIN,
                "an earlier attempt may have been "
                "delivered and Feishu's uuid window has passed: not resent",
            )
            return
        try:
            parts = render(row.content_type, row.content)
        except ValueError as exc:
            await self._settle(row, outbox.FAILED, f"cannot render: {exc}")
            return
        message_ids: list[str] = []
        try:
            for index, (msg_type, content) in enumerate(parts):
                uuid = row.key if index == 0 else f"{row.key}-{index}"
                await self.limiter.wait_turn(row.chat_id)
                message_ids.append(await self._send_one(row, msg_type, content, uuid))
        except FeishuApiError as exc:
            if exc.retryable and row.claims < MAX_CLAIMS:
                await self._retry_later(row, str(exc))
            else:
                await self._settle(row, outbox.FAILED, str(exc))
            return
        except FeishuUnreachable as exc:
            if row.claims < MAX_CLAIMS:
                await self._retry_later(row, str(exc))
            else:  # it may have arrived: never replay blindly
                await self._settle(row, outbox.UNCERTAIN, str(exc))
            return
        await self._settle(row, outbox.SENT, None, message_ids)

    async def _deliver_update(self, row: Claimed) -> None:
        """A card redrawn in place (PATCH im/v1/messages/:message_id). The same patch twice
        leaves the same card, so a retry needs no uuid; a card Feishu no longer lets us update
        (recalled, older than 14 days) fails visibly like any undeliverable row."""
        try:
            update = CardUpdate.from_content(row.content)
            content = card_json(update.card)
        except ValueError as exc:  # InvalidCard too
            await self._settle(row, outbox.FAILED, f"cannot render: {exc}")
            return
        request = (
            PatchMessageRequest.builder()
            .message_id(update.message_id)
            .request_body(PatchMessageRequestBody.builder().content(content).build())
            .build()
        )
        try:
            await self.api.call("im.message.patch", lambda opt: self.api.send(request, opt))
        except (FeishuApiError, FeishuUnreachable) as exc:
            retryable = isinstance(exc, FeishuUnreachable) or exc.retryable
            if retryable and row.claims < MAX_CLAIMS:
                await self._retry_later(row, str(exc))
            else:
                await self._settle(row, outbox.FAILED, str(exc))
            return
        await self._settle(row, outbox.SENT, None, [update.message_id])

    async def _send_one(self, row: Claimed, msg_type: str, content: str, uuid: str) -> str:
        if row.reply_to:
            try:
                return await self._reply(row.reply_to, msg_type, content, uuid, row.in_thread)
            except FeishuApiError as exc:
                if exc.code not in REPLY_TARGET_GONE:
                    raise
                log.info("reply target %s is gone; posting in the chat instead", row.reply_to)
        return await self._create(row.chat_id, msg_type, content, uuid)

    async def _create(self, chat_id: str, msg_type: str, content: str, uuid: str) -> str:
        request = (
            CreateMessageRequest.builder()
            # An action may address a person by open_id (bot/actions/messages.py); Feishu
            # then delivers to their DM with the bot.
            .receive_id_type("open_id" if chat_id.startswith("ou_") else "chat_id")
            .request_body(
                CreateMessageRequestBody.builder()
                .receive_id(chat_id)
                .msg_type(msg_type)
                .content(content)
                .uuid(uuid)
                .build()
            )
            .build()
        )
        resp = await self.api.call("im.message.create", lambda opt: self.api.send(request, opt))
        dm_chat = str(resp.data.get("chat_id") or "")
        if chat_id.startswith("ou_") and dm_chat:
            await self._remember_dm(chat_id, dm_chat)
        return str(resp.data.get("message_id") or "")

    async def _remember_dm(self, open_id: str, chat_id: str) -> None:
        """The DM a message to a person went to, known from now on: a click on a card sent
        there (an approval card to an owner who never wrote to the bot) is then a click in a
        chat we wrote to (Ingest.chat_type_of). The answer's `chat_id`:
        https://open.feishu.cn/document/server-docs/im-v1/message/create"""
        async with self.db.write() as tx:
            await conversations.get_or_create(
                tx, platform=PLATFORM, chat_id=chat_id, chat_type="p2p", peer_open_id=open_id
            )

    async def _reply(
        self, message_id: str, msg_type: str, content: str, uuid: str, in_thread: bool
    ) -> str:
        request = (
            ReplyMessageRequest.builder()
            .message_id(message_id)
            .request_body(
                ReplyMessageRequestBody.builder()
                .msg_type(msg_type)
                .content(content)
                .uuid(uuid)
                .reply_in_thread(in_thread)
                .build()
            )
            .build()
        )
        resp = await self.api.call("im.message.reply", lambda opt: self.api.send(request, opt))
        return str(resp.data.get("message_id") or "")

    async def _give_up(self, row: Claimed, error: str) -> None:
        await self._settle(row, outbox.UNCERTAIN, error)  # the owner is told

    async def _settle(
        self, row: Claimed, state: str, error: str | None, message_ids: list[str] | None = None
    ) -> None:
        SENT.labels(PLATFORM, state).inc()

        # Grouped: the deliveries in flight end together, settled in one statement or two,
        # and each settling alone was a transaction of its own.
        settling = outbox.Settling(row.id, self.instance_id, state, error, message_ids)
        held, notice = await self.db.grouped(Together(_settle_each, (self, row, settling)))
        if not held:
            log.warning("outbox %s: claim lost before settling as %s", row.id, state)
            return
        if state != outbox.SENT and row.content_type not in REACTION_KINDS:
            log.error("outbox %s to chat %s is %s: %s", row.id, row.chat_id, state, error)
        if notice:
            await self.notifier.notify(INBOX_TOPIC)

    async def _notify_owner(self, tx: AsyncSession, row: Claimed, state: str, error: str) -> bool:
        if not self.owner_open_id:
            return False
        owner_dm = await conversations.find_dm(tx, PLATFORM, self.owner_open_id)
        if owner_dm is None or owner_dm.id == row.conversation_id:
            return False  # a notice about the owner's own chat could not reach them either
        text = (
            f"A reply to chat {row.chat_id} was not delivered ({state}): {error}"
            if state == outbox.FAILED
            else f"A reply to chat {row.chat_id} may or may not have arrived ({state}): {error}"
        )
        await inbox.append(
            tx,
            kind="system",
            conversation_id=owner_dm.id,
            payload={"text": text, "outbox_id": row.id, "state": state},
            dedupe_key=f"outbox-{state}:{row.id}",
            created_at=utcnow(),
        )
        return True


async def _settle_each(
    tx: AsyncSession, settling: list[tuple[FeishuSender, Claimed, outbox.Settling]]
) -> list[tuple[bool, bool]]:
    """The settlings of a group (its senders' deliveries that ended): (claim still held,
    the owner told of a delivery that failed)."""
    held = await outbox.finish_each(tx, [outcome for _, _, outcome in settling], utcnow())
    results: list[tuple[bool, bool]] = []
    for (sender, row, outcome), ok in zip(settling, held, strict=True):
        # A receipt reaction that failed is no delivery the owner needs to hear of.
        if not ok or outcome.state == outbox.SENT or row.content_type in REACTION_KINDS:
            results.append((ok, False))
        else:
            told = await sender._notify_owner(tx, row, outcome.state, outcome.error or "")
            results.append((ok, told))
    return results
