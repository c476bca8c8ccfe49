"""Receipt reactions on Feishu: the `reaction` and `unreaction` outbox rows (issue #39).

A reaction is a sign of life, not an answer: it gets one delivery (a short retry at most)
and is then settled, failed if need be, quietly (logged and counted, no owner notice), so it
never holds the chat's replies back for long. Feishu gives a reaction no uuid, so exactly
once is ours: a `reaction` row claimed again (an earlier attempt may have landed) first lists
the message's reactions of that emoji and reuses the app's own; an `unreaction` takes the
reaction_id its `reaction` row stored (`platform_message_ids`), or lists when that row never
learnt one, and a reaction already gone counts as removed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from prometheus_client import Counter

from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable
from bot.channels.outbox_sender import Claimed
from sources.feishu.sdk import (
    BaseRequest,
    CreateMessageReactionRequest,
    CreateMessageReactionRequestBody,
    DeleteMessageReactionRequest,
    Emoji,
    ListMessageReactionRequest,
)
from sources.feishu.transport import JsonResponse
from storage.db import Database
from storage.repos import outbox

log = logging.getLogger(__name__)

REACTION_KINDS = frozenset({"reaction", "unreaction"})
ATTEMPTS, MAX_WAIT = 2, 1.0  # one delivery and at most one quick retry (rate limit, 5xx)
# The replies behind a reaction in its chat's lane wait this long at most (the API's own
# timeout is 15 s a call).
DEADLINE = 4.0
REACTION_GONE = frozenset({231007})  # removing a reaction that is not there (delete doc)
LISTED = 50  # the list API's largest page: the app's own reaction is among a message's few
RECEIPTS = Counter("maka_receipt_reactions_total", "Receipt reactions settled", ["kind", "outcome"])


@dataclass(frozen=True)
class Outcome:
    state: str  # outbox.SENT | outbox.FAILED
    error: str | None = None
    reaction_ids: tuple[str, ...] = ()


async def deliver_reaction(api: FeishuApi, db: Database, row: Claimed) -> Outcome:
    """Add or remove the row's reaction; never raises for what Feishu answers."""
    message_id = str(row.content.get("message_id") or "")
    emoji = str(row.content.get("emoji") or "")
    if not message_id or not emoji:
        outcome = Outcome(outbox.FAILED, "a reaction row needs message_id and emoji")
    else:
        reactions = _Reactions(api, message_id, emoji)
        try:
            async with asyncio.timeout(DEADLINE):
                if row.content_type == "reaction":
                    outcome = await _add(reactions, again=row.claims > 1)
                else:
                    outcome = await _remove(reactions, db, str(row.content.get("of") or ""))
        except (FeishuApiError, FeishuUnreachable) as exc:
            outcome = Outcome(outbox.FAILED, str(exc))
        except TimeoutError:
            outcome = Outcome(outbox.FAILED, f"Feishu did not answer within {DEADLINE:g}s")
    RECEIPTS.labels(row.content_type, outcome.state).inc()
    if outcome.error:
        log.warning("outbox %s: %s %s not done: %s", row.id, row.content_type, emoji, outcome.error)
    return outcome


async def _add(reactions: _Reactions, *, again: bool) -> Outcome:
    if again:  # an earlier delivery may have added it
        ours = await reactions.ours()
        if ours:
            return Outcome(outbox.SENT, None, (ours[0],))
    return Outcome(outbox.SENT, None, (await reactions.add(),))


async def _remove(reactions: _Reactions, db: Database, of: str) -> Outcome:
    async with db.read() as tx:
        added = await outbox.sent_ids(tx, of) if of else None
    ids = list(added) if added else await reactions.ours()
    for reaction_id in ids:
        await reactions.remove(reaction_id)
    return Outcome(outbox.SENT, None, tuple(ids))


@dataclass(frozen=True)
class _Reactions:
    """One message's reactions of one emoji, through the quota-counted API."""

    api: FeishuApi
    message_id: str
    emoji: str

    async def add(self) -> str:
        request = (
            CreateMessageReactionRequest.builder()
            .message_id(self.message_id)
            .request_body(
                CreateMessageReactionRequestBody.builder()
                .reaction_type(Emoji.builder().emoji_type(self.emoji).build())
                .build()
            )
            .build()
        )
        resp = await self._call("im.message.reaction.create", request)
        reaction_id = str(resp.data.get("reaction_id") or "")
        if not reaction_id:
            raise FeishuApiError("im.message.reaction.create", code=None, msg="no reaction_id")
        return reaction_id

    async def remove(self, reaction_id: str) -> None:
        request = (
            DeleteMessageReactionRequest.builder()
            .message_id(self.message_id)
            .reaction_id(reaction_id)
            .build()
        )
        try:
            await self._call("im.message.reaction.delete", request)
        except FeishuApiError as exc:
            if exc.code not in REACTION_GONE:  # gone already: removed, as asked
                raise

    async def ours(self) -> list[str]:
        """The app's own reactions of this emoji on the message (one page: a message has
        few reactions, and the app adds one of each)."""
        request = (
            ListMessageReactionRequest.builder()
            .message_id(self.message_id)
            .reaction_type(self.emoji)
            .page_size(LISTED)
            .build()
        )
        resp = await self._call("im.message.reaction.list", request)
        found: list[str] = []
        for item in resp.data.get("items") or []:
            operator = item.get("operator") if isinstance(item, dict) else None
            if (
                isinstance(operator, dict)
                and operator.get("operator_type") == "app"
                and operator.get("operator_id") == self.api.app_id
                and item.get("reaction_id")
            ):
                found.append(str(item["reaction_id"]))
        return found

    async def _call(self, name: str, request: BaseRequest) -> JsonResponse:
        api = self.api
        return await api.call(
            name, lambda opt: api.send(request, opt), attempts=ATTEMPTS, max_wait=MAX_WAIT
        )
